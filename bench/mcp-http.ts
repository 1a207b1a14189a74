// MCP over Streamable HTTP throughput (`bun bench/mcp-http.ts`): `grex serve
// --http 127.0.0.1:0` (from source, its own process) answering tools/call ls
// on a 50-pack workspace, driven by 1, 4 and 16 concurrent SDK clients, each
// with its own session. Loopback only. Each level stops after BENCH_HTTP_CALLS
// calls (default 2,000) or BENCH_HTTP_SECONDS seconds (default 20), whichever
// comes first; reports calls/second and per-call latency percentiles.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CALLS = Math.max(100, Number(process.env.BENCH_HTTP_CALLS ?? 2000));
const SECONDS = Math.max(1, Number(process.env.BENCH_HTTP_SECONDS ?? 20));
const LEVELS = [1, 4, 16];
const PACKS = 50;
const TOKEN = "bench-token";
const repo = join(import.meta.dir, "..");
const root = mkdtempSync(join(tmpdir(), "grex-bench-mcp-http-"));
const env: Record<string, string | undefined> = { ...process.env, HOME: join(root, "home"), GREX_MCP_TOKEN: TOKEN };
mkdirSync(env.HOME as string, { recursive: true });

// ---- a workspace with registered packs (ls reads the manifest and lockfile only) ----
const ws = join(root, "ws");
mkdirSync(ws);
let manifest = "";
for (let i = 0; i < PACKS; i++) {
  manifest += `${JSON.stringify({ op: "add", ts: "2026-01-01T00:00:00.000Z", id: `pack-${i}`, schema_version: "1", url: `https://example.invalid/pack-${i}.git`, path: `pack-${i}`, type: "meta", ref: null })}\n`;
}
writeFileSync(join(ws, "grex.jsonl"), manifest);
writeFileSync(join(ws, "grex.lock.jsonl"), "");

// ---- the server ----
const server = Bun.spawn([process.execPath, join(repo, "src/cli/main.ts"), "serve", "--http", "127.0.0.1:0"], {
  cwd: ws,
  env,
  stdin: "ignore",
  stdout: "ignore",
  stderr: "pipe",
});
let banner = "";
const reader = (server.stderr as ReadableStream<Uint8Array>).getReader();
const decoder = new TextDecoder();
const startBy = Date.now() + 20_000;
let url: string | undefined;
while (url === undefined) {
  if (Date.now() > startBy) throw new Error(`grex serve --http did not start: ${banner}`);
  const { value, done } = await reader.read();
  if (done) throw new Error(`grex serve --http exited: ${banner}`);
  banner += decoder.decode(value, { stream: true });
  url = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(banner)?.[1];
}
// Keep draining stderr so the server never blocks on a full pipe.
void (async () => {
  for (;;) if ((await reader.read()).done) break;
})();
const endpoint = url;

async function connect(): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  return client;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

interface Row {
  clients: number;
  calls: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

async function level(n: number): Promise<Row> {
  const clients = await Promise.all(Array.from({ length: n }, connect));
  // Warm-up: load the verb table and page caches once per session.
  await Promise.all(clients.map((c) => c.callTool({ name: "ls", arguments: {} })));
  const latencies: number[] = [];
  let issued = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      while (issued < CALLS && performance.now() < deadline) {
        issued++;
        const s = performance.now();
        const r = await c.callTool({ name: "ls", arguments: {} });
        if (r.isError) throw new Error("tools/call ls failed");
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(clients.map(async (c) => {
    await (c.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => {});
    await c.close();
  }));
  latencies.sort((a, b) => a - b);
  return { clients: n, calls: latencies.length, seconds, perSecond: latencies.length / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99) };
}

try {
  const rows: Row[] = [];
  for (const n of LEVELS) rows.push(await level(n));
  console.log(`tools/call ls over Streamable HTTP (grex serve --http, ${PACKS} packs, bearer token, loopback), up to ${CALLS} calls or ${SECONDS} s per level`);
  console.log("clients  calls  seconds  calls/s   p50 ms  p99 ms");
  for (const r of rows) {
    console.log(
      `${String(r.clients).padStart(7)}  ${String(r.calls).padStart(5)}  ${r.seconds.toFixed(2).padStart(7)}  ${r.perSecond.toFixed(0).padStart(7)}  ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(6)}`,
    );
  }
} finally {
  server.kill("SIGTERM");
  await server.exited;
  rmSync(root, { recursive: true, force: true });
}
