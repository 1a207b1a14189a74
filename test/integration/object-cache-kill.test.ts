// The shared object cache under SIGKILL and concurrency (real processes, a
// real smart-HTTP server): a `grex sync` that fills the cache is killed at a
// seeded random point, 20 times (from an empty cache, with new upstream work,
// with packs to clone again from a warm cache); after each kill `git fsck`
// finds every cache entry and every pack readable, and one following sync
// brings every pack to the upstream's tip. Two workspaces filling the same
// empty cache at once both succeed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { prng } from "../helpers/prng.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const TRIALS = Number(process.env.GREX_CACHE_KILL_TRIALS ?? 20);
const PACKS = ["alpha", "beta", "gamma"];

class CacheWorkspace extends TestWorkspace {
  cache = "";
  override get env(): Record<string, string | undefined> {
    return { ...super.env, GREX_OBJECT_CACHE: this.cache };
  }
}

const t = new CacheWorkspace("grex-cache-kill-");
t.cache = join(t.root, "cache");
let server: GitHttpServer;
beforeAll(async () => {
  server = await startGitHttpServer(t.upstream);
});
afterAll(async () => {
  await server.stop();
  t.cleanup();
});

/** Files for round k: a few hundred files at first, about 60 changed per later round. */
function files(k: number): Record<string, string> {
  const out: Record<string, string> = {};
  const n = k === 0 ? 150 : 40;
  for (let i = 0; i < n; i++) out[`d${i % 9}/f${(i + k * 11) % 150}.txt`] = `round ${k} file ${i}\n${"z".repeat(200 + ((i * 31 + k) % 900))}\n`;
  return out;
}

async function run(w: TestWorkspace, argv: string[]): Promise<{ code: number; out: string }> {
  const p = w.spawnGrex(argv);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: stdout + stderr };
}

/** Start `grex <argv>`; once `trigger()` holds (polled), wait `delayMs` more and SIGKILL it, unless it finished first. */
async function killWhen(w: TestWorkspace, argv: string[], trigger: () => boolean, delayMs: number): Promise<boolean> {
  const p = w.spawnGrex(argv);
  let exited = false;
  p.exited.then(() => {
    exited = true;
  });
  while (!exited && !trigger()) await Bun.sleep(1);
  await Promise.race([p.exited, Bun.sleep(delayMs)]);
  const killed = !exited;
  if (killed) p.kill("SIGKILL");
  await p.exited;
  return killed;
}

const entries = (cache: string) => (existsSync(cache) ? readdirSync(cache).filter((n) => n.endsWith(".git")).map((n) => join(cache, n)) : []);
const fsck = (dir: string) => git(dir, "fsck", "--no-progress", "--strict");

test("SIGKILL during a sync that fills the cache: the cache and the workspace stay readable, the next sync finishes", async () => {
  expect((await run(t, ["init"])).code).toBe(0);
  const tips = new Map<string, string>();
  for (const name of PACKS) {
    const up = t.repo(name, files(0));
    git(up, "config", "gc.auto", "0");
    tips.set(name, git(up, "rev-parse", "HEAD"));
    expect((await run(t, ["add", `${server.url}/${name}/.git`, name])).code).toBe(0);
  }
  const random = prng(38);
  let killed = 0;
  const seenStates = new Map<string, number>();
  for (let k = 0; k < TRIALS; k++) {
    const kind = k % 3;
    if (kind === 0) {
      // From nothing: no cache, no clones.
      rmSync(t.cache, { recursive: true, force: true });
      for (const name of PACKS) rmSync(join(t.ws, name), { recursive: true, force: true });
    } else {
      for (const name of PACKS) tips.set(name, t.commit(join(t.upstream, name), files(k + 1), `round ${k + 1}`));
      // Clones again from a warm cache that lacks the new commits.
      if (kind === 2) for (const name of PACKS) rmSync(join(t.ws, name), { recursive: true, force: true });
    }
    // Kill points: from the start of the process, or from the moment a cache entry is being filled (its lock
    // exists) or a clone is under way (its hidden temp folder exists), plus a random delay.
    const filling = () => existsSync(t.cache) && readdirSync(t.cache).some((n) => n.endsWith(".lock"));
    const cloning = () => readdirSync(t.ws).some((n) => n.includes(".grex-clone-"));
    const triggers = [() => true, filling, cloning];
    const trigger = triggers[Math.floor(random() * triggers.length)] as () => boolean;
    if (await killWhen(t, ["sync"], trigger, Math.floor(random() * (trigger === triggers[0] ? 2500 : 400)))) killed++;
    const state = `${entries(t.cache).length}e/${PACKS.filter((n) => existsSync(join(t.ws, n, ".git"))).length}p`;
    seenStates.set(state, (seenStates.get(state) ?? 0) + 1);
    // Whatever the kill left is readable: every cache entry and every pack on disk.
    for (const entry of entries(t.cache)) fsck(entry);
    for (const name of PACKS) if (existsSync(join(t.ws, name, ".git"))) fsck(join(t.ws, name));
    const r = await run(t, ["sync", "--json"]);
    expect(r.out).not.toMatch(/internal error|EEXIST/);
    expect(r.code).toBe(0);
    for (const name of PACKS) {
      const dir = join(t.ws, name);
      expect(git(dir, "rev-parse", "HEAD")).toBe(tips.get(name) as string);
      expect(git(dir, "status", "--porcelain")).toBe("");
      fsck(dir);
      // Borrowing: the clone holds (nearly) nothing of its own.
      expect(existsSync(join(dir, ".git", "objects", "info", "alternates"))).toBe(true);
    }
    for (const entry of entries(t.cache)) fsck(entry);
    expect(entries(t.cache).length).toBe(PACKS.length);
    expect(readdirSync(t.cache).filter((n) => n.includes(".tmp-") || n.endsWith(".lock"))).toEqual([]);
  }
  console.log(`object-cache-kill: ${TRIALS} SIGKILL trials, ${killed} killed before the end; left behind (cache entries/packs on disk): ${[...seenStates].map(([s, n]) => `${s} x${n}`).join(", ")}`);
  expect(killed).toBeGreaterThan(TRIALS / 3);
}, 900_000);

test("two workspaces filling the same empty cache at once both succeed", async () => {
  const cache = join(t.root, "cache-concurrent");
  const ws: CacheWorkspace[] = [];
  for (let i = 0; i < 2; i++) {
    const w = new CacheWorkspace(`grex-cache-conc-${i}-`);
    w.cache = cache;
    ws.push(w);
  }
  try {
    for (const w of ws) expect((await run(w, ["init"])).code).toBe(0);
    const adds = await Promise.all(ws.map((w) => run(w, ["add", `${server.url}/alpha/.git`, "alpha"])));
    for (const r of adds) expect(r.code).toBe(0);
    expect(entries(cache).length).toBe(1);
    fsck(entries(cache)[0] as string);
    for (const w of ws) {
      fsck(join(w.ws, "alpha"));
      expect(git(join(w.ws, "alpha"), "rev-parse", "HEAD")).toBe(git(join(t.upstream, "alpha"), "rev-parse", "HEAD"));
    }
  } finally {
    for (const w of ws) w.cleanup();
  }
}, 300_000);
