// The must-show of task workspaces: from a 20-pack workspace, four task
// workspaces made at once (two by `grex init --from` processes, two by the MCP
// `init` tool through the SDK's Client), a commit in three packs of each, then:
// the source has all four topic branches without fetching; `git worktree list`
// in each source pack shows the four; removing one task workspace's packs keeps
// its branches; a dirty worktree is refused; a deleted task directory is
// pruned by `doctor --fix`; `git fsck` is clean everywhere.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const PACKS = Array.from({ length: 20 }, (_, i) => `p${String(i + 1).padStart(2, "0")}`);
const TASKS = ["cli-a", "cli-b", "mcp-a", "mcp-b"];

let t: TestWorkspace;
const taskDir = (name: string) => join(t.root, "tasks", name);
/** The three packs task `i` commits in. */
const touched = (i: number) => [PACKS[i] as string, PACKS[i + 5] as string, PACKS[i + 10] as string];
const commits = new Map<string, string>();

async function viaProcess(name: string): Promise<Record<string, unknown>> {
  const p = t.spawnGrex(["init", "--from", t.ws, "--branch", `topic-${name}`, "--json"], { cwd: taskDir(name) });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect({ name, code, err }).toEqual({ name, code: 0, err: "" });
  return JSON.parse(out) as Record<string, unknown>;
}

async function viaMcp(name: string): Promise<Record<string, unknown>> {
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(taskDir(name), t.env)));
  try {
    const r = (await client.callTool({ name: "init", arguments: { from: t.ws, branch: `topic-${name}` } })) as { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text: string }> };
    expect({ name, isError: r.isError ?? false, text: r.isError ? r.content[0]?.text : "" }).toEqual({ name, isError: false, text: "" });
    return r.structuredContent as Record<string, unknown>;
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  t = new TestWorkspace("grex-task-par-");
  expect((await t.grex("init")).code).toBe(0);
  for (const id of PACKS) {
    const url = t.repo(id, { "README.md": `${id}\n`, "src/index.ts": `export const name = "${id}";\n` });
    expect((await t.grex("add", url)).code).toBe(0);
  }
  for (const name of TASKS) mkdirSync(taskDir(name), { recursive: true });
}, 120_000);
afterAll(() => t.cleanup());

describe("four task workspaces from one 20-pack workspace, made at once", () => {
  test("two CLI processes and two MCP init calls, in parallel: each gets all 20 packs on its own topic", async () => {
    const results = await Promise.all([viaProcess("cli-a"), viaProcess("cli-b"), viaMcp("mcp-a"), viaMcp("mcp-b")]);
    results.forEach((r, i) => {
      const name = TASKS[i] as string;
      expect(r.source).toBe(t.ws);
      expect((r.packs as Array<{ id: string; branch: string }>).map((p) => `${p.id}@${p.branch}`)).toEqual(PACKS.map((id) => `${id}@topic-${name}`));
    });
    for (const name of TASKS) for (const id of PACKS) expect(git(join(taskDir(name), id), "status", "--porcelain")).toBe("");
  }, 120_000);

  test("a commit in three packs of each: the source has all four topics at once, no fetch", () => {
    TASKS.forEach((name, i) => {
      for (const id of touched(i)) commits.set(`${name}/${id}`, t.commit(join(taskDir(name), id), { [`${name}.md`]: `${name} was here\n` }, `${name}: work`));
    });
    TASKS.forEach((name, i) => {
      for (const id of PACKS) {
        const tip = git(join(t.ws, id), "rev-parse", `refs/heads/topic-${name}`);
        expect(tip).toBe(commits.get(`${name}/${id}`) ?? git(join(t.ws, id), "rev-parse", "HEAD"));
      }
      for (const id of touched(i)) expect(git(join(t.ws, id), "log", "-1", "--format=%s", `topic-${name}`)).toBe(`${name}: work`);
    });
    // The source's own checkouts never moved.
    for (const id of PACKS) expect(git(join(t.ws, id), "status", "--porcelain", "--branch")).toBe("## main...origin/main");
  });

  test("git worktree list in each source pack shows the four", () => {
    for (const id of PACKS) {
      const list = git(join(t.ws, id), "worktree", "list", "--porcelain");
      for (const name of TASKS) expect(list).toContain(`worktree ${join(taskDir(name), id)}\n`);
      expect(list.split("\n\n")).toHaveLength(5);
    }
  });

  test("removing one task workspace's packs keeps its branches; a dirty worktree is refused", async () => {
    const dir = taskDir("cli-a");
    for (const id of PACKS) {
      const r = await t.grexAt(dir, ["rm", id]);
      expect({ id, code: r.code, err: r.stderr }).toEqual({ id, code: 0, err: "" });
    }
    for (const id of touched(0)) expect(git(join(t.ws, id), "rev-parse", "refs/heads/topic-cli-a")).toBe(commits.get(`cli-a/${id}`) as string);
    for (const id of PACKS) expect(git(join(t.ws, id), "worktree", "list", "--porcelain")).not.toContain(join(dir, id));
    const dirty = join(taskDir("cli-b"), PACKS[3] as string);
    writeFileSync(join(dirty, "README.md"), "unsaved\n");
    const refused = await t.grexAt(taskDir("cli-b"), ["rm", PACKS[3] as string]);
    expect(refused.code).toBe(4);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(`Refusing to delete uncommitted or untracked changes in the worktree of '${PACKS[3]}'`);
    expect(git(dirty, "status", "--porcelain")).toBe("M README.md");
  }, 120_000);

  test("a deleted task directory is pruned by doctor --fix; git fsck is clean everywhere", async () => {
    rmSync(taskDir("mcp-a"), { recursive: true });
    const fixed = await t.grexAt(t.ws, ["doctor", "--fix", "--json"]);
    expect(fixed.json.fixed).toContain("worktrees");
    for (const id of PACKS) {
      const src = join(t.ws, id);
      const list = git(src, "worktree", "list", "--porcelain");
      expect(list).not.toContain(taskDir("mcp-a"));
      expect(list).toContain(join(taskDir("cli-b"), id));
      expect(list).toContain(join(taskDir("mcp-b"), id));
      expect(git(src, "rev-parse", "--verify", "refs/heads/topic-mcp-a")).toMatch(/^[0-9a-f]{40}$/);
      git(src, "fsck", "--strict");
      for (const name of ["cli-b", "mcp-b"]) git(join(taskDir(name), id), "fsck", "--strict");
    }
  }, 120_000);
});
