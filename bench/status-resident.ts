// Resident status (`bun bench/status-resident.ts`; bench/status.ts runs it
// last): a workspace of BENCH_RESIDENT_PACKS packs (default 5) of
// BENCH_RESIDENT_FILES files each (default 20,000), all installed and clean.
//   1. `grex status --json` with no server, and with a `grex serve` running
//      for the workspace (the CLI asks it over .grex/.state/serve.sock),
//      timed by `hyperfine -N`; the two outputs must be the same bytes.
//      Goal: with ≤ 0.3× without.
//   2. The MCP `status` tool, timed from here over stdio (request written →
//      answer read), on a server with resident status and on one without
//      (GREX_NO_SERVE=1 in its environment); the answers must be the same
//      document. Goals: with ≤ 0.3× without; with ≤ 5 ms on the unchanged
//      workspace.
// Env: BENCH_RUNS (hyperfine --runs, default 10), BENCH_MCP_CALLS (default 30),
// BENCH_KEEP=1 keeps the temp dir, BENCH_RESIDENT_REUSE=<that dir> runs on it
// again without building it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SETTLED_MS } from "../src/core/git/worktree/status-cache.ts";
import { grexBuildCommand } from "../scripts/compile.ts";
import { benchEnv } from "./fixtures/env.ts";

const PACKS = Number(process.env.BENCH_RESIDENT_PACKS ?? 5);
const FILES = Number(process.env.BENCH_RESIDENT_FILES ?? 20_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 30);
const log = (m: string) => process.stderr.write(`${m}\n`);

async function run(cmd: string[], cwd: string, env: Record<string, string>): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  return out;
}

/** A `grex serve` over stdio, asked from here. */
class Serve {
  private readonly p;
  private buffer = "";
  private readonly reader;
  private id = 0;
  constructor(grex: string, cwd: string, env: Record<string, string>) {
    this.p = Bun.spawn([grex, "serve"], { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    this.reader = this.p.stdout.getReader();
  }
  async call(method: string, params: object): Promise<Record<string, unknown>> {
    const id = ++this.id;
    this.p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    this.p.stdin.flush();
    for (;;) {
      const nl = this.buffer.indexOf("\n");
      if (nl >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const msg = JSON.parse(line) as { id?: number; result?: Record<string, unknown> };
        if (msg.id === id) return msg.result ?? {};
        continue;
      }
      const { value, done } = await this.reader.read();
      if (done) throw new Error("grex serve closed stdout");
      this.buffer += new TextDecoder().decode(value);
    }
  }
  async start(): Promise<void> {
    await this.call("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } });
    this.p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
    await Bun.sleep(400); // past RESIDENT_START_MS: the watches and the socket are up
  }
  /** Milliseconds per MCP status call, and the last document. */
  async timeStatus(calls: number): Promise<{ ms: number[]; doc: unknown }> {
    const ms: number[] = [];
    let doc: unknown;
    for (let i = 0; i < calls; i++) {
      const t0 = Bun.nanoseconds();
      const r = await this.call("tools/call", { name: "status", arguments: {} });
      ms.push((Bun.nanoseconds() - t0) / 1e6);
      doc = r.structuredContent;
    }
    return { ms, doc };
  }
  async stop(): Promise<void> {
    this.p.kill("SIGTERM");
    await this.p.exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Build the workspace, time both ways, print the tables. `grex` is a compiled binary (built here when not given). */
export async function benchResident(given?: { grex: string; root: string }): Promise<void> {
  const reuse = !given && process.env.BENCH_RESIDENT_REUSE ? process.env.BENCH_RESIDENT_REUSE : undefined;
  const root = given?.root ?? reuse ?? mkdtempSync(join(tmpdir(), "grex-bench-resident-"));
  const base = join(root, "resident");
  const home = join(base, "home");
  const built = reuse !== undefined && existsSync(join(base, "ws", "grex.jsonl"));
  if (!built) {
    mkdirSync(base, { recursive: true });
    mkdirSync(home);
  }
  const env = benchEnv(home);
  try {
    const grex = given?.grex ?? join(base, "grex");
    if (!given) await run(grexBuildCommand(grex), base, env);
    log(`bench/status-resident: ${PACKS} packs × ${FILES} files${built ? " (reused)" : ""}`);
    const up = join(base, "upstream");
    const ws = join(base, "ws");
    if (!built) mkdirSync(ws);
    const names = Array.from({ length: PACKS }, (_, i) => `big${i}`);
    for (const n of built ? [] : names) {
      const d = join(up, n);
      const perDir = 100;
      for (let i = 0; i < FILES; i++) {
        const dir = join(d, `d${Math.floor(i / perDir)}`);
        if (i % perDir === 0) mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, `f${i}.txt`), `${n} file ${i}\n`);
      }
      // No automatic gc in the background: it would repack while grex reads the objects.
      await run(["sh", "-c", "git init -q -b main && git config gc.auto 0 && git config maintenance.auto false && git add -A && git commit -q -m init"], d, env);
    }
    if (!built) {
      await run([grex, "init"], ws, env);
      writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: join(up, n), path: n }))));
      await run([grex, "import", "--from-repos-json", "REPOS.json"], ws, env);
      await run([grex, "sync"], ws, env);
      await Bun.sleep(SETTLED_MS + 100);
    }
    const alone = await run([grex, "status", "--json", "--fail-on-drift"], ws, env);
    if ((JSON.parse(alone) as { packs: unknown[] }).packs.length !== PACKS) throw new Error("status does not list every pack");

    const hyperfine = async (commands: string[]): Promise<number[]> => {
      const out = join(base, "hyperfine.json");
      await run(["hyperfine", "-N", "--warmup", "3", "--runs", String(RUNS), "--export-json", out, ...commands], ws, env);
      return (JSON.parse(readFileSync(out, "utf8")) as { results: Array<{ median: number }> }).results.map((r) => r.median * 1000);
    };

    log("bench/status-resident: grex status --json, no server");
    const [without] = await hyperfine([`${grex} status --json`]);
    log("bench/status-resident: MCP status on a server without resident status");
    const plain = new Serve(grex, ws, { ...env, GREX_NO_SERVE: "1" });
    await plain.start();
    const plainMcp = await plain.timeStatus(Math.max(5, Math.floor(CALLS / 3)));
    await plain.stop();

    log("bench/status-resident: the same with a grex serve running");
    const serve = new Serve(grex, ws, env);
    let withServe: number | undefined;
    let residentMcp: { ms: number[]; doc: unknown };
    let firstMs: number;
    try {
      await serve.start();
      const first = await serve.timeStatus(1); // watches set up, every pack scanned once
      firstMs = first.ms[0] as number;
      residentMcp = await serve.timeStatus(CALLS);
      const asked = await run([grex, "status", "--json"], ws, env);
      if (asked !== alone) throw new Error("grex status with the server running printed another document than without");
      if (JSON.stringify(residentMcp.doc) !== JSON.stringify(plainMcp.doc)) throw new Error("the MCP status documents differ with and without resident status");
      if (`${JSON.stringify(residentMcp.doc)}` !== JSON.stringify(JSON.parse(alone))) throw new Error("MCP status differs from the CLI's");
      [withServe] = await hyperfine([`${grex} status --json`]);
      const doctor = (await serve.call("tools/call", { name: "doctor", arguments: {} })) as { structuredContent?: { findings: Array<{ check: string; detail: string }> } };
      for (const f of doctor.structuredContent?.findings ?? []) if (f.check === "serve-watch") log(`bench/status-resident: doctor: ${f.detail}`);
    } finally {
      await serve.stop();
    }
    if (without === undefined || withServe === undefined) throw new Error("hyperfine returned too few results");
    const plainMs = median(plainMcp.ms);
    const residentMs = median(residentMcp.ms);
    const yes = (ok: boolean) => (ok ? "yes" : "NO");
    console.log(`\nResident status: ${PACKS} packs × ${FILES} files, clean; medians (CLI: hyperfine -N, ${RUNS} runs; MCP: ${CALLS} calls over stdio)\n`);
    console.log(`| | without resident status | with \`grex serve\` running | ratio | goal |`);
    console.log(`|---|---|---|---|---|`);
    console.log(`| \`grex status --json\` | ${without.toFixed(1)} ms | ${withServe.toFixed(1)} ms | ${(withServe / without).toFixed(2)}× | ≤ 0.3×: ${yes(withServe <= 0.3 * without)} (same bytes: yes) |`);
    console.log(`| MCP \`status\` | ${plainMs.toFixed(1)} ms | ${residentMs.toFixed(2)} ms | ${(residentMs / plainMs).toFixed(2)}× | ≤ 0.3×: ${yes(residentMs <= 0.3 * plainMs)}; ≤ 5 ms: ${yes(residentMs <= 5)} (same document: yes) |`);
    console.log(`| first MCP \`status\` of a fresh server (watches set up, every pack scanned) | | ${firstMs.toFixed(1)} ms | | |`);
  } finally {
    if (!given) {
      if (process.env.BENCH_KEEP === "1" || reuse !== undefined) log(`kept ${root}`);
      else rmSync(root, { recursive: true, force: true });
    }
  }
}

if (import.meta.main) await benchResident();
