// Startup latency (`bun bench/startup.ts`): grex compiled (as `npm run build`
// does) against the true floor, a compiled hello-world writing through Bun's
// native stdout, all measured in this run. With hyperfine installed, processes
// are timed by `hyperfine -N` (no shell), in ROUNDS rounds; within a round
// each case is timed right after its own floor measurement, and the ratio
// reported is the median of those paired ratios (on a shared machine the load
// drifts within a round), the ms the median of the rounds' medians. Also shown for reference: the same hello-world through
// process.stdout (Node's stream machinery costs ~10 ms to build), and for
// `serve` a minimal MCP SDK stdio server compiled the same way.
//
// Env: BENCH_RUNS (runs per case per round, default 20), BENCH_ROUNDS (default 3).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeReposScript } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";
import { COMPILE_FLAGS, grexBuildCommand } from "../scripts/compile.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const root = mkdtempSync(join(tmpdir(), "grex-bench-startup-"));
const repo = join(import.meta.dir, "..");
const bun = process.execPath;
const env = benchEnv(join(root, "home"));
mkdirSync(env.HOME as string, { recursive: true });
const log = (m: string) => Bun.write(Bun.stderr, `${m}\n`);

function sh(cmd: string[], cwd = root): void {
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
}

// Binaries, all built the way `npm run build` builds grex.
const build = (entry: string, out: string) => {
  sh([bun, "build", ...COMPILE_FLAGS, entry, "--outfile", join(root, out)], repo);
  return join(root, out);
};
writeFileSync(join(root, "floor.ts"), 'await Bun.write(Bun.stdout, "hello\\n");\n');
writeFileSync(join(root, "node-stdout.ts"), 'process.stdout.write("hello\\n");\n');
log("bench/startup: building binaries");
const floorBin = build(join(root, "floor.ts"), "floor");
const nodeStdoutBin = build(join(root, "node-stdout.ts"), "node-stdout");
const grexBin = join(root, "grex");
sh(grexBuildCommand(grexBin), repo);
const sdkBin = build(join(repo, "bench/fixtures/sdk-server.ts"), "sdk-server");

// Workspaces: 1,000 registered packs for ls; 100 installed realistic packs for status.
const big = join(root, "ws-1000");
mkdirSync(big);
let manifest = "";
for (let i = 0; i < 1000; i++) {
  manifest += `${JSON.stringify({ op: "add", ts: "2026-01-01T00:00:00.000Z", id: `pack-${i}`, schema_version: "1", url: `https://example.invalid/pack-${i}.git`, path: `pack-${i}`, type: "meta", ref: null })}\n`;
}
writeFileSync(join(big, "grex.jsonl"), manifest);
writeFileSync(join(big, "grex.lock.jsonl"), "");
// The same workspace where the fold snapshot cannot be written (.grex/.state is a file): every run folds all lines.
const bigFold = join(root, "ws-1000-fold");
mkdirSync(join(bigFold, ".grex"), { recursive: true });
writeFileSync(join(bigFold, ".grex", ".state"), "not a directory: no fold snapshot\n");
writeFileSync(join(bigFold, "grex.jsonl"), manifest);
writeFileSync(join(bigFold, "grex.lock.jsonl"), "");

log("bench/startup: making 100 repositories (30 commits, 50 files each) and syncing them");
const hundred = join(root, "ws-100");
const up = join(root, "upstream");
const streams = join(root, "streams");
for (const d of [hundred, up, streams]) mkdirSync(d);
const names = Array.from({ length: 100 }, (_, i) => `r${i}`);
writeFileSync(join(root, "make.sh"), makeReposScript(names, up, streams));
sh(["sh", join(root, "make.sh")]);
writeFileSync(join(hundred, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: join(up, n), path: n }))));
sh([grexBin, "init"], hundred);
sh([grexBin, "import", "--from-repos-json", "REPOS.json"], hundred);
sh([grexBin, "sync", "--parallel", "8"], hundred);
await Bun.sleep(1100); // let the index files stop being "racy" (same second as the files)

interface Case {
  label: string;
  cmd: string[];
  cwd: string;
}
const cases: Case[] = [
  { label: "floor: compiled hello-world, Bun.stdout", cmd: [floorBin], cwd: root },
  { label: "ref: compiled hello-world, process.stdout", cmd: [nodeStdoutBin], cwd: root },
  { label: "grex --version", cmd: [grexBin, "--version"], cwd: root },
  { label: "grex --help", cmd: [grexBin, "--help"], cwd: root },
  { label: "grex ls --json (1,000 packs)", cmd: [grexBin, "ls", "--json"], cwd: big },
  { label: "grex ls --json (1,000, no fold snapshot)", cmd: [grexBin, "ls", "--json"], cwd: bigFold },
  { label: "grex status --json (100 packs)", cmd: [grexBin, "status", "--json"], cwd: hundred },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const hyperfine = Bun.which("hyperfine");

/** Median ms of RUNS runs of `c`, by hyperfine -N when installed. */
function timeCase(c: Case): number {
  if (!hyperfine) {
    const xs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = Bun.nanoseconds();
      const p = Bun.spawnSync(c.cmd, { cwd: c.cwd, env, stdout: "ignore", stderr: "ignore" });
      if (p.exitCode !== 0) throw new Error(`${c.label} exited ${p.exitCode}`);
      xs.push((Bun.nanoseconds() - t0) / 1e6);
    }
    return median(xs);
  }
  const json = join(root, "hf.json");
  const p = Bun.spawnSync([hyperfine, "-N", "-w", "3", "-r", String(RUNS), "--export-json", json, "--", c.cmd.map((a) => `'${a}'`).join(" ")], {
    cwd: c.cwd,
    env,
    stdout: "ignore",
    stderr: "pipe",
  });
  if (p.exitCode !== 0) throw new Error(`hyperfine ${c.label}: ${p.stderr.toString()}`);
  const res = JSON.parse(readFileSync(json, "utf8")) as { results: Array<{ median: number }> };
  return (res.results[0]?.median ?? Number.NaN) * 1000;
}

/**
 * Per case, its median ms in each round and its ratio to a floor timed right
 * before it: on a shared machine the load drifts within a round, so each
 * case is held against its own floor measurement, not one taken minutes apart.
 */
function timeCases(): { times: Map<string, number[]>; ratios: Map<string, number[]> } {
  const times = new Map<string, number[]>(cases.map((c) => [c.label, []]));
  const ratios = new Map<string, number[]>(cases.map((c) => [c.label, []]));
  const [floorCase, ...rest] = cases as [Case, ...Case[]];
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of rest) {
      const floorMs = timeCase(floorCase);
      const ms = timeCase(c);
      times.get(floorCase.label)?.push(floorMs);
      times.get(c.label)?.push(ms);
      ratios.get(c.label)?.push(ms / floorMs);
    }
  }
  ratios.set(floorCase.label, [1]);
  return { times, ratios };
}

/** Peak RSS (MiB) of one run, read by GNU time when present. */
function peakRss(cmd: string[], cwd: string): string {
  if (!Bun.which("/usr/bin/time")) return "n/a";
  const r = Bun.spawnSync(["/usr/bin/time", "-f", "%M", ...cmd], { cwd, env, stdout: "ignore", stderr: "pipe" });
  const kb = Number(r.stderr.toString().trim().split("\n").pop());
  return Number.isFinite(kb) ? (kb / 1024).toFixed(1) : "n/a";
}

/** Spawn, send one line, time until the first line comes back. */
async function firstLine(cmd: string[], cwd: string, input: string | null): Promise<number> {
  const t0 = Bun.nanoseconds();
  const p = Bun.spawn(cmd, { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
  if (input !== null) {
    p.stdin.write(input);
    p.stdin.flush();
  }
  const reader = p.stdout.getReader();
  let got = "";
  while (!got.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    got += new TextDecoder().decode(value);
  }
  const ms = (Bun.nanoseconds() - t0) / 1e6;
  p.stdin.end();
  p.kill();
  await p.exited;
  if (input !== null && !got.includes('"protocolVersion"')) throw new Error(`${cmd.join(" ")} did not answer initialize: ${got}`);
  return ms;
}

const init = `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } })}\n`;
/** spawn → first line, interleaved per iteration: floor (hello-world), grex serve, SDK server. */
async function serveTimes(): Promise<{ floor: number; grex: number; sdk: number }> {
  const xs = { floor: [] as number[], grex: [] as number[], sdk: [] as number[] };
  for (let i = 0; i < 2; i++) {
    await firstLine([floorBin], root, null);
    await firstLine([grexBin, "serve"], big, init);
    await firstLine([sdkBin], root, init);
  }
  for (let i = 0; i < RUNS * ROUNDS; i++) {
    xs.floor.push(await firstLine([floorBin], root, null));
    xs.grex.push(await firstLine([grexBin, "serve"], big, init));
    xs.sdk.push(await firstLine([sdkBin], root, init));
  }
  return { floor: median(xs.floor), grex: median(xs.grex), sdk: median(xs.sdk) };
}

log(`bench/startup: timing (${hyperfine ? "hyperfine -N" : "Bun.spawnSync"}, ${ROUNDS} rounds × ${RUNS} runs)`);
const { times, ratios } = timeCases();
const serve = await serveTimes();
const ms = (label: string) => median(times.get(label) ?? []);
const ratio = (label: string) => median(ratios.get(label) ?? []);

const rows: string[][] = [];
for (const c of cases) rows.push([c.label, ms(c.label).toFixed(2), ratio(c.label).toFixed(2), peakRss(c.cmd, c.cwd)]);
rows.push(["serve: floor (hello-world spawn → first line)", serve.floor.toFixed(2), "1.00", "-"]);
rows.push(["serve: grex serve spawn → initialize reply", serve.grex.toFixed(2), (serve.grex / serve.floor).toFixed(2), peakRss([grexBin, "serve"], big)]);
rows.push(["serve: minimal SDK server spawn → initialize", serve.sdk.toFixed(2), (serve.sdk / serve.floor).toFixed(2), "-"]);

console.log(`startup benchmark: ${hyperfine ? "hyperfine -N" : "spawnSync"}, median of ${ROUNDS} rounds × ${RUNS} runs; × floor = median of each round's case / the floor timed just before it`);
console.log(`${"case".padEnd(48)} ${"ms".padStart(8)} ${"× floor".padStart(8)} ${"peak MiB".padStart(9)}`);
for (const [label, t, ratio, rss] of rows) console.log(`${(label as string).padEnd(48)} ${(t as string).padStart(8)} ${(ratio as string).padStart(8)} ${(rss as string).padStart(9)}`);

const goal = (what: string, ratio: number, max: number) => console.log(`  ${what}: ${ratio.toFixed(2)}× (goal ≤ ${max}×) ${ratio <= max ? "ok" : "NOT MET"}`);
console.log("Goals (same-run ratios):");
goal("--version / floor", ratio("grex --version"), 1.3);
goal("ls --json (1,000) / floor", ratio("grex ls --json (1,000 packs)"), 2.5);
goal("status --json (100) / floor", ratio("grex status --json (100 packs)"), 6);
goal("serve → initialize / floor", serve.grex / serve.floor, 1.5);
goal("serve → initialize / SDK server", serve.grex / serve.sdk, 0.3);
rmSync(root, { recursive: true, force: true });
