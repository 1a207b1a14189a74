// Task workspaces (`grex init --from <source> --branch <topic>`): every pack of
// the source (children included) a linked worktree of the source's clone;
// setup that writes into HOME skipped unless asked for; status, sync and rm in
// the task workspace; status, rm and doctor in the source; bad input.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, snapshot, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let tool: string;

const TOOL_PACK = `schema_version: "1"
name: tool
type: declarative
actions:
  - mkdir: { path: $HOME/.config/tool }
  - exec: { cmd: [sh, -c, "echo built > built.txt"] }
  - env: { name: TOOL_HOME, value: "1", scope: user }
`;

beforeAll(async () => {
  t = new TestWorkspace("grex-task-");
  t.repo("child-a");
  t.repo("child-b");
  const meta = t.repo("meta-basic");
  tool = t.repo("tool", { ".grex/pack.yaml": TOOL_PACK, ".gitignore": "built.txt\n", "README.md": "tool\n" });
  expect((await t.grex("init")).code).toBe(0);
  expect((await t.grex("add", meta)).code).toBe(0);
  expect((await t.grex("add", tool, "libs/tool")).code).toBe(0);
});
afterAll(() => t.cleanup());

const task = (name: string) => {
  const dir = join(t.root, "tasks", name);
  mkdirSync(dir, { recursive: true });
  return dir;
};
const PACKS = ["meta-basic", "meta-basic/child-a", "meta-basic/second", "libs/tool"];

describe("grex init --from", () => {
  let one: string;
  let result: Record<string, unknown>;

  test("makes every pack, children included, a linked worktree on the topic; HOME setup is skipped and listed", async () => {
    one = task("one");
    const home = snapshot(t.home);
    const r = await t.grexAt(one, ["init", "--from", t.ws, "--branch", "topic", "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    result = r.json;
    expect(result.source).toBe(t.ws);
    expect((result.packs as Array<{ id: string; branch: string; created_branch: boolean }>).map((p) => [p.id, p.branch, p.created_branch])).toEqual(PACKS.map((id) => [id, "topic", true]));
    // HOME is every workspace's: the task's setup left it as it was, and says what it skipped.
    expect(snapshot(t.home)).toEqual(home);
    const skipped = result.setup_skipped as Array<{ pack: string; action: string }>;
    expect(skipped.map((s) => `${s.pack} ${s.action}`).sort()).toEqual(
      ["libs/tool env", "libs/tool mkdir", "meta-basic/child-a mkdir", "meta-basic/child-a symlink", "meta-basic/second mkdir", "meta-basic/second symlink"].sort(),
    );
    // What stays inside the task workspace ran.
    expect(readFileSync(join(one, "libs/tool/built.txt"), "utf8")).toBe("built\n");
    for (const id of PACKS) {
      const src = join(t.ws, id);
      const wt = join(one, id);
      expect(readFileSync(join(wt, ".git"), "utf8")).toStartWith(`gitdir: ${join(src, ".git", "worktrees")}/`);
      expect(git(wt, "rev-parse", "--abbrev-ref", "HEAD")).toBe("topic");
      expect(git(wt, "status", "--porcelain")).toBe("");
      expect(git(src, "status", "--porcelain")).toBe("");
      expect(git(src, "worktree", "list", "--porcelain")).toContain(`worktree ${wt}\nHEAD ${git(src, "rev-parse", "HEAD")}\nbranch refs/heads/topic`);
      git(src, "fsck");
    }
    // Its own grex.jsonl names the source on each line.
    const lines = readFileSync(join(one, "grex.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.op, l.id, l.from])).toEqual([
      ["add", "meta-basic", t.ws],
      ["add", "libs/tool", t.ws],
    ]);
  });

  test("the task workspace is a workspace: status, and sync fetches into the shared repository without moving the source", async () => {
    const st = await t.grexAt(one, ["status", "--json"]);
    expect(st.code).toBe(0);
    const rows = st.json.packs as Array<{ id: string; branch: string; drift: string }>;
    expect(rows.map((r) => [r.id, r.branch, r.drift])).toEqual(PACKS.map((id) => [id, "topic", "topic"]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
    const before = git(join(t.ws, "libs/tool"), "rev-parse", "HEAD");
    const upstream = t.commit(tool, { "NEW.md": "new\n" }, "upstream moved");
    const sync = await t.grexAt(one, ["sync", "--json"]);
    expect(sync.code).toBe(0);
    const src = join(t.ws, "libs/tool");
    expect(git(src, "rev-parse", "refs/remotes/origin/main")).toBe(upstream);
    expect(git(src, "rev-parse", "HEAD")).toBe(before);
    expect(git(src, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
    expect(git(join(one, "libs/tool"), "rev-parse", "--abbrev-ref", "HEAD")).toBe("topic");
    expect(git(src, "status", "--porcelain")).toBe("");
  });

  test("a commit in the task workspace is on the topic in the source at once; the source's status lists the worktrees", async () => {
    const sha = t.commit(join(one, "libs/tool"), { "WORK.md": "work\n" }, "task work");
    expect(git(join(t.ws, "libs/tool"), "rev-parse", "refs/heads/topic")).toBe(sha);
    const plain = await t.grexAt(t.ws, ["status"]);
    expect(plain.stdout).not.toContain("worktree");
    const long = await t.grexAt(t.ws, ["status", "--long"]);
    expect(long.stdout).toContain(`libs/tool: worktree ${join(one, "libs/tool")} on topic`);
    writeFileSync(join(one, "libs/tool", "scratch.txt"), "x\n");
    const st = await t.grexAt(t.ws, ["status", "--json"]);
    const row = (st.json.packs as Array<{ id: string; worktrees?: unknown[] }>).find((r) => r.id === "libs/tool");
    expect(row?.worktrees).toEqual([{ path: join(one, "libs/tool"), branch: "topic", dirty: true, prunable: null }]);
    rmSync(join(one, "libs/tool", "scratch.txt"));
  });

  test("--setup-home runs the setup that writes into HOME too", async () => {
    const home = join(t.root, "other-home");
    mkdirSync(home);
    const r = await t.grexAt(task("home"), ["init", "--from", t.ws, "--branch", "with-home", "--filter", "libs/tool", "--setup-home", "--json"], { ...t.env, HOME: home });
    expect(r.code).toBe(0);
    expect(r.json.setup_skipped).toEqual([]);
    expect(existsSync(join(home, ".config", "tool"))).toBe(true);
    expect((r.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["libs/tool"]);
  });
});

describe("bad input: one sentence, exit 2, nothing made", () => {
  const cases: Array<[string, (dir: string) => string[], RegExp]> = [
    ["a missing source", () => ["--from", join(t.root, "nowhere"), "--branch", "x"], /^grex: --from names .*nowhere, which does not exist; pass the directory/],
    ["a source that is not a workspace", () => ["--from", t.upstream, "--branch", "x"], /is not a grex workspace \(no grex\.jsonl\)/],
    ["a branch name git refuses", () => ["--from", t.ws, "--branch", "bad..name"], /^grex: 'bad\.\.name' is not a valid branch name \(it holds '\.\.'\)/],
    ["a branch checked out in another worktree", () => ["--from", t.ws, "--branch", "topic"], /branch 'topic' of pack 'meta-basic' is already checked out at '.*tasks\/one\/meta-basic'/],
    ["the source's own branch", () => ["--from", t.ws, "--branch", "main"], /branch 'main' of pack 'meta-basic' is already checked out at '.*\/ws\/meta-basic'/],
    ["--branch without --from", () => ["--branch", "x"], /--branch is for task workspaces and needs --from/],
    ["--from without --branch", () => ["--from", t.ws], /--from needs --branch <topic>/],
    ["a task workspace inside its source", () => ["--from", "..", "--branch", "inside"], /would lie inside its source/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const dir = name.includes("inside") ? join(t.ws, "inner") : task(`bad-${name.replaceAll(" ", "-")}`);
      mkdirSync(dir, { recursive: true });
      const r = await t.grexAt(dir, ["init", ...args(dir)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(readdirSync(dir)).toEqual([]);
      rmSync(dir, { recursive: true });
    });
  }
});

describe("what init --from would do, and a source pack not on disk", () => {
  test("--dry-run lists the packs and makes nothing", async () => {
    const dir = task("dry");
    const r = await t.grexAt(dir, ["init", "--from", t.ws, "--branch", "dry-topic", "--filter", "meta-basic", "--dry-run", "--json"]);
    expect(r.code).toBe(0);
    expect((r.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["meta-basic", "meta-basic/child-a", "meta-basic/second"]);
    expect(readdirSync(dir)).toEqual([]);
    expect(() => git(join(t.ws, "meta-basic"), "rev-parse", "--verify", "refs/heads/dry-topic")).toThrow();
  });

  test("a pack the source has not cloned: one sentence, exit 2, nothing made", async () => {
    const other = join(t.root, "uncloned-source");
    mkdirSync(other);
    writeFileSync(join(other, "grex.jsonl"), readFileSync(join(t.ws, "grex.jsonl")));
    expect((await t.grexAt(other, ["init", "--no-clone"])).code).toBe(0);
    const dir = task("uncloned");
    const r = await t.grexAt(dir, ["init", "--from", other, "--branch", "x"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^grex: pack '.*' is not on disk in the source workspace \(.*\), so it has no repository to share; run grex sync there first, or leave it out with --filter\.\n$/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("removal never loses work", () => {
  test("rm in the task workspace refuses changes, then removes the worktree; the commits stay on the topic", async () => {
    const dir = task("two");
    expect((await t.grexAt(dir, ["init", "--from", t.ws, "--branch", "second-topic", "--filter", "libs/tool"])).code).toBe(0);
    const sha = t.commit(join(dir, "libs/tool"), { "TWO.md": "two\n" }, "second task");
    writeFileSync(join(dir, "libs/tool/README.md"), "edited\n");
    const refused = await t.grexAt(dir, ["rm", "libs/tool"]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("Refusing to delete uncommitted or untracked changes in the worktree of 'libs/tool'");
    expect(readFileSync(join(dir, "libs/tool/README.md"), "utf8")).toBe("edited\n");
    git(join(dir, "libs/tool"), "checkout", "--", "README.md");
    const rm = await t.grexAt(dir, ["rm", "libs/tool"]);
    expect(rm.stderr).toBe("");
    expect(rm.code).toBe(0);
    const src = join(t.ws, "libs/tool");
    expect(existsSync(join(dir, "libs/tool"))).toBe(false);
    expect(git(src, "rev-parse", "refs/heads/second-topic")).toBe(sha);
    expect(git(src, "worktree", "list", "--porcelain")).not.toContain(join(dir, "libs/tool"));
    git(src, "fsck");
  });

  test("the source refuses to rm a pack that still has worktrees, naming them", async () => {
    const r = await t.grexAt(t.ws, ["rm", "libs/tool"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`Refusing to delete 'libs/tool': its repository still has worktrees in other workspaces (${join(t.root, "tasks", "one", "libs/tool")} (topic)`);
    expect(existsSync(join(t.ws, "libs/tool"))).toBe(true);
  });

  test("a deleted task directory: doctor reports the stale registrations, doctor --fix prunes them, the branches stay", async () => {
    const dir = task("gone");
    expect((await t.grexAt(dir, ["init", "--from", t.ws, "--branch", "gone-topic"])).code).toBe(0);
    rmSync(dir, { recursive: true });
    const doctor = await t.grexAt(t.ws, ["doctor", "--json"]);
    const stale = (doctor.json.findings as Array<{ check: string; pack: string; severity: string }>).filter((f) => f.check === "worktrees" && f.severity === "warning");
    expect(stale.map((f) => f.pack).sort()).toEqual([...PACKS].sort());
    const fixed = await t.grexAt(t.ws, ["doctor", "--fix", "--json"]);
    expect(fixed.json.fixed).toContain("worktrees");
    for (const id of PACKS) {
      const src = join(t.ws, id);
      expect(git(src, "worktree", "list", "--porcelain")).not.toContain(dir);
      expect(git(src, "rev-parse", "--verify", "refs/heads/gone-topic")).toMatch(/^[0-9a-f]{40}$/);
      git(src, "fsck");
    }
    const again = await t.grexAt(t.ws, ["doctor", "--json"]);
    expect((again.json.findings as Array<{ check: string; severity: string }>).filter((f) => f.check === "worktrees" && f.severity !== "ok")).toEqual([]);
  });
});

describe("a full workspace, sharing its repositories safely", () => {
  test("exec, run and the MCP server work in a task workspace", async () => {
    const dir = join(t.root, "tasks", "one");
    const ex = await t.grexAt(dir, ["exec", "--json", "--", "git", "rev-parse", "--abbrev-ref", "HEAD"]);
    expect(ex.code).toBe(0);
    expect(JSON.stringify(ex.json)).toContain("topic");
    const run = await t.grexAt(dir, ["run", "exec", "--filter", "libs/tool", "--json"]);
    expect(run.code).toBe(0);
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { SessionTransport, serverOptions } = await import("../helpers/mcp.ts");
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(new SessionTransport(serverOptions(dir, t.env)));
    const st = (await client.callTool({ name: "status", arguments: {} })) as { isError?: boolean; structuredContent?: { packs: Array<{ id: string; branch: string }> } };
    await client.close();
    expect(st.isError ?? false).toBe(false);
    expect(st.structuredContent?.packs.map((p) => p.branch)).toEqual(PACKS.map(() => "topic"));
  });

  test("a fetch waits for the shared repository lock, which the source and its task workspaces find in the same file", async () => {
    const { sharedLockOf } = await import("../../src/core/sync/repo-lock.ts");
    const dir = join(t.root, "tasks", "one");
    const src = join(t.ws, "libs/tool");
    expect(sharedLockOf(join(dir, "libs/tool"))).toBe(sharedLockOf(src));
    expect(sharedLockOf(src)).toBe(join(src, ".git", "grex-fetch.lock"));
    const holder = Bun.spawn([process.execPath, join(import.meta.dir, "..", "helpers", "lock-holder.ts"), t.ws, "repo", src], { stdout: "pipe", stderr: "inherit", env: t.env });
    const reader = holder.stdout.getReader();
    let out = "";
    while (!out.includes("held\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the lock holder ended before taking the lock");
      out += new TextDecoder().decode(value);
    }
    const upstream = t.commit(tool, { "LOCKED.md": "x\n" }, "while locked");
    const sync = t.spawnGrex(["sync", "--filter", "libs/tool", "--json"], { cwd: dir });
    let finished = false;
    void sync.exited.then(() => {
      finished = true;
    });
    await Bun.sleep(3000);
    expect(finished).toBe(false);
    expect(git(src, "rev-parse", "refs/remotes/origin/main")).not.toBe(upstream);
    holder.kill("SIGKILL");
    await holder.exited;
    expect(await sync.exited).toBe(0);
    expect(git(src, "rev-parse", "refs/remotes/origin/main")).toBe(upstream);
  }, 60_000);
});

