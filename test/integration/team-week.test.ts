// A team's week with grex, played end to end with real repositories and a
// real workspace repository, once through the CLI and once through MCP tool
// calls (the SDK's Client over an in-memory transport): A sets the workspace
// up and commits it; B clones it and reproduces A's commits with
// `sync --locked`; upstreams move, A syncs and commits the new lock, B pulls
// and applies it; B starts a topic branch in three packs, upstream moves again
// and B's sync advances the tracked branches under it; A and B each add a pack
// on their own branches and merge; every no-op sync leaves the workspace
// repository clean. Nothing here is ever drift, and nothing needs --force.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { runCli } from "../../src/cli/run.ts";
import { serverOptions, SessionTransport } from "../helpers/mcp.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

type Doc = Record<string, unknown>;
interface Side {
  name: string;
  dir: string;
  home: string;
}
interface Outcome {
  ok: boolean;
  doc: Doc;
}
interface Surface {
  call(side: Side, verb: string, params?: Doc): Promise<Outcome>;
  close(): Promise<void>;
}

let t: TestWorkspace;
const surfaces: Surface[] = [];
afterEach(async () => {
  for (const s of surfaces.splice(0)) await s.close();
  t?.cleanup();
});

const kebab = (k: string) => k.replace(/_/g, "-");

/** The CLI in process, `--json`, with each teammate's own HOME. */
function cliSurface(): Surface {
  return {
    async call(side, verb, params = {}) {
      const argv = [verb];
      const rest: string[] = [];
      for (const [k, v] of Object.entries(params)) {
        if (k === "url" || k === "cmd") argv.push(String(v));
        else if (k === "args") rest.push("--", ...(v as string[]));
        else if (v === true) argv.push(`--${kebab(k)}`);
        else if (typeof v === "string") argv.push(`--${kebab(k)}`, v);
      }
      argv.push("--json", ...rest);
      let stdout = "";
      let stderr = "";
      mkdirSync(side.home, { recursive: true });
      const code = await runCli(argv, {
        cwd: side.dir,
        env: { ...t.env, HOME: side.home },
        stdout: (s) => void (stdout += s),
        stderr: (s) => void (stderr += s),
        stdoutTTY: false,
        stderrTTY: false,
      });
      if (code !== 0 && stdout.trim() === "") throw new Error(`grex ${argv.join(" ")} exited ${code}: ${stderr}`);
      return { ok: code === 0, doc: stdout.trim() === "" ? {} : (JSON.parse(stdout) as Doc) };
    },
    async close() {},
  };
}

/** The same calls as MCP tools: one session per teammate, in that teammate's workspace. */
function mcpSurface(): Surface {
  const clients = new Map<string, Client>();
  return {
    async call(side, verb, params = {}) {
      let client = clients.get(side.name);
      if (!client) {
        mkdirSync(side.home, { recursive: true });
        client = new Client({ name: `team-week-${side.name}`, version: "1" });
        await client.connect(new SessionTransport(serverOptions(side.dir, { ...t.env, HOME: side.home })));
        clients.set(side.name, client);
      }
      const r = await client.callTool({ name: verb, arguments: params });
      const doc = (r.structuredContent ?? {}) as Doc;
      return { ok: r.isError !== true, doc };
    },
    async close() {
      for (const c of clients.values()) await c.close();
    },
  };
}

const porcelain = (dir: string) => git(dir, "status", "--porcelain");
const headOf = (dir: string) => git(dir, "rev-parse", "HEAD");
const branchOf = (dir: string) => git(dir, "rev-parse", "--abbrev-ref", "HEAD");
const lockLines = (dir: string) =>
  readFileSync(join(dir, "grex.lock.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { id: string; sha: string; branch: string | null });
const lockShas = (dir: string) => Object.fromEntries(lockLines(dir).map((e) => [e.id, e.sha]));
const COMMITTED = ["grex.jsonl", "grex.lock.jsonl", ".gitignore", ".gitattributes"];
const committedBytes = (dir: string) => COMMITTED.map((f) => readFileSync(join(dir, f), "utf8"));
type Row = { id: string; result: string; message: string };
const rows = (doc: Doc) => doc.packs as Row[];

function commitAll(dir: string, message: string): void {
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", message);
}

async function playTheWeek(surface: Surface): Promise<void> {
  surfaces.push(surface);
  t = new TestWorkspace("grex-week-");
  const ups = ["api", "web", "docs"].map((n) => t.repo(n, { "README.md": `${n}\n` }));
  const [p4, p5] = ["tools", "infra"].map((n) => t.repo(n, { "README.md": `${n}\n` }));
  const A: Side = { name: "a", dir: t.ws, home: t.home };
  const B: Side = { name: "b", dir: join(t.root, "b"), home: join(t.root, "b-home") };
  const ids = ["api", "web", "docs"];
  const moveUpstreams = (round: number) => ups.map((u, i) => t.commit(u, { "CHANGES.md": `round ${round}\n` }, `${ids[i]} round ${round}`));

  // Monday: A sets the workspace up and commits it.
  expect((await surface.call(A, "init")).ok).toBe(true);
  for (const u of ups) expect((await surface.call(A, "add", { url: u })).ok).toBe(true);
  git(A.dir, "init", "-q", "-b", "main");
  commitAll(A.dir, "workspace");
  expect(porcelain(A.dir)).toBe("");

  // B clones it and reproduces A's exact commits: on the tracked branch, no committed file changes.
  git(t.root, "clone", "-q", A.dir, B.dir);
  const lock1 = lockShas(B.dir);
  const locked = await surface.call(B, "sync", { locked: true });
  expect(locked.ok).toBe(true);
  for (const id of ids) {
    expect(headOf(join(B.dir, id))).toBe(lock1[id] as string);
    expect(branchOf(join(B.dir, id))).toBe("main");
  }
  expect(porcelain(B.dir)).toBe("");

  // Tuesday: upstreams move; A syncs and commits the new lock.
  const round1 = moveUpstreams(1);
  expect((await surface.call(A, "sync")).ok).toBe(true);
  expect(Object.values(lockShas(A.dir))).toEqual(round1);
  commitAll(A.dir, "bump");

  // B pulls and applies the new lock: no --force, on main, nothing committed changes.
  git(B.dir, "pull", "-q", "--no-rebase", "origin", "main");
  const applied = await surface.call(B, "sync", { locked: true });
  expect(applied.ok).toBe(true);
  for (const [i, id] of ids.entries()) {
    expect(headOf(join(B.dir, id))).toBe(round1[i] as string);
    expect(branchOf(join(B.dir, id))).toBe("main");
  }
  expect(porcelain(B.dir)).toBe("");

  // Wednesday: B starts feature/x in all three packs and commits in each.
  const exec = await surface.call(B, "exec", { cmd: "git", args: ["switch", "-q", "-c", "feature/x"] });
  expect(exec.ok).toBe(true);
  const topics = ids.map((id) => t.commit(join(B.dir, id), { "feature.md": "x\n" }, "feature x"));
  const statusB = await surface.call(B, "status", { fail_on_drift: true });
  expect(statusB.ok).toBe(true);
  for (const p of statusB.doc.packs as Array<{ drift: string; topic: { branch: string; base: string; ahead: number; behind: number } }>) {
    expect(p).toMatchObject({ drift: "topic", topic: { branch: "feature/x", base: "main", ahead: 1, behind: 0, upstream: null, pushed: false } });
  }

  // Thursday: upstream moves again; B's sync advances main under the topics and leaves them be.
  const round2 = moveUpstreams(2);
  const synced = await surface.call(B, "sync");
  expect(synced.ok).toBe(true);
  expect(rows(synced.doc).map((r) => [r.result, r.message])).toEqual(ids.map(() => ["ok", "on feature/x; main moved 1 commit; feature/x is 1 behind main"]));
  for (const [i, id] of ids.entries()) {
    const dir = join(B.dir, id);
    expect(branchOf(dir)).toBe("feature/x");
    expect(headOf(dir)).toBe(topics[i] as string);
    expect(porcelain(dir)).toBe("");
    expect(git(dir, "rev-parse", "refs/heads/main")).toBe(round2[i] as string);
  }
  const doctorB = await surface.call(B, "doctor");
  expect(doctorB.ok).toBe(true);
  expect((doctorB.doc.findings as Array<{ severity: string }>).filter((f) => f.severity !== "ok")).toEqual([]);
  expect((await surface.call(B, "status", { fail_on_drift: true })).ok).toBe(true);
  // The lock records the tracked branch's new tips, not B's unpushed topic commits.
  expect(Object.values(lockShas(B.dir))).toEqual(round2);
  commitAll(B.dir, "tracked branches moved");

  // Friday: A and B each add a pack on a branch of their own; the merge has no conflict.
  git(A.dir, "switch", "-q", "-c", "add-tools");
  expect((await surface.call(A, "add", { url: p4 as string })).ok).toBe(true);
  commitAll(A.dir, "add tools");
  git(B.dir, "switch", "-q", "-c", "add-infra");
  expect((await surface.call(B, "add", { url: p5 as string })).ok).toBe(true);
  commitAll(B.dir, "add infra");
  git(A.dir, "switch", "-q", "main");
  git(A.dir, "merge", "-q", "--no-edit", "add-tools");
  git(A.dir, "pull", "-q", "--no-rebase", "--no-edit", B.dir, "add-infra"); // throws on a conflict
  expect(git(A.dir, "ls-files", "-u")).toBe("");
  // Both branches rewrote the lines of the packs B's sync moved: the union kept both sides' lines,
  // so the merged lock names api, web and docs at two commits each. status says so (sync --locked would refuse).
  const merged = await surface.call(A, "status");
  expect((merged.doc.warnings as string[]).map((w) => /pack '(\w+)'/.exec(w)?.[1]).sort()).toEqual(["api", "docs", "web"]);

  // A's next sync settles it: one line per pack, both new packs there; A commits that, B pulls it.
  expect((await surface.call(A, "sync")).ok).toBe(true);
  expect(lockLines(A.dir).map((e) => e.id).sort()).toEqual(["api", "docs", "infra", "tools", "web"]);
  expect(Object.values(lockShas(A.dir)).slice(0, 3)).toEqual(round2);
  expect((await surface.call(A, "status")).doc.warnings).toEqual([]);
  commitAll(A.dir, "settle the merged lock");
  git(B.dir, "switch", "-q", "main");
  git(B.dir, "pull", "-q", "--no-rebase", "--no-edit", A.dir, "main");
  expect((await surface.call(B, "sync")).ok).toBe(true);
  expect(porcelain(B.dir)).toBe("");
  expect(committedBytes(A.dir)).toEqual(committedBytes(B.dir));
  for (const id of ids) expect(branchOf(join(B.dir, id))).toBe("feature/x"); // still B's topics

  // Five no-op syncs on each side leave the workspace repositories clean.
  for (const side of [A, B]) {
    const before = committedBytes(side.dir);
    for (let i = 0; i < 5; i++) expect((await surface.call(side, "sync")).ok).toBe(true);
    expect(committedBytes(side.dir)).toEqual(before);
    expect(porcelain(side.dir)).toBe("");
    expect((await surface.call(side, "status", { fail_on_drift: true })).ok).toBe(true);
  }
}

describe("a team's week is never drift and never needs --force", () => {
  test("through the CLI", async () => {
    await playTheWeek(cliSurface());
  });

  test("through MCP tool calls", async () => {
    await playTheWeek(mcpSurface());
  });
});
