// Long git work shows where it is: a clone over smart HTTP reports objects,
// bytes and rate, then deltas, then files checked out, on one terminal line
// (under a real pseudo-terminal), as MCP progress notifications that only
// increase, and nothing at all when stderr is not a terminal.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ActivityBoard } from "../../src/verbs/activity-board.ts";
import { startGitHttpServer, type GitHttpServer } from "../helpers/git-http-server.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { git, GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

const hasScript = Bun.which("script") !== null;
let t: TestWorkspace;
let server: GitHttpServer;

beforeAll(async () => {
  t = new TestWorkspace("grex-progress-");
  // Enough objects and deltas that every phase reports more than once (256 objects a report).
  const repo = join(t.upstream, "wide");
  mkdirSync(repo);
  for (let d = 0; d < 12; d++) {
    mkdirSync(join(repo, `d${d}`));
    for (let f = 0; f < 100; f++) writeFileSync(join(repo, `d${d}`, `f${f}.txt`), `${`line ${d}/${f}\n`.repeat(40)}`);
  }
  git(repo, "init", "-q", "-b", "main");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "one");
  for (let d = 0; d < 12; d++) for (let f = 0; f < 100; f += 2) writeFileSync(join(repo, `d${d}`, `f${f}.txt`), `${`line ${d}/${f}\n`.repeat(40)}changed\n`);
  git(repo, "commit", "-q", "-am", "two");
  git(repo, "gc", "-q");
  server = await startGitHttpServer(t.upstream);
  expect((await t.grex("init")).code).toBe(0);
});

afterAll(async () => {
  await server.stop();
  t.cleanup();
});

describe("the activity board", () => {
  test("phrases per phase, a rate from the first object on, a fraction that never reaches the next pack", () => {
    const b = new ActivityBoard();
    b.update("api", { phase: "receiving", bytes: 40 }, 0);
    expect(b.text()).toBe("api: waiting for the server to send the pack");
    b.update("api", { phase: "receiving", done: 0, total: 1000, bytes: 1000 }, 5000);
    b.update("api", { phase: "receiving", done: 500, bytes: 1000 + 2 * 1024 * 1024 }, 6000);
    expect(b.text()).toBe("api: receiving 500/1,000 objects (50%), 2 MiB, 2 MiB/s");
    expect(b.fraction()).toBeCloseTo(0.3);
    b.update("web", { phase: "checking out", done: 10, total: 40 }, 6000);
    b.update("ui", { phase: "resolving deltas", done: 1, total: 4 }, 6000);
    expect(b.text()).toBe("api: receiving 500/1,000 objects (50%), 2 MiB, 2 MiB/s; web: checking out 10/40 files (25%); +1 more");
    b.update("api", { phase: "checking out", done: 40, total: 40 }, 7000);
    b.update("web", null);
    b.update("ui", null);
    expect(b.text()).toBe("api: checking out 40/40 files (100%)");
    expect(b.fraction()).toBe(0.99);
  });
});

describe.skipIf(!hasScript)("on a terminal", () => {
  test("a clone over HTTP shows objects, bytes, deltas and files on one line", async () => {
    const cmd = [process.execPath, GREX_MAIN, "add", `${server.url}/wide`, "tty-wide"].map((a) => `'${a}'`).join(" ");
    // Not spawnSync: the HTTP server answering the clone runs in this process.
    // A terminal 120 columns wide: each frame must fit it.
    const p = Bun.spawn(["script", "-qec", `stty cols 120; ${cmd}`, "/dev/null"], { cwd: t.ws, env: { ...t.env, TERM: "xterm" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(code).toBe(0);
    const frames = out.split(/\r\x1b\[2K|\r?\n/).filter((f) => f.trim() !== "");
    const line = (re: RegExp) => frames.find((f) => re.test(f)) ?? frames.join("\n");
    expect(line(/^add \[0\/1\] cloning http:\/\/127\.0\.0\.1:\d+\/wide: receiving [\d,]+\/[\d,]+ objects \(\d+%\), [\d.]+ (bytes|KiB|MiB)/)).toMatch(/receiving/);
    expect(line(/: resolving deltas [\d,]+\/[\d,]+ \(\d+%\)$/)).toMatch(/resolving deltas [\d,]+\/[\d,]+ \(\d+%\)$/m);
    expect(line(/: checking out [\d,]+\/1,200 files \(\d+%\)$/)).toMatch(/checking out [\d,]+\/1,200 files \(\d+%\)$/m);
    // One row each: never wider than the terminal's 120 columns.
    for (const f of frames) expect(f.length).toBeLessThanOrEqual(120);
    expect(frames.at(-1)).toMatch(/^added tty-wide at [0-9a-f]{12}/);
  });
});

test("not a terminal: no progress at all", async () => {
  const p = Bun.spawn([process.execPath, GREX_MAIN, "add", `${server.url}/wide`, "quiet-wide"], { cwd: t.ws, env: t.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  expect(code).toBe(0);
  expect(stderr).toBe("");
});

test("over MCP: the same figures as progress notifications, always increasing", async () => {
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
  try {
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const r = (await client.callTool({ name: "add", arguments: { url: `${server.url}/wide`, path: "mcp-wide" } }, undefined, { onprogress: (p) => seen.push(p) })) as { isError?: boolean };
    expect(r.isError).toBeFalsy();
    const values = seen.map((p) => p.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(seen.map((p) => p.message ?? "")).toContainEqual(expect.stringMatching(/receiving [\d,]+\/[\d,]+ objects/));
    expect(seen.every((p) => p.progress < 1 || p.progress === p.total)).toBe(true);
  } finally {
    await client.close();
  }
});
