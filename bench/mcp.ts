// MCP server latency (`bun bench/mcp.ts`): spawn → initialize response and
// spawn → tools/list response of `grex serve` (compiled and from source),
// beside a compiled hello-world (the floor) and a minimal MCP SDK stdio server
// with two tools (bench/fixtures/sdk-server.ts) built the same way. Then 1,000
// sequential tools/call round trips over one connection, with peak RSS (VmHWM).
// Medians of BENCH_RUNS runs (default 25); everything is measured in this run.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StdioConn } from "./fixtures/conn.ts";
import { COMPILE_FLAGS, GREX_ENTRY as GREX, grexBuildCommand } from "../scripts/compile.ts";

const RUNS = Math.max(20, Number(process.env.BENCH_RUNS ?? 25));
const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const PACKS = 50;
const repo = join(import.meta.dir, "..");
const bun = process.execPath;
const root = mkdtempSync(join(tmpdir(), "grex-bench-mcp-"));
const env: Record<string, string | undefined> = { ...process.env, HOME: join(root, "home") };
mkdirSync(env.HOME as string, { recursive: true });

// ---- binaries, all built with the project's release flags ----
function build(entry: string, out: string): string | null {
  const r = Bun.spawnSync(entry === GREX ? grexBuildCommand(out) : [bun, "build", ...COMPILE_FLAGS, entry, "--outfile", out], { cwd: repo, env, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode === 0) return out;
  console.error(`build of ${entry} failed; its rows are skipped:\n${r.stderr.toString().trim()}`);
  return null;
}
writeFileSync(join(root, "hello.ts"), 'process.stdout.write("hello\\n");\n');
const helloBin = build(join(root, "hello.ts"), join(root, "hello"));
const grexBin = build(GREX, join(root, "grex"));
const sdkBin = build(join(import.meta.dir, "fixtures/sdk-server.ts"), join(root, "sdk-server"));
if (!helloBin) throw new Error("cannot build the hello-world floor");

// ---- a workspace with registered packs (ls reads the manifest and lockfile only) ----
const ws = join(root, "ws");
mkdirSync(ws);
let manifest = "";
for (let i = 0; i < PACKS; i++) {
  manifest += `${JSON.stringify({ op: "add", ts: "2026-01-01T00:00:00.000Z", id: `pack-${i}`, schema_version: "1", url: `https://example.invalid/pack-${i}.git`, path: `pack-${i}`, type: "meta", ref: null })}\n`;
}
writeFileSync(join(ws, "grex.jsonl"), manifest);
writeFileSync(join(ws, "grex.lock.jsonl"), "");

// ---- one connection: spawn, write lines, read response lines ----
const line = (m: object) => `${JSON.stringify(m)}\n`;
const INIT = line({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } });
const INITIALIZED = line({ jsonrpc: "2.0", method: "notifications/initialized" });
const LIST = line({ jsonrpc: "2.0", id: 2, method: "tools/list" });


const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Median ms from spawn until the first line (`until` 0) or the response to request `until`; peak RSS of the last run. */
async function series(cmd: string[], input: string, until: number): Promise<{ ms: number; rss: number | null }> {
  let rss: number | null = null;
  const once = async () => {
    const t0 = Bun.nanoseconds();
    const c = new StdioConn(cmd, ws, env);
    if (input) c.write(input);
    if (until === 0) await c.next();
    else await c.response(until);
    const ms = (Bun.nanoseconds() - t0) / 1e6;
    rss = c.peakMiB();
    await c.close();
    return ms;
  };
  await once(); // warm the page cache
  const xs: number[] = [];
  for (let i = 0; i < RUNS; i++) xs.push(await once());
  return { ms: median(xs), rss };
}

/** Peak RSS in MiB of a process too short-lived to read /proc from (GNU time, when installed). */
function gnuTimePeak(cmd: string[]): number | null {
  if (!Bun.which("/usr/bin/time")) return null;
  const r = Bun.spawnSync(["/usr/bin/time", "-f", "%M", ...cmd], { env, stdout: "ignore", stderr: "pipe" });
  const kb = Number(r.stderr.toString().trim().split("\n").pop());
  return Number.isFinite(kb) && kb > 0 ? kb / 1024 : null;
}

/** CALLS sequential tools/call round trips over one connection. */
async function roundTrips(cmd: string[], call: object): Promise<{ totalMs: number; perCallMedianUs: number; rss: number | null }> {
  const c = new StdioConn(cmd, ws, env);
  c.write(INIT + INITIALIZED);
  await c.response(1);
  const per: number[] = [];
  const t0 = Bun.nanoseconds();
  for (let i = 0; i < CALLS; i++) {
    const id = 100 + i;
    const t = Bun.nanoseconds();
    c.write(line({ jsonrpc: "2.0", id, method: "tools/call", params: call }));
    const r = await c.response(id);
    per.push((Bun.nanoseconds() - t) / 1e3);
    if ((r.result as { isError?: boolean }).isError) throw new Error(`call failed: ${JSON.stringify(r.result)}`);
  }
  const totalMs = (Bun.nanoseconds() - t0) / 1e6;
  const rss = c.peakMiB();
  await c.close();
  return { totalMs, perCallMedianUs: median(per), rss };
}

// ---- run ----
type Row = [label: string, ms: number, rss: number | null];
const rows: Row[] = [];
const floor = await series([helloBin], "", 0);
rows.push(["compiled hello-world: spawn → first line (floor)", floor.ms, floor.rss ?? gnuTimePeak([helloBin])]);

const servers: Array<[string, string[] | null]> = [
  ["compiled grex serve", grexBin ? [grexBin, "serve"] : null],
  ["bun src/cli/main.ts serve", [bun, join(repo, "src/cli/main.ts"), "serve"]],
  ["compiled SDK server (2 tools)", sdkBin ? [sdkBin] : null],
  ["bun SDK server (2 tools)", [bun, join(import.meta.dir, "fixtures/sdk-server.ts")]],
];
for (const [label, cmd] of servers) {
  if (!cmd) continue;
  const init = await series(cmd, INIT, 1);
  rows.push([`${label}: spawn → initialize`, init.ms, init.rss]);
  const list = await series(cmd, INIT + INITIALIZED + LIST, 2);
  rows.push([`${label}: spawn → tools/list`, list.ms, list.rss]);
}

const fmt = (n: number | null, d = 1) => (n === null ? "n/a" : n.toFixed(d));
console.log(`MCP server benchmark: median of ${RUNS} runs each, all measured in this run (${PACKS}-pack workspace)\n`);
console.log(`${"case".padEnd(58)} ${"ms".padStart(8)} ${"× floor".padStart(8)} ${"peak MiB".padStart(9)}`);
for (const [label, ms, rss] of rows) {
  console.log(`${label.padEnd(58)} ${ms.toFixed(2).padStart(8)} ${(ms / floor.ms).toFixed(2).padStart(8)} ${fmt(rss).padStart(9)}`);
}

console.log(`\n${CALLS} sequential tools/call round trips over one connection\n`);
console.log(`${"case".padEnd(58)} ${"total ms".padStart(9)} ${"median µs".padStart(10)} ${"peak MiB".padStart(9)}`);
const trips: Array<[string, string[] | null, object]> = [
  ["compiled grex serve, ls", grexBin ? [grexBin, "serve"] : null, { name: "ls", arguments: {} }],
  ["bun src/cli/main.ts serve, ls", [bun, join(repo, "src/cli/main.ts"), "serve"], { name: "ls", arguments: {} }],
  ["compiled SDK server, add", sdkBin ? [sdkBin] : null, { name: "add", arguments: { a: 1, b: 2 } }],
];
for (const [label, cmd, call] of trips) {
  if (!cmd) continue;
  const r = await roundTrips(cmd, call);
  console.log(`${label.padEnd(58)} ${r.totalMs.toFixed(0).padStart(9)} ${r.perCallMedianUs.toFixed(0).padStart(10)} ${fmt(r.rss).padStart(9)}`);
}

rmSync(root, { recursive: true, force: true });
