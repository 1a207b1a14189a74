// Reported: `grex rm` deleted unpushed commits and stashes (also a child's, via
// its parent). rm now refuses (exit 4) naming what exists only here, for each
// kind, for a top-level pack and for a child; --force removes and says so.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { localWork } from "../../src/core/git/local-work.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-rmwork-");
  expect((await t.grex("init")).code).toBe(0);
});
afterEach(() => t.cleanup());

async function addTools(): Promise<string> {
  const up = t.repo("tools", { "README.md": "tools\n", ".gitignore": "*.log\n" });
  expect((await t.grex("add", up)).code).toBe(0);
  return join(t.ws, "tools");
}

const registered = async () => ((await t.grex("ls", "--json")).json.packs as Array<{ id: string }>).map((p) => p.id);

const firstTracked = (dir: string) => git(dir, "ls-files").split("\n")[0] as string;

/** Each kind of local-only work, made in a clean clone, and the words the refusal must contain. */
const KINDS: Array<{ kind: string; make(dir: string): void; says: string }> = [
  { kind: "a modified tracked file", make: (d) => writeFileSync(join(d, "README.md"), "edited\n"), says: "README.md" },
  { kind: "an untracked file", make: (d) => writeFileSync(join(d, "notes.txt"), "mine\n"), says: "notes.txt" },
  { kind: "a staged new file", make: (d) => (writeFileSync(join(d, "staged.txt"), "s\n"), git(d, "add", "staged.txt")), says: "staged.txt" },
  {
    kind: "an unpushed commit",
    make: (d) => (writeFileSync(join(d, "c.txt"), "c\n"), git(d, "add", "c.txt"), git(d, "commit", "-q", "-m", "local")),
    says: "on no remote-tracking branch",
  },
  {
    kind: "a stash",
    make: (d) => (writeFileSync(join(d, firstTracked(d)), "wip\n"), git(d, "stash", "-q")),
    says: "1 stash",
  },
  { kind: "a local branch without upstream", make: (d) => git(d, "branch", "experiment"), says: "without an upstream: experiment" },
  {
    kind: "a commit on a detached HEAD",
    make: (d) => (git(d, "checkout", "-q", "--detach"), writeFileSync(join(d, "d.txt"), "d\n"), git(d, "add", "d.txt"), git(d, "commit", "-q", "-m", "detached")),
    says: "detached HEAD",
  },
];

describe("localWork() names each kind", () => {
  test("a fresh clone has none; ignored files do not count", async () => {
    const dir = await addTools();
    writeFileSync(join(dir, "debug.log"), "ignored\n");
    expect(await localWork(dir)).toEqual([]);
  });
  test("a pack pinned to a tag or a sha (detached HEAD) has none; a repository with no remote has everything", async () => {
    const up = t.repo("pinned", { "README.md": "p\n" });
    git(up, "tag", "-a", "v1", "-m", "v1");
    const first = git(up, "rev-parse", "HEAD");
    t.commit(up, { "later.txt": "l\n" });
    expect((await t.grex("add", "--ref", "v1", up)).code).toBe(0);
    expect((await t.grex("add", "--ref", first, up, "by-sha")).code).toBe(0);
    expect(await localWork(join(t.ws, "pinned"))).toEqual([]);
    expect(await localWork(join(t.ws, "by-sha"))).toEqual([]);
    const lone = t.repo("lone", { "x.txt": "x\n" });
    const lost = (await localWork(lone)).join("\n");
    expect(lost).toContain("commits on branch 'main'");
    expect(lost).toContain("without an upstream: main");
  });

  test("an index git wrote in version 4: changes are still found, never an error", async () => {
    const dir = await addTools();
    git(dir, "update-index", "--index-version", "4");
    expect(await localWork(dir)).toEqual([]);
    writeFileSync(join(dir, "notes.txt"), "mine\n");
    expect((await localWork(dir)).join("\n")).toContain("uncommitted or untracked files");
  });

  test("a commit only an annotated tag holds is not lost", async () => {
    const dir = await addTools();
    writeFileSync(join(dir, "c.txt"), "c\n");
    git(dir, "add", "c.txt");
    git(dir, "commit", "-q", "-m", "tagged");
    git(dir, "tag", "-a", "kept", "-m", "kept");
    git(dir, "checkout", "-q", "--detach", "HEAD");
    git(dir, "branch", "-q", "-f", "main", "origin/main");
    expect((await localWork(dir)).join("\n")).not.toContain("detached HEAD");
  });

  for (const k of KINDS) {
    test(k.kind, async () => {
      const dir = await addTools();
      k.make(dir);
      const lost = await localWork(dir);
      expect(lost.join("\n")).toContain(k.says);
    });
  }
});

describe("rm refuses a top-level pack with local-only work; --force removes", () => {
  for (const k of KINDS) {
    test(k.kind, async () => {
      const dir = await addTools();
      k.make(dir);
      const r = await t.grex("rm", "tools");
      expect(r.code).toBe(4);
      expect(r.stderr).toContain("Refusing to delete work that exists only here");
      expect(r.stderr).toContain(k.says);
      expect(existsSync(dir)).toBe(true);
      expect(await registered()).toEqual(["tools"]);

      const dry = await t.grex("rm", "tools", "--dry-run");
      expect(dry.code).toBe(4);

      const f = await t.grex("rm", "tools", "--force", "--json");
      expect(f.code).toBe(0);
      expect(f.stderr).toContain("--force: deleting work that exists only here");
      expect((f.json.discarded as string[]).join("\n")).toContain(k.says);
      expect(existsSync(dir)).toBe(false);
      expect(await registered()).toEqual([]);
    });
  }

  test("--keep-files unregisters without the check and keeps the work", async () => {
    const dir = await addTools();
    KINDS[3]?.make(dir);
    const r = await t.grex("rm", "tools", "--keep-files");
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, "c.txt"))).toBe(true);
  });

  test("a clean pack is removed without --force", async () => {
    const dir = await addTools();
    const r = await t.grex("rm", "tools", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ removed: true, files_deleted: true, discarded: [] });
    expect(existsSync(dir)).toBe(false);
  });
});

describe("rm of a meta pack checks each child", () => {
  async function addFamily(): Promise<string> {
    t.repo("child-a");
    t.repo("child-b");
    const up = t.repo("meta-basic");
    expect((await t.grex("add", up)).code).toBe(0);
    return join(t.ws, "meta-basic");
  }
  for (const k of [KINDS[3], KINDS[4], KINDS[1]]) {
    if (!k) continue;
    test(`${k.kind} in a child`, async () => {
      const parent = await addFamily();
      const child = join(parent, "second");
      k.make(child);
      const r = await t.grex("rm", "meta-basic");
      expect(r.code).toBe(4);
      expect(r.stderr).toContain("'meta-basic/second'");
      expect(r.stderr).toContain(k.says);
      expect(existsSync(child)).toBe(true);
      const f = await t.grex("rm", "meta-basic", "--force", "--json");
      expect(f.code).toBe(0);
      expect(f.json.children).toEqual(["meta-basic/child-a", "meta-basic/second"]);
      expect(existsSync(parent)).toBe(false);
    });
  }
});

describe("over MCP the same guard holds", () => {
  test("rm of a pack with an unpushed commit is an isError result; force: true removes", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { SessionTransport, serverOptions } = await import("../helpers/mcp.ts");
    const dir = await addTools();
    KINDS[3]?.make(dir);
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
    try {
      type R = { isError?: boolean; structuredContent?: Record<string, unknown> };
      const refused = (await client.callTool({ name: "rm", arguments: { id: "tools" } })) as R;
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ verb: "rm", error: { kind: "pack_op" } });
      expect(JSON.stringify(refused.structuredContent)).toContain("on no remote-tracking branch");
      expect(existsSync(dir)).toBe(true);
      const forced = (await client.callTool({ name: "rm", arguments: { id: "tools", force: true } })) as R;
      expect(forced.isError).toBe(false);
      expect(existsSync(dir)).toBe(false);
    } finally {
      await client.close();
    }
  });
});
