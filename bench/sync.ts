// Sync throughput (`bun bench/sync.ts`): N realistic repositories (30 commits,
// 50 files each, deterministic: bench/fixtures/repos.ts) over plain paths,
// file:// URLs and loopback smart HTTP (`git http-backend` behind a Bun server
// in this process). grex — the spawned CLI, one workspace registering all N through
// REPOS.json + `grex import`, then `grex sync --parallel 8` — beside plain git
// run the same way in the same run: a sequential shell loop and `xargs -P 8`.
// Three phases: cold clone, no-op sync/pull, and sync/pull with one new
// commit per repository. Prints a table with ratios against `xargs -P 8`.
//
// Env: BENCH_N (default 100), BENCH_RUNS (no-op repetitions, default 3),
// BENCH_COLD_RUNS (cold clone repetitions, best taken, default 2),
// BENCH_TRANSPORTS (default "local,file,http"), BENCH_SWEEP=1 also times grex
// cold clone and no-op sync on each transport at --parallel 2/4/8/16 and with
// no flag (the default), BENCH_KEEP=1 keeps the temp dir.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { makeReposScript, REALISTIC } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";
import { grexBuildCommand } from "../scripts/compile.ts";

const N = Number(process.env.BENCH_N ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 2);
const started = performance.now();
const PAR = 8;
type Transport = "local" | "file" | "http";
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

/** Run a command to completion without blocking this process (it serves HTTP); returns stdout. */
async function run(cmd: string[], cwd: string, stdin?: string): Promise<string> {
  const p = Bun.spawn(cmd, {
    cwd,
    env,
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  return out;
}

async function timed(cmd: string[], cwd: string, stdin?: string): Promise<{ ms: number; out: string }> {
  const t0 = performance.now();
  const out = await run(cmd, cwd, stdin);
  return { ms: performance.now() - t0, out };
}

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
await run(["sh", "-c", setupScript], root);
const gitVersion = (await run(["git", "--version"], root)).trim();
const server = await startGitHttpServer(serve);
const names = Array.from({ length: N }, (_, i) => `r${i}`);
const urlOf = (t: Transport, name: string) =>
  t === "local" ? join(up, name) : t === "file" ? `file://${join(up, name)}` : `${server.url}/${name}.git`;

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
  const out = await run(["sh", "-c", `for n in ${names.join(" ")}; do printf '%s ' $n; git -C "${up}/$n" rev-parse HEAD; done`], root);
  return new Map(out.trim().split("\n").map((l) => l.split(" ") as [string, string]));
}

interface Row {
  transport: string;
  phase: string;
  grex: number;
  seq: number;
  par: number;
}
const rows: Row[] = [];
const sweep: Array<{ transport: Transport; parallel: number | null; cold: number; noop: number }> = [];

/** grex sync --json (null parallel: no flag, the default); checks every pack is ok and at the upstream head. */
async function grexSync(ws: string, heads: Map<string, string>, parallel: number | null = PAR): Promise<number> {
  const { ms, out } = await timed([...GREX, "sync", ...(parallel === null ? [] : ["--parallel", String(parallel)]), "--json"], ws);
  const doc = JSON.parse(out) as { packs: Array<{ id: string; result: string; sha_after: string | null }> };
  const bad = doc.packs.filter((p) => p.result !== "ok" || p.sha_after !== heads.get(p.id));
  if (doc.packs.length !== N || bad.length > 0) throw new Error(`grex sync result is wrong: ${JSON.stringify(bad.slice(0, 3))}`);
  return ms;
}

async function checkGitClones(dir: string, heads: Map<string, string>): Promise<void> {
  const out = await run(["sh", "-c", `for n in ${names.join(" ")}; do printf '%s ' $n; git -C "$n" rev-parse HEAD; done`], dir);
  for (const line of out.trim().split("\n")) {
    const [n, sha] = line.split(" ");
    if (heads.get(n as string) !== sha) throw new Error(`git clone ${dir}/${n} is at ${sha}, expected ${heads.get(n as string)}`);
  }
}

const cloneLoop = `while read -r url dir; do git clone -q "$url" "$dir" || exit 1; done`;
const cloneXargs = ["xargs", "-P", String(PAR), "-n", "2", "sh", "-c", 'git clone -q "$0" "$1"'];
const pullLoop = `while read -r dir; do git -C "$dir" pull -q --ff-only || exit 1; done`;
const pullXargs = ["xargs", "-P", String(PAR), "-n", "1", "sh", "-c", 'git -C "$0" pull -q --ff-only'];

let round = 0;
try {
  for (const t of TRANSPORTS) {
    log(`bench/sync: ${t} transport (${((performance.now() - started) / 1000).toFixed(0)} s so far)`);
    const cloneList = `${names.map((n) => `${urlOf(t, n)} ${n}`).join("\n")}\n`;
    const dirList = `${names.join("\n")}\n`;
    let heads = await upstreamHeads();

    // Cold clone, best of COLD_RUNS into fresh directories; the order alternates so
    // background load on a small machine does not always hit the same contender.
    let ws = "";
    let seq = "";
    let par = "";
    const cold = { grex: Infinity, seq: Infinity, par: Infinity };
    for (let r = 0; r < COLD_RUNS; r++) {
      ws = join(root, `ws-${t}-${r}`);
      seq = join(root, `git-seq-${t}-${r}`);
      par = join(root, `git-par-${t}-${r}`);
      for (const d of [ws, seq, par]) mkdirSync(d);
      await run([...GREX, "init"], ws);
      writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: urlOf(t, n), path: n }))));
      const imp = await timed([...GREX, "import", "--from-repos-json", "REPOS.json"], ws);
      log(`  grex import of ${N} entries: ${imp.ms.toFixed(0)} ms`);
      const jobs: Array<[keyof typeof cold, () => Promise<number>]> = [
        ["grex", () => grexSync(ws, heads)],
        ["seq", async () => (await timed(["sh", "-c", cloneLoop], seq, cloneList)).ms],
        ["par", async () => (await timed(cloneXargs, par, cloneList)).ms],
      ];
      if (r % 2 === 1) jobs.reverse();
      for (const [k, job] of jobs) cold[k] = Math.min(cold[k], await job());
      await checkGitClones(seq, heads);
      await checkGitClones(par, heads);
    }
    rows.push({ transport: t, phase: `cold clone (best of ${COLD_RUNS})`, ...cold });

    const g: number[] = [];
    const s: number[] = [];
    const p: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      g.push(await grexSync(ws, heads));
      s.push((await timed(["sh", "-c", pullLoop], seq, dirList)).ms);
      p.push((await timed(pullXargs, par, dirList)).ms);
    }
    rows.push({ transport: t, phase: `no-op sync (median of ${RUNS})`, grex: median(g), seq: median(s), par: median(p) });

    await commitEverywhere(++round);
    heads = await upstreamHeads();
    const gOne = await grexSync(ws, heads);
    const sOne = (await timed(["sh", "-c", pullLoop], seq, dirList)).ms;
    const pOne = (await timed(pullXargs, par, dirList)).ms;
    await checkGitClones(seq, heads);
    await checkGitClones(par, heads);
    rows.push({ transport: t, phase: "one new commit each", grex: gOne, seq: sOne, par: pOne });
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
        const cold = await grexSync(ws, heads, parallel);
        const noop = median([await grexSync(ws, heads, parallel), await grexSync(ws, heads, parallel), await grexSync(ws, heads, parallel)]);
        sweep.push({ transport: t, parallel, cold, noop });
      }
    }
  }
} finally {
  await server.stop();
  if (process.env.BENCH_KEEP === "1") log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}

// --- report
const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const header = ["transport", "phase", "grex --parallel 8", "git loop", `git xargs -P ${PAR}`, "grex/xargs", "grex/loop"];
const table = rows.map((r) => [
  r.transport,
  r.phase,
  fmt(r.grex),
  fmt(r.seq),
  fmt(r.par),
  `${(r.grex / r.par).toFixed(2)}×`,
  `${(r.grex / r.seq).toFixed(2)}×`,
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] as string).length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join("  ");
console.log(`\nSync benchmark: ${N} repositories, ${availableParallelism()} CPUs, bun ${Bun.version}, ${gitVersion}`);
console.log("(clone for the cold phase, `git pull --ff-only` for the others; ratio < 1 = grex faster)\n");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const r of table) console.log(line(r));

if (sweep.length > 0) {
  console.log("\ngrex by --parallel (cold clone, no-op median of 3):");
  for (const r of sweep) {
    const flag = r.parallel === null ? "default    " : `--parallel ${String(r.parallel).padStart(2)}`;
    console.log(`  ${r.transport.padEnd(5)}  ${flag}  cold ${fmt(r.cold)}  no-op ${fmt(r.noop)}`);
  }
}
console.log(`\nTotal bench time ${((performance.now() - started) / 1000).toFixed(0)} s. Goals (grex / xargs -P ${PAR}, same run):`);
const goals: Array<[string, number]> = [
  ["no-op", 0.5],
  ["one new commit", 0.8],
  ["cold clone", 0.8],
];
for (const r of rows) {
  const g = goals.find(([prefix]) => r.phase.startsWith(prefix));
  if (!g) continue;
  const ratio = r.grex / r.par;
  console.log(`  ${r.transport.padEnd(5)} ${g[0].padEnd(15)} ${ratio.toFixed(2)}× (goal ≤ ${g[1]}×) ${ratio <= g[1] ? "ok" : "NOT MET"}`);
}
