// Reported: a failed `grex add` left its clone behind (a retry said "already
// exists") or even left the pack registered (a child cycle then broke every
// later sync). add is all or nothing now: for each failure stage the manifest,
// lockfile, .gitignore, the workspace and HOME are as before, and the same add
// succeeds once the cause is fixed upstream.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { git, snapshot, TestWorkspace, userSnapshot } from "../helpers/workspace.ts";

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-addatomic-");
  expect((await t.grex("init")).code).toBe(0);
  // Something already installed, so "as before" is not just "empty".
  expect((await t.grex("add", t.repo("declarative-basic"))).code).toBe(0);
});
afterEach(() => t.cleanup());

const read = (rel: string) => (existsSync(join(t.ws, rel)) ? readFileSync(join(t.ws, rel), "utf8") : null);
const state = () => ({
  manifest: read("grex.jsonl"),
  lock: read("grex.lock.jsonl"),
  gitignore: read(".gitignore"),
  ws: userSnapshot(t.ws),
  home: snapshot(t.home),
});

const yaml = (lines: string[]) => `${['schema_version: "1"', ...lines].join("\n")}\n`;

/** A pack repo whose pack.yaml is `bad`; fix() commits `good` upstream. */
function brokenPack(name: string, bad: string, good: string, files: Record<string, string> = {}) {
  const dir = t.repo(name, { ...files, ".grex/pack.yaml": bad });
  return { url: dir, fix: () => t.commit(dir, { ".grex/pack.yaml": good }, "fix") };
}

async function expectNothingAdded(url: string, code: number, says: string, path?: string) {
  const before = state();
  const r = await t.grex("add", url, ...(path ? [path] : []));
  expect(r.stderr).toContain(says);
  expect(r.stderr).toContain("nothing was added");
  expect(r.code).toBe(code);
  expect(state()).toEqual(before);
}

async function expectAdded(url: string, id: string) {
  const r = await t.grex("add", url, "--json");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const ls = await t.grex("ls", "--json");
  expect((ls.json.packs as Array<{ id: string }>).map((p) => p.id)).toContain(id);
  expect(read(".gitignore")).toContain(id);
  expect(read("grex.lock.jsonl")).toContain(`"${id}"`);
}

describe("a failed add leaves nothing behind; the retry after the fix works", () => {
  test("clone fails (no such repository)", async () => {
    const url = join(t.upstream, "later");
    const before = state();
    const r = await t.grex("add", url);
    expect(r.code).not.toBe(0);
    expect(state()).toEqual(before);
    t.repo("later", { "README.md": "now it exists\n" });
    await expectAdded(url, "later");
  });

  test("pack.yaml fails its schema (exit 3)", async () => {
    const p = brokenPack("schema", yaml(["name: schema", "type: declarative", "bogus_key: 1"]), yaml(["name: schema", "type: declarative"]));
    await expectNothingAdded(p.url, 3, "bogus_key");
    p.fix();
    await expectAdded(p.url, "schema");
  });

  test("plan phase: an action misses a required field", async () => {
    const p = brokenPack(
      "plan",
      yaml(["name: plan", "type: declarative", "actions:", "  - symlink: { src: f.txt }"]),
      yaml(["name: plan", "type: declarative", "actions:", "  - symlink: { src: f.txt, dst: $HOME/plan.txt }"]),
      { "f.txt": "f\n" },
    );
    await expectNothingAdded(p.url, 3, "dst");
    p.fix();
    await expectAdded(p.url, "plan");
    expect(existsSync(join(t.home, "plan.txt"))).toBe(true);
  });

  test("children form a cycle (the pack lists itself)", async () => {
    const p = brokenPack("loop", yaml(["name: loop", "type: meta", "children:", "  - url: ../loop", "    path: again"]), yaml(["name: loop", "type: meta"]));
    await expectNothingAdded(p.url, 3, "cycle");
    p.fix();
    await expectAdded(p.url, "loop");
    expect((await t.grex("sync")).code).toBe(0);
  });

  test("depends_on names a pack that is not in the workspace", async () => {
    const p = brokenPack("needy", yaml(["name: needy", "type: declarative", "depends_on: [nosuch]"]), yaml(["name: needy", "type: declarative", "depends_on: [declarative-basic]"]));
    await expectNothingAdded(p.url, 4, "nosuch");
    p.fix();
    await expectAdded(p.url, "needy");
  });

  test("--no-install: the pack's own plan checks still run before registering", async () => {
    const p = brokenPack("needy2", yaml(["name: needy2", "type: declarative", "depends_on: [nosuch]"]), yaml(["name: needy2", "type: declarative"]));
    const before = state();
    const r = await t.grex("add", "--no-install", p.url);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("nosuch");
    expect(state()).toEqual(before);
    p.fix();
    expect((await t.grex("add", "--no-install", p.url)).code).toBe(0);
  });

  test("depends_on forms a cycle between two children", async () => {
    t.repo("cyc-a", { ".grex/pack.yaml": yaml(["name: cyc-a", "type: declarative", "depends_on: [cyc-b]"]) });
    const b = t.repo("cyc-b", { ".grex/pack.yaml": yaml(["name: cyc-b", "type: declarative", "depends_on: [cyc-a]"]) });
    const p = brokenPack("cyc", yaml(["name: cyc", "type: meta", "children:", "  - url: ../cyc-a", "  - url: ../cyc-b"]), "");
    await expectNothingAdded(p.url, 3, "cycle");
    t.commit(b, { ".grex/pack.yaml": yaml(["name: cyc-b", "type: declarative"]) }, "fix");
    await expectAdded(p.url, "cyc");
  });

  test("install fails: a child's action fails after its sibling installed; HOME is restored", async () => {
    t.repo("child-a");
    const bad = t.repo("bad-child", { ".grex/pack.yaml": yaml(["name: bad-child", "type: declarative", "actions:", "  - mkdir: { path: $HOME/.bad-child }", "  - exec: { cmd: [sh, -c, 'exit 7'] }"]) });
    const p = brokenPack("family", yaml(["name: family", "type: meta", "children:", "  - url: ../child-a", "  - url: ../bad-child"]), "");
    await expectNothingAdded(p.url, 4, "bad-child");
    expect(existsSync(join(t.home, ".child-a"))).toBe(false);
    t.commit(bad, { ".grex/pack.yaml": yaml(["name: bad-child", "type: declarative", "actions:", "  - mkdir: { path: $HOME/.bad-child }"]) }, "fix");
    await expectAdded(p.url, "family");
    expect(existsSync(join(t.home, ".child-a", "a.txt"))).toBe(true);
    expect(existsSync(join(t.home, ".bad-child"))).toBe(true);
  });
});

describe("an interrupted add's clone is taken over", () => {
  test("a clean clone of the same URL at the path is adopted instead of 'already exists'", async () => {
    const url = t.repo("child-b");
    git(t.ws, "clone", "-q", url, "child-b");
    const r = await t.grex("add", url, "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ id: "child-b", adopted: true, installed: true });
    expect(existsSync(join(t.home, ".child-b"))).toBe(true);
  });

  test("a clone with local work, or of another URL, is refused and left alone", async () => {
    const url = t.repo("child-b");
    git(t.ws, "clone", "-q", t.repo("child-a"), "child-b");
    const other = await t.grex("add", url);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("already exists");
    rmSync(join(t.ws, "child-b"), { recursive: true });
    git(t.ws, "clone", "-q", url, "child-b");
    t.commit(join(t.ws, "child-b"), { "mine.txt": "local\n" }, "local work");
    const dirty = await t.grex("add", url);
    expect(dirty.code).toBe(2);
    expect(existsSync(join(t.ws, "child-b", "mine.txt"))).toBe(true);
  });
});

describe("add --dry-run validates in a temporary clone", () => {
  test("an invalid pack.yaml fails the dry run; a valid one lists children and planned steps; nothing changes", async () => {
    const p = brokenPack("schema", yaml(["name: schema", "type: declarative", "bogus_key: 1"]), yaml(["name: schema", "type: declarative"]));
    const before = state();
    const bad = await t.grex("add", p.url, "--dry-run");
    expect(bad.code).toBe(3);
    expect(state()).toEqual(before);

    t.repo("child-a");
    t.repo("child-b");
    const meta = t.repo("meta-basic");
    const dry = await t.grex("add", meta, "--dry-run", "--json");
    expect(dry.code).toBe(0);
    expect(dry.json).toMatchObject({ id: "meta-basic", dry_run: true, children: ["meta-basic/child-a", "meta-basic/second"] });
    const steps = dry.json.steps as Array<{ pack: string; action: string; result: string; details: Record<string, unknown> }>;
    const link = steps.find((s) => s.pack === "meta-basic/child-a" && s.action === "symlink");
    expect(link?.result).toBe("would_perform_change");
    expect(String(link?.details.src)).toBe(join(t.ws, "meta-basic", "child-a", "files", "a.txt"));
    expect(state()).toEqual(before);
  });
});

describe("over MCP the same all-or-nothing add", () => {
  test("an install failure is an isError result and leaves everything as before; the retry after the fix works", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { SessionTransport, serverOptions } = await import("../helpers/mcp.ts");
    const p = brokenPack(
      "mcp-bad",
      yaml(["name: mcp-bad", "type: declarative", "actions:", "  - mkdir: { path: $HOME/.mcp-bad }", "  - exec: { cmd: [sh, -c, 'exit 5'] }"]),
      yaml(["name: mcp-bad", "type: declarative", "actions:", "  - mkdir: { path: $HOME/.mcp-bad }"]),
    );
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
    try {
      const before = state();
      const r = (await client.callTool({ name: "add", arguments: { url: p.url } })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r.structuredContent)).toContain("nothing was added");
      expect(state()).toEqual(before);
      p.fix();
      const ok = (await client.callTool({ name: "add", arguments: { url: p.url } })) as { isError?: boolean };
      expect(ok.isError).toBe(false);
      expect(existsSync(join(t.home, ".mcp-bad"))).toBe(true);
    } finally {
      await client.close();
    }
  });
});
