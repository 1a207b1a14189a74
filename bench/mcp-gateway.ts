// The gateway to pack-declared MCP servers (`bun bench/mcp-gateway.ts`), all
// measured in this run on a workspace whose one installed pack declares three
// stdio servers (the compiled SDK reference server, bench/fixtures/sdk-server.ts):
//  1. compiled `grex serve`: spawn → tools/list answered, cold (every child
//     spawned and listed) vs cached (.grex/.state/mcp-tools), hyperfine -N
//     through a compiled driver (bench/fixtures/mcp-drive.ts), which also runs
//     the compiled hello-world floor;
//  2. spawn → initialize with the three servers declared, against that floor
//     (goal: at most 3×);
//  3. p50/p99 of BENCH_CALLS (default 2,000) sequential tools/call round trips
//     to one child: through grex vs the same child spoken to directly (goal:
//     under 0.3 ms added at p50).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StdioConn } from "./fixtures/conn.ts";
import { COMPILE_FLAGS, GREX_ENTRY as GREX, grexBuildCommand } from "../scripts/compile.ts";

const CALLS = Math.max(200, Number(process.env.BENCH_CALLS ?? 2000));
const RUNS = Math.max(10, Number(process.env.BENCH_RUNS ?? 20));
const repo = join(import.meta.dir, "..");
const bun = process.execPath;
const root = mkdtempSync(join(tmpdir(), "grex-bench-gateway-"));
const env: Record<string, string | undefined> = { ...process.env, HOME: join(root, "home") };
mkdirSync(env.HOME as string, { recursive: true });

if (!Bun.which("hyperfine")) throw new Error("hyperfine is needed (https://github.com/sharkdp/hyperfine)");

// ---- binaries, built with the project's release flags ----
function build(entry: string, out: string): string {
  const r = Bun.spawnSync(entry === GREX ? grexBuildCommand(out) : [bun, "build", ...COMPILE_FLAGS, entry, "--outfile", out], { cwd: repo, env, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`build of ${entry} failed:\n${r.stderr.toString().trim()}`);
  return out;
}
writeFileSync(join(root, "hello.ts"), 'await Bun.write(Bun.stdout, "hello\\n");\n');
const helloBin = build(join(root, "hello.ts"), join(root, "hello"));
const grexBin = build(GREX, join(root, "grex"));
const childBin = build(join(import.meta.dir, "fixtures/sdk-server.ts"), join(root, "sdk-server"));
const driveBin = build(join(import.meta.dir, "fixtures/mcp-drive.ts"), join(root, "mcp-drive"));

// ---- a workspace with one installed pack that declares three servers ----
const ws = join(root, "ws");
const packDir = join(ws, "servers");
mkdirSync(join(packDir, ".grex"), { recursive: true });
const SERVERS = ["one", "two", "three"];
writeFileSync(
  join(packDir, ".grex", "pack.yaml"),
  [
    'schema_version: "1"',
    "name: servers",
    "type: declarative",
    "mcp:",
    "  servers:",
    ...SERVERS.flatMap((id) => [`    - id: ${id}`, "      transport: stdio", `      command: [${JSON.stringify(childBin)}]`]),
    "",
  ].join("\n"),
);
const ts = "2026-01-01T00:00:00Z";
writeFileSync(join(ws, "grex.jsonl"), `${JSON.stringify({ op: "add", ts, id: "servers", schema_version: "1", url: "https://example.invalid/servers.git", path: "servers", type: "declarative", ref: null })}\n`);
writeFileSync(join(ws, "grex.lock.jsonl"), `${JSON.stringify({ id: "servers", sha: "", branch: "main", installed_at: ts, actions_hash: "", type: "declarative" })}\n`);
const cacheDir = join(ws, ".grex", ".state", "mcp-tools");

// ---- hyperfine -N ----
interface HfResult {
  median: number;
  mean: number;
}
function hyperfine(cmd: string[], opts: { prepare?: string[] } = {}): HfResult {
  const out = join(root, "hf.json");
  const args = ["hyperfine", "-N", "--warmup", "2", "--runs", String(RUNS), "--export-json", out, "--style", "none"];
  if (opts.prepare) args.push("--prepare", opts.prepare.join(" "));
  args.push(cmd.join(" "));
  const r = Bun.spawnSync(args, { cwd: ws, env, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`hyperfine failed for ${cmd.join(" ")}:\n${r.stderr.toString()}`);
  const res = (JSON.parse(readFileSync(out, "utf8")) as { results: { median: number; mean: number }[] }).results[0] as HfResult;
  return { median: res.median * 1000, mean: res.mean * 1000 };
}

const floor = hyperfine([driveBin, "line", "--", helloBin]);
const init = hyperfine([driveBin, "init", "--", grexBin, "serve"]);
const cold = hyperfine([driveBin, "list", "--", grexBin, "serve"], { prepare: ["rm", "-rf", cacheDir] });
// The cold runs left the cache behind; make sure it is there before the cached runs.
const warm = Bun.spawnSync([driveBin, "list", "--", grexBin, "serve"], { cwd: ws, env });
if (warm.exitCode !== 0) throw new Error("warming the tool-list cache failed");
const cached = hyperfine([driveBin, "list", "--", grexBin, "serve"]);

// ---- tools/call round trips: through grex vs direct ----
const line = (m: object) => `${JSON.stringify(m)}\n`;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] as number;

async function roundTrips(cmd: string[], tool: string): Promise<{ p50: number; p99: number }> {
  const c = new StdioConn(cmd, ws, env);
  c.write(line({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } }));
  await c.response(1);
  c.write(line({ jsonrpc: "2.0", method: "notifications/initialized" }));
  const per: number[] = [];
  for (let i = 0; i < CALLS + 50; i++) {
    const id = 100 + i;
    const t = Bun.nanoseconds();
    c.write(line({ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: { a: i, b: 1 } } }));
    const r = await c.response(id);
    if (i >= 50) per.push((Bun.nanoseconds() - t) / 1e6); // the first 50 warm up (and spawn the child through grex)
    const result = r.result as { isError?: boolean; structuredContent?: { sum?: number } } | undefined;
    if (!result || result.isError || result.structuredContent?.sum !== i + 1) throw new Error(`call ${tool} failed: ${JSON.stringify(r)}`);
  }
  await c.close();
  return { p50: percentile(per, 50), p99: percentile(per, 99) };
}

const direct = await roundTrips([childBin], "add");
const through = await roundTrips([grexBin, "serve"], "one__add");

// ---- report ----
console.log(`MCP gateway benchmark: 3 declared stdio servers; hyperfine -N medians of ${RUNS} runs; ${CALLS} calls per round-trip series; all in this run\n`);
const row = (label: string, ms: number, ratio: string) => console.log(`${label.padEnd(62)} ${ms.toFixed(2).padStart(8)} ${ratio.padStart(10)}`);
console.log(`${"case".padEnd(62)} ${"ms".padStart(8)} ${"ratio".padStart(10)}`);
row("compiled hello-world (Bun.stdout) via driver (floor)", floor.median, "1.00× floor");
row("compiled grex serve: spawn → initialize (3 servers declared)", init.median, `${(init.median / floor.median).toFixed(2)}× floor`);
row("compiled grex serve: spawn → tools/list, cold (spawns 3 children)", cold.median, `${(cold.median / floor.median).toFixed(2)}× floor`);
row("compiled grex serve: spawn → tools/list, cached", cached.median, `${(cached.median / floor.median).toFixed(2)}× floor`);
console.log(`  cold / cached: ${(cold.median / cached.median).toFixed(2)}×`);
console.log(`  spawn → initialize: ${(init.median / floor.median).toFixed(2)}× the floor (goal ≤ 3×) ${init.median <= 3 * floor.median ? "ok" : "MISSED"}`);
console.log(`\ntools/call round trips to one child (add)\n`);
console.log(`${"case".padEnd(62)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(10)}`);
console.log(`${"direct to the child".padEnd(62)} ${direct.p50.toFixed(3).padStart(8)} ${direct.p99.toFixed(3).padStart(10)}`);
console.log(`${"through grex serve (one__add)".padEnd(62)} ${through.p50.toFixed(3).padStart(8)} ${through.p99.toFixed(3).padStart(10)}`);
const added = through.p50 - direct.p50;
console.log(`  added at p50: ${added.toFixed(3)} ms (goal < 0.3 ms) ${added < 0.3 ? "ok" : "MISSED"}; at p99: ${(through.p99 - direct.p99).toFixed(3)} ms`);

rmSync(root, { recursive: true, force: true });
