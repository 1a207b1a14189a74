// Sync under concurrency, with real `grex` processes: the workspace lock
// between two syncs, recovery after SIGKILL mid-clone, and `--parallel`
// really overlapping work. Packs are served over loopback smart HTTP through
// a small proxy written here that can hold requests at a gate, delay them, and
// logs when each request starts and ends — so every assertion is about order
// and overlap, never about wall-clock durations.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { currentBranch, headSha, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { makeUpstream, type UpstreamRepo } from "../helpers/pack-tree.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

interface LoggedRequest {
  repo: string;
  method: string;
  path: string;
  start: number;
  end: number | null;
}

interface Proxy {
  url: string;
  log: LoggedRequest[];
  /** Requests waiting at the gate right now. */
  readonly held: number;
  /** Let every held (and future) request through. */
  open(): void;
  stop(): Promise<void>;
}

interface ProxyOptions {
  /** Pause before forwarding each request (makes requests long enough to overlap). */
  delayMs?: number;
  /** Requests for which this returns true wait until open() is called. */
  hold?: (r: LoggedRequest) => boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback proxy in front of the git server that logs, delays and gates requests. */
function startProxy(target: string, opts: ProxyOptions = {}): Proxy {
  const log: LoggedRequest[] = [];
  let held = 0;
  let release: () => void = () => {};
  let opened = false;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const entry: LoggedRequest = {
        repo: /^(.*?\.git)(\/|$)/.exec(url.pathname)?.[1] ?? url.pathname,
        method: req.method,
        path: url.pathname,
        start: performance.now(),
        end: null,
      };
      log.push(entry);
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : new Uint8Array(await req.arrayBuffer());
      if (!opened && opts.hold?.(entry)) {
        held++;
        await gate;
        held--;
      }
      if (opts.delayMs) await sleep(opts.delayMs);
      const headers = new Headers();
      for (const h of ["content-type", "accept", "git-protocol", "content-encoding"]) {
        const v = req.headers.get(h);
        if (v !== null) headers.set(h, v);
      }
      const res = await fetch(`${target}${url.pathname}${url.search}`, { method: req.method, headers, body });
      const bytes = await res.arrayBuffer(); // whole answer in hand: the request is over for the server side
      entry.end = performance.now();
      const out = new Headers(res.headers);
      for (const h of ["content-length", "content-encoding", "transfer-encoding"]) out.delete(h);
      return new Response(bytes, { status: res.status, headers: out });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    log,
    get held() {
      return held;
    },
    open() {
      opened = true;
      release();
    },
    async stop() {
      this.open();
      await server.stop(true);
    },
  };
}

/** Poll `cond` until it holds (the test's own timeout bounds the wait). */
async function until(cond: () => boolean, what: string, limitMs = 30_000): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The most intervals open at one instant (an end at the same instant as a start does not overlap it). */
function maxOverlap(intervals: Array<[number, number]>): number {
  const events: Array<[number, number]> = [];
  for (const [s, e] of intervals) events.push([s, 1], [e, -1]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let max = 0;
  for (const [, d] of events) {
    cur += d;
    max = Math.max(max, cur);
  }
  return max;
}

let git: GitHttpServer;
let serveRoot: { path: string; cleanup: () => void };
let subs = 0;

beforeAll(async () => {
  serveRoot = tempDir("grex-sync-conc-serve-");
  git = await startGitHttpServer(serveRoot.path);
});

afterAll(async () => {
  await git.stop();
  serveRoot.cleanup();
});

let t: TestWorkspace | undefined;
let proxy: Proxy | undefined;
const running: Array<ReturnType<TestWorkspace["spawnGrex"]>> = [];

afterEach(async () => {
  for (const p of running.splice(0)) {
    if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    await p.exited;
  }
  await proxy?.stop();
  proxy = undefined;
  t?.cleanup();
  t = undefined;
});

/**
 * A workspace with `n` packs registered (REPOS.json + `grex import`, nothing
 * cloned yet), served through a proxy made with `opts`.
 */
async function setup(n: number, opts: ProxyOptions): Promise<{ w: TestWorkspace; repos: UpstreamRepo[]; p: Proxy }> {
  const w = new TestWorkspace("grex-sync-conc-");
  t = w;
  const p = startProxy(git.url, opts);
  proxy = p;
  const sub = `c${subs++}`;
  const host = { transport: "http" as const, workDir: w.upstream, serveDir: join(serveRoot.path, sub), serverUrl: `${p.url}/${sub}` };
  const repos: UpstreamRepo[] = [];
  for (let i = 0; i < n; i++) {
    // A few files each, so a clone is a real pack transfer.
    const files: Record<string, string> = {};
    for (let f = 0; f < 20; f++) files[`src/f${f}.txt`] = `pack ${i} file ${f}\n`.repeat(50);
    repos.push(makeUpstream(host, `p${i}`, files));
  }
  expect((await w.grex("init")).code).toBe(0);
  writeFileSync(join(w.ws, "REPOS.json"), JSON.stringify(repos.map((r) => ({ url: r.url, path: r.name }))));
  const imp = await w.grex("import", "--from-repos-json", "REPOS.json", "--json");
  expect(imp.code).toBe(0);
  expect((imp.json.imported as unknown[]).length).toBe(n);
  return { w, repos, p };
}

function spawnSync(w: TestWorkspace, ...argv: string[]) {
  const p = w.spawnGrex(["sync", ...argv]);
  running.push(p);
  const out = new Response(p.stdout).text();
  const err = new Response(p.stderr).text();
  const done = p.exited.then(async (code) => ({ code, stdout: await out, stderr: await err }));
  return { proc: p, done };
}

function expectAllCloned(w: TestWorkspace, repos: UpstreamRepo[]): void {
  for (const r of repos) {
    const dir = join(w.ws, r.name);
    expect(headSha(dir)).toBe(r.head());
    expect(currentBranch(dir)).toBe("main");
    expect(readFileSync(join(dir, "src/f0.txt"), "utf8")).toStartWith(`pack ${r.name.slice(1)} file 0\n`);
  }
}

const cloneTemps = (dir: string) => readdirSync(dir).filter((n) => n.includes(".grex-clone-"));

describe("concurrent syncs", () => {
  test("two syncs on one workspace: one exits 5 at once, the other completes", async () => {
    // Hold every git request: the lock winner cannot finish until the gate opens.
    const { w, repos, p } = await setup(4, { hold: () => true });
    const a = spawnSync(w, "--json");
    const b = spawnSync(w, "--json");
    const first = await Promise.race([a.done.then((r) => ({ who: a, r })), b.done.then((r) => ({ who: b, r }))]);
    const other = first.who === a ? b : a;
    expect(first.r.code).toBe(5);
    const err = JSON.parse(first.r.stdout) as { error: { kind: string; code: number; message: string } };
    expect(err.error).toMatchObject({ kind: "lock", code: 5 });
    expect(err.error.message).toMatch(/Another grex sync \(pid \d+\) is running/);
    expect(first.r.stderr).toContain("grex: Another grex sync");
    // The loser gave up while the winner was still blocked on the network.
    expect(other.proc.exitCode).toBeNull();
    await until(() => p.held > 0, "the winner's first git request");

    p.open();
    const r = await other.done;
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { summary: { total: number; ok: number } };
    expect(doc.summary).toMatchObject({ total: 4, ok: 4 });
    expectAllCloned(w, repos);
    // The lock is free again.
    expect((await w.grex("sync")).code).toBe(0);
  });

  test("SIGKILL mid-clone: the next sync completes and no hidden clone dir is left or registered", async () => {
    // The first pack's object transfer passes; every later one is held, mid-clone.
    let passed = 0;
    const { w, repos, p } = await setup(6, {
      hold: (r) => r.method === "POST" && passed++ >= 1,
    });
    const s = spawnSync(w, "--parallel", "3");
    await until(() => repos.some((r) => existsSync(join(w.ws, r.name))), "the first pack dir");
    await until(() => p.held >= 1 && cloneTemps(w.ws).length >= 1, "a clone in flight");
    s.proc.kill("SIGKILL");
    const killed = await s.done;
    expect(killed.code).not.toBe(0);
    expect(s.proc.signalCode).toBe("SIGKILL");
    // The kill really left clones half done: hidden temp dirs, not pack dirs.
    const leftovers = cloneTemps(w.ws);
    expect(leftovers.length).toBeGreaterThanOrEqual(1);
    const cloned = repos.filter((r) => existsSync(join(w.ws, r.name))).length;
    expect(cloned).toBeGreaterThanOrEqual(1);
    expect(cloned).toBeLessThan(repos.length);

    p.open();
    const again = spawnSync(w, "--json");
    const r = await again.done;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { packs: Array<{ id: string; result: string }> };
    expect(doc.packs.map((x) => x.id).sort()).toEqual(repos.map((x) => x.name).sort());
    for (const x of doc.packs) expect(x.result).toBe("ok");
    expectAllCloned(w, repos);
    // Nothing hidden left in the way, and only the real packs are registered and locked.
    expect(cloneTemps(w.ws)).toEqual([]);
    const ls = await w.grex("ls", "--json");
    expect((ls.json.packs as Array<{ id: string }>).map((x) => x.id).sort()).toEqual(repos.map((x) => x.name).sort());
    const lockIds = readFileSync(join(w.ws, "grex.lock.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => (JSON.parse(l) as { id: string }).id)
      .sort();
    expect(lockIds).toEqual(repos.map((x) => x.name).sort());
    const status = await w.grex("status", "--json", "--fail-on-drift");
    expect(status.code).toBe(0);
    const scan = await w.grex("import", "--scan", "--json");
    expect(scan.json.imported).toEqual([]);
  });
});

describe("--parallel", () => {
  /** Sync 8 packs with `--parallel n`; returns how many repos (and requests) were in flight at once at most. */
  async function measure(n: number): Promise<{ repos: number; requests: number; distinct: number }> {
    const { w, repos, p } = await setup(8, { delayMs: 60 });
    p.log.length = 0; // import made no requests, but be sure
    const r = await spawnSync(w, "--parallel", String(n), "--json").done;
    expect(r.code).toBe(0);
    expectAllCloned(w, repos);
    expect(p.log.every((e) => e.end !== null)).toBe(true);
    const perRepo = new Map<string, [number, number]>();
    for (const e of p.log) {
      const cur = perRepo.get(e.repo);
      const end = e.end as number;
      perRepo.set(e.repo, cur ? [Math.min(cur[0], e.start), Math.max(cur[1], end)] : [e.start, end]);
    }
    // A repo is in flight from its first request's start to its last request's end:
    // inside the scheduler permit its clone holds.
    return {
      repos: maxOverlap([...perRepo.values()]),
      requests: maxOverlap(p.log.map((e) => [e.start, e.end as number])),
      distinct: perRepo.size,
    };
  }

  test("sync --parallel 4 over 8 packs overlaps repos, never more than 4 at once", async () => {
    const m = await measure(4);
    expect(m.distinct).toBe(8);
    expect(m.repos).toBeGreaterThanOrEqual(2);
    expect(m.repos).toBeLessThanOrEqual(4);
    expect(m.requests).toBeGreaterThanOrEqual(2);
    expect(m.requests).toBeLessThanOrEqual(4);
  });

  test("control: --parallel 1 never overlaps two repos", async () => {
    const m = await measure(1);
    expect(m.distinct).toBe(8);
    expect(m.repos).toBe(1);
    expect(m.requests).toBe(1);
  });
});
