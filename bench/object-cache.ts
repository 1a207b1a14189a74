// The shared object cache (`bun bench/object-cache.ts`, npm run
// bench:object-cache): N generated repositories (deterministic, bench/fixtures/
// repos.ts; BENCH_COMMITS commits over BENCH_FILES files each) served over
// loopback smart HTTP. Three workspaces of the same N packs, each registered
// with REPOS.json + `grex import` and brought up with one `grex sync`:
//   baseline  no cache
//   first     GREX_OBJECT_CACHE set, the cache empty (fills it)
//   second    the same cache, now warm
// Prints wall time and the workspace's disk use (du -sk, the cache is outside
// it) of each, the ratios second/first (goals: time <= 0.3, disk <= 0.2) and
// first/baseline (what filling the cache costs), the cache's own size, and the
// bytes the server sent in each sync.
//
// Env: BENCH_N (default 100), BENCH_COMMITS (default 200), BENCH_FILES
// (default 50), BENCH_RUNS (second-workspace repetitions, best taken, default
// 1), BENCH_KEEP=1 keeps the temp dir.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { makeReposScript } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";

const N = Number(process.env.BENCH_N ?? 100);
const SHAPE = { commits: Number(process.env.BENCH_COMMITS ?? 200), files: Number(process.env.BENCH_FILES ?? 50) };
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const GREX = [process.execPath, join(import.meta.dir, "..", "src", "cli", "main.ts")];
const started = performance.now();
const log = (m: string) => process.stderr.write(`${m}\n`);

const root = mkdtempSync(join(tmpdir(), "grex-bench-cache-"));
const home = join(root, "home");
mkdirSync(home);
const baseEnv = benchEnv(home);
const cache = join(root, "cache");

async function run(cmd: string[], cwd: string, env: Record<string, string> = baseEnv): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  return out;
}

async function duKiB(dir: string): Promise<number> {
  return Number((await run(["du", "-sk", dir], root)).split("\t")[0]);
}

const up = join(root, "upstream");
const serve = join(root, "serve");
const streams = join(root, "streams");
for (const d of [up, serve, streams]) mkdirSync(d);
const names = Array.from({ length: N }, (_, i) => `r${i}`);
log(`bench/object-cache: making ${N} repositories (${SHAPE.commits} commits, ${SHAPE.files} files each) in ${root}`);
await run(["sh", "-c", makeReposScript(names, up, streams, serve, SHAPE)], root);
let sent = 0;
const server = await startGitHttpServer(serve);
// Bytes the server sends, counted by a proxy in front of it (same process, loopback).
const proxy = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const u = new URL(req.url);
    const res = await fetch(`${server.url}${u.pathname}${u.search}`, { method: req.method, headers: req.headers, body: req.body, decompress: false } as RequestInit);
    const body = await res.arrayBuffer();
    sent += body.byteLength;
    return new Response(body, { status: res.status, headers: res.headers });
  },
});
const urlOf = (name: string) => `http://127.0.0.1:${proxy.port}/${name}.git`;

interface Row {
  name: string;
  ms: number;
  kib: number;
  /** Of which the packs' own object stores (`.git/objects`). */
  objKiB: number;
  sentKiB: number;
}

/** A fresh workspace of the N packs, brought up by one `grex sync`: its time, disk use and the bytes served. */
async function workspace(name: string, env: Record<string, string>): Promise<Row> {
  const ws = join(root, name);
  mkdirSync(ws);
  await run([...GREX, "init"], ws, env);
  writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: urlOf(n), path: n }))));
  await run([...GREX, "import", "--from-repos-json", "REPOS.json"], ws, env);
  sent = 0;
  const t0 = performance.now();
  const out = await run([...GREX, "sync", "--json"], ws, env);
  const ms = performance.now() - t0;
  const doc = JSON.parse(out) as { packs: Array<{ result: string }> };
  if (doc.packs.length !== N || doc.packs.some((p) => p.result !== "ok")) throw new Error(`grex sync in ${name} did not bring every pack up`);
  const objKiB = Number((await run(["sh", "-c", 'du -skc */.git/objects | tail -n 1'], ws)).split("\t")[0]);
  const row = { name, ms, kib: await duKiB(ws), objKiB, sentKiB: sent / 1024 };
  log(`  ${name}: ${(ms / 1000).toFixed(1)} s, ${row.kib} KiB on disk, ${row.sentKiB.toFixed(0)} KiB served (${((performance.now() - started) / 1000).toFixed(0)} s so far)`);
  return row;
}

try {
  const withCache = { ...baseEnv, GREX_OBJECT_CACHE: cache };
  const baseline = await workspace("baseline", baseEnv);
  const first = await workspace("first", withCache);
  let second: Row | null = null;
  for (let r = 0; r < RUNS; r++) {
    const row = await workspace(`second-${r}`, withCache);
    if (second === null || row.ms < second.ms) second = row;
  }
  if (second === null) throw new Error("BENCH_RUNS must be at least 1");
  const cacheKiB = await duKiB(cache);
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  const rows = [baseline, first, second];
  const mib = (k: number) => `${(k / 1024).toFixed(1)} MiB`;
  const lines = [
    `grex object cache, ${N} packs over loopback smart HTTP (${SHAPE.commits} commits, ${SHAPE.files} files each)`,
    "",
    "| workspace | sync time | workspace disk (du) | of which .git/objects | served by the upstream |",
    "|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.name} | ${(r.ms / 1000).toFixed(2)} s | ${mib(r.kib)} | ${mib(r.objKiB)} | ${mib(r.sentKiB)} |`),
    `| (the cache, filled by first) | | ${mib(cacheKiB)} | | |`,
    "",
    `second / first: time ${ratio(second.ms, first.ms)} (goal <= 0.3); disk ${ratio(second.kib, first.kib + cacheKiB)} of what the first sync added (its workspace + the cache it filled; goal <= 0.2), ${ratio(second.kib, first.kib)} of the first workspace alone`,
    `second / baseline (no cache): time ${ratio(second.ms, baseline.ms)}, disk ${ratio(second.kib, baseline.kib)}`,
    `first / baseline (filling the cache): time ${ratio(first.ms, baseline.ms)}`,
    `bench ran ${((performance.now() - started) / 1000).toFixed(0)} s`,
  ];
  console.log(lines.join("\n"));
} finally {
  proxy.stop(true);
  await server.stop();
  if (process.env.BENCH_KEEP !== "1") rmSync(root, { recursive: true, force: true });
  else log(`kept ${root}`);
}
