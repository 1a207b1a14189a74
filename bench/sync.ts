// Sync throughput (`bun bench/sync.ts`): N realistic repositories (30 commits,
// 50 files each, deterministic: bench/fixtures/repos.ts) over plain paths,
// file:// URLs and loopback smart HTTP (`git http-backend` behind a Bun server
// in this process). grex — the spawned CLI, one workspace registering all N through
// REPOS.json + `grex import`, then `grex sync --parallel 8` — beside plain git
// run the same way in the same run: a sequential shell loop and `xargs -P 8`.
// Three cells per transport: cold clone, no-op sync/pull, and sync/pull with one
// new commit per repository. Each cell is repeated with the contenders
// interleaved (the order alternating between repetitions), and prints wall
// times with ratios against `xargs -P 8`, then what each contender's time was
// made of: its own CPU time (the process and its children: grex's one process,
// or xargs with every git it ran), the HTTP server's CPU time (every `git
// http-backend` it ran, from their rusage) and the server's busy wall time
// (some request in flight), so that the goal is judged on what each
// contender controls. grex runs with GREX_PROFILE (src/core/base/profile.ts):
// its phase times, summed over packs, are printed per cell.
//
// Env: BENCH_N (default 100), BENCH_RUNS (no-op repetitions, default 3),
// BENCH_COLD_RUNS (cold clone repetitions, default 2), BENCH_CHANGE_RUNS
// (one-new-commit repetitions, default 2); medians are reported (with two
// runs, the better one), BENCH_TRANSPORTS (default "local,file,http"),
// BENCH_LOOP=0 skips the sequential git loop, BENCH_SWEEP=1 also times grex
// cold clone and no-op sync on each transport at --parallel 2/4/8/16 and with
// no flag (the default), BENCH_KEEP=1 keeps the temp dir, BENCH_GREX_BASE=<binary>
// runs another grex build (an earlier commit's) as one more interleaved contender,
// so that before/after ratios come from one run.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { makeReposScript, REALISTIC } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";
import { grexBuildCommand } from "../scripts/compile.ts";
import { type Cost, printReport, type Profile, type Row, type Transport, type Who } from "./fixtures/sync-report.ts";

const N = Number(process.env.BENCH_N ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 2);
const CHANGE_RUNS = Number(process.env.BENCH_CHANGE_RUNS ?? 2);
const LOOP = process.env.BENCH_LOOP !== "0";
const started = performance.now();
const PAR = 8;
const TRANSPORTS = (process.env.BENCH_TRANSPORTS ?? "local,file,http").split(",").map((s) => s.trim()) as Transport[];

const root = mkdtempSync(join(tmpdir(), "grex-bench-sync-"));
const home = join(root, "home");
mkdirSync(home);
const env = benchEnv(home);
// grex compiled the way `npm run build` does it.
const grexBin = join(root, "grex");
{
  const b = Bun.spawnSync(grexBuildCommand(grexBin), { stdout: "ignore", stderr: "pipe" });
  if (b.exitCode !== 0) throw new Error(`building grex failed: ${b.stderr.toString()}`);
}
const GREX = [grexBin];
// BENCH_GREX_BASE: another grex binary (an earlier commit's build) run as a fourth contender, for before/after in one run.
const BASE = process.env.BENCH_GREX_BASE ? [process.env.BENCH_GREX_BASE] : null;

/** Run a command to completion without blocking this process (it serves HTTP). */
async function run(cmd: string[], cwd: string, stdin?: string, extraEnv: Record<string, string> = {}): Promise<Cost> {
  const before = server?.work() ?? { cpuMs: 0, busyMs: 0 };
  const t0 = performance.now();
  const p = Bun.spawn(cmd, {
    cwd,
    env: { ...env, ...extraEnv },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  const after = server?.work() ?? { cpuMs: 0, busyMs: 0 };
  const cpuMs = Number(p.resourceUsage()?.cpuTime.total ?? 0) / 1000;
  return { ms, cpuMs, serverCpuMs: after.cpuMs - before.cpuMs, serverBusyMs: after.busyMs - before.busyMs, out };
}

const timed = run;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const log = (m: string) => process.stderr.write(`${m}\n`);

// --- upstream repositories (work trees) and their bare copies served over HTTP
const up = join(root, "upstream");
const serve = join(root, "serve");
mkdirSync(up);
mkdirSync(serve);
log(`bench/sync: making ${N} upstream repositories (${REALISTIC.commits} commits, ${REALISTIC.files} files each) in ${root}`);
const streams = join(root, "streams");
mkdirSync(streams);
const setupScript = makeReposScript(
  Array.from({ length: N }, (_, i) => `r${i}`),
  up,
  streams,
  serve,
);
let server: Awaited<ReturnType<typeof startGitHttpServer>> | undefined;
await run(["sh", "-c", setupScript], root);
const gitVersion = (await run(["git", "--version"], root)).out.trim();
server = await startGitHttpServer(serve);
const names = Array.from({ length: N }, (_, i) => `r${i}`);
const urlOf = (t: Transport, name: string) =>
  t === "local" ? join(up, name) : t === "file" ? `file://${join(up, name)}` : `${server?.url}/${name}.git`;

/** One new commit in every upstream, published to its bare copy too. */
async function commitEverywhere(round: number): Promise<void> {
  await run(
    [
      "sh",
      "-c",
      `set -e; for n in ${names.join(" ")}; do d="${up}/$n"; printf 'round ${round}\\n' >> "$d/src/file-000.txt"; git -C "$d" commit -q -am "round ${round}"; git -C "$d" push -q "${serve}/$n.git" main; done`,
    ],
    root,
  );
}

async function upstreamHeads(): Promise<Map<string, string>> {
  const { out } = await run(["sh", "-c", `for n in ${names.join(" ")}; do printf '%s ' $n; git -C "${up}/$n" rev-parse HEAD; done`], root);
  return new Map(out.trim().split("\n").map((l) => l.split(" ") as [string, string]));
}

const rows: Row[] = [];
const sweep: Array<{ transport: Transport; parallel: number | null; cold: number; noop: number }> = [];
const profileFile = join(root, "grex-profile.json");

/** grex sync --json (null parallel: no flag, the default); checks every pack is ok and at the upstream head. */
async function grexSync(ws: string, heads: Map<string, string>, parallel: number | null = PAR, profiles?: Profile[], bin: string[] = GREX): Promise<Cost> {
  rmSync(profileFile, { force: true });
  const cost = await timed([...bin, "sync", ...(parallel === null ? [] : ["--parallel", String(parallel)]), "--json"], ws, undefined, profiles ? { GREX_PROFILE: profileFile } : {});
  const doc = JSON.parse(cost.out) as { packs: Array<{ id: string; result: string; sha_after: string | null }> };
  const bad = doc.packs.filter((p) => p.result !== "ok" || p.sha_after !== heads.get(p.id));
  if (doc.packs.length !== N || bad.length > 0) throw new Error(`grex sync result is wrong: ${JSON.stringify(bad.slice(0, 3))}`);
  if (profiles && existsSync(profileFile)) profiles.push(JSON.parse(readFileSync(profileFile, "utf8")) as Profile);
  return cost;
}

async function checkGitClones(dir: string, heads: Map<string, string>): Promise<void> {
  const { out } = await run(["sh", "-c", `for n in ${names.join(" ")}; do printf '%s ' $n; git -C "$n" rev-parse HEAD; done`], dir);
  for (const line of out.trim().split("\n")) {
    const [n, sha] = line.split(" ");
    if (heads.get(n as string) !== sha) throw new Error(`git clone ${dir}/${n} is at ${sha}, expected ${heads.get(n as string)}`);
  }
}

const cloneLoop = `while read -r url dir; do git clone -q "$url" "$dir" || exit 1; done`;
const cloneXargs = ["xargs", "-P", String(PAR), "-n", "2", "sh", "-c", 'git clone -q "$0" "$1"'];
const pullLoop = `while read -r dir; do git -C "$dir" pull -q --ff-only || exit 1; done`;
const pullXargs = ["xargs", "-P", String(PAR), "-n", "1", "sh", "-c", 'git -C "$0" pull -q --ff-only'];

/** Run the contenders of one repetition, in the order `r` gives (alternating), into `row`. */
async function interleaved(row: Row, r: number, jobs: Array<[Who, () => Promise<Cost>]>): Promise<void> {
  const order = jobs.filter(([who]) => (LOOP || who !== "seq") && (BASE !== null || who !== "base"));
  if (r % 2 === 1) order.reverse();
  for (const [who, job] of order) row.runs[who].push(await job());
}

const newRow = (transport: Transport, cell: Row["cell"], phase: string): Row => ({ transport, cell, phase, runs: { grex: [], base: [], seq: [], par: [] }, profiles: [] });

let round = 0;
try {
  for (const t of TRANSPORTS) {
    log(`bench/sync: ${t} transport (${((performance.now() - started) / 1000).toFixed(0)} s so far)`);
    const cloneList = `${names.map((n) => `${urlOf(t, n)} ${n}`).join("\n")}\n`;
    const dirList = `${names.join("\n")}\n`;
    let heads = await upstreamHeads();

    // Cold clone into fresh directories, COLD_RUNS times; the order alternates so
    // background load on a small machine does not always hit the same contender.
    let ws = "";
    let bws = "";
    let seq = "";
    let par = "";
    const cold = newRow(t, "cold", `cold clone (${COLD_RUNS} runs)`);
    for (let r = 0; r < COLD_RUNS; r++) {
      ws = join(root, `ws-${t}-${r}`);
      bws = join(root, `ws-base-${t}-${r}`);
      seq = join(root, `git-seq-${t}-${r}`);
      par = join(root, `git-par-${t}-${r}`);
      for (const d of [ws, bws, seq, par]) mkdirSync(d);
      for (const [bin, dir] of [[GREX, ws], ...(BASE ? [[BASE, bws]] : [])] as Array<[string[], string]>) {
        await run([...bin, "init"], dir);
        writeFileSync(join(dir, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: urlOf(t, n), path: n }))));
        const imp = await timed([...bin, "import", "--from-repos-json", "REPOS.json"], dir);
        log(`  grex import of ${N} entries: ${imp.ms.toFixed(0)} ms`);
      }
      const [w, bw, sd, pd] = [ws, bws, seq, par];
      await interleaved(cold, r, [
        ["grex", () => grexSync(w, heads, PAR, cold.profiles)],
        ["base", () => grexSync(bw, heads, PAR, undefined, BASE ?? GREX)],
        ["seq", () => timed(["sh", "-c", cloneLoop], sd, cloneList)],
        ["par", () => timed(cloneXargs, pd, cloneList)],
      ]);
      if (LOOP) await checkGitClones(seq, heads);
      await checkGitClones(par, heads);
    }
    rows.push(cold);

    const noop = newRow(t, "no-op", `no-op sync (${RUNS} runs)`);
    for (let i = 0; i < RUNS; i++) {
      await interleaved(noop, i, [
        ["grex", () => grexSync(ws, heads, PAR, noop.profiles)],
        ["base", () => grexSync(bws, heads, PAR, undefined, BASE ?? GREX)],
        ["seq", () => timed(["sh", "-c", pullLoop], seq, dirList)],
        ["par", () => timed(pullXargs, par, dirList)],
      ]);
    }
    rows.push(noop);

    const change = newRow(t, "change", `one new commit each (${CHANGE_RUNS} runs)`);
    for (let i = 0; i < CHANGE_RUNS; i++) {
      await commitEverywhere(++round);
      heads = await upstreamHeads();
      const h = heads;
      await interleaved(change, i, [
        ["grex", () => grexSync(ws, h, PAR, change.profiles)],
        ["base", () => grexSync(bws, h, PAR, undefined, BASE ?? GREX)],
        ["seq", () => timed(["sh", "-c", pullLoop], seq, dirList)],
        ["par", () => timed(pullXargs, par, dirList)],
      ]);
      if (LOOP) await checkGitClones(seq, heads);
      await checkGitClones(par, heads);
    }
    rows.push(change);
  }
  if (process.env.BENCH_SWEEP === "1") {
    const heads = await upstreamHeads();
    for (const t of TRANSPORTS) {
      for (const parallel of [2, 4, 8, 16, null]) {
        const ws = join(root, `ws-sweep-${t}-${parallel ?? "default"}`);
        mkdirSync(ws);
        await run([...GREX, "init"], ws);
        writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: urlOf(t, n), path: n }))));
        await run([...GREX, "import", "--from-repos-json", "REPOS.json"], ws);
        const cold = (await grexSync(ws, heads, parallel)).ms;
        const noop = median([(await grexSync(ws, heads, parallel)).ms, (await grexSync(ws, heads, parallel)).ms, (await grexSync(ws, heads, parallel)).ms]);
        sweep.push({ transport: t, parallel, cold, noop });
      }
    }
  }
} finally {
  await server?.stop();
  if (process.env.BENCH_KEEP === "1") log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}

console.log(`\nSync benchmark: ${N} repositories, ${availableParallelism()} CPUs, bun ${Bun.version}, ${gitVersion}`);
printReport(rows, { par: PAR, cpus: availableParallelism(), loop: LOOP, base: BASE !== null });
if (sweep.length > 0) {
  const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log("\ngrex by --parallel (cold clone, no-op median of 3):");
  for (const r of sweep) {
    const flag = r.parallel === null ? "default    " : `--parallel ${String(r.parallel).padStart(2)}`;
    console.log(`  ${r.transport.padEnd(5)}  ${flag}  cold ${fmt(r.cold)}  no-op ${fmt(r.noop)}`);
  }
}
console.log(`\nTotal bench time ${((performance.now() - started) / 1000).toFixed(0)} s.`);
