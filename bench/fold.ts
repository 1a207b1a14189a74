// Manifest fold cost (`bun bench/fold.ts`): 100k events in a temp grex.jsonl;
// readManifest (read + parse + validate + fold) against a same-run floor of
// reading the file and JSON.parse of each line. Medians of interleaved runs.
// Goal: ratio ≤ 1.5. Also shows the cost when the caller keeps the event list
// too (sync, doctor, import): holding 100k objects costs GC time.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventLine, type ManifestEvent, makeEvent, readManifest } from "../src/core/workspace/manifest.ts";
import { workspaceAt } from "../src/core/base/workspace.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const GOAL = 1.5;

const root = mkdtempSync(join(tmpdir(), "grex-bench-fold-"));
const ws = workspaceAt(root);

// A plausible long-lived log: 1,000 packs with children, many syncs and action brackets, some churn.
function generate(n: number): string {
  let seed = 42;
  const rand = () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 4294967296;
  };
  const t0 = Date.UTC(2026, 0, 1);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const ts = new Date(t0 + i * 1000).toISOString();
    const top = `pack-${Math.floor(rand() * 1000)}`;
    const id = rand() < 0.3 ? `${top}/child-${Math.floor(rand() * 5)}` : top;
    const r = rand();
    let e: ManifestEvent;
    if (r < 0.08) e = makeEvent("add", top, { url: `https://git.example.com/org/${top}.git`, path: top, type: "declarative", ref: null }, ts);
    else if (r < 0.12) e = makeEvent("update", top, { ref: rand() < 0.5 ? "main" : null }, ts);
    else if (r < 0.14) e = makeEvent("rm", top, {}, ts);
    else if (r < 0.5) e = makeEvent("sync", id, {}, ts);
    else if (r < 0.75) e = makeEvent("action_started", id, { action: "symlink", idx: Math.floor(rand() * 6) }, ts);
    else if (r < 0.97) e = makeEvent("action_completed", id, { action: "symlink", idx: Math.floor(rand() * 6), changed: rand() < 0.5 }, ts);
    else e = makeEvent("action_halted", id, { action: "exec", idx: 2, reason: "exec exited 1", stderr: "error: something failed\n".repeat(3) }, ts);
    out.push(eventLine(e));
  }
  return out.join("");
}

function floor(): number {
  const text = readFileSync(ws.manifestPath, "utf8");
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.length > 0) {
      JSON.parse(line);
      n++;
    }
  }
  return n;
}

/** What every command pays: read + parse + validate + fold (events stay unparsed until asked for). */
async function grexState(): Promise<number> {
  const { state } = await readManifest(ws, { warn: (m) => console.error(m) });
  return state.size;
}

/** What sync/doctor/import pay: the same pass, keeping the events. */
async function grexEvents(): Promise<number> {
  const r = await readManifest(ws, { warn: (m) => console.error(m), keepEvents: true });
  return r.events.length;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function time(f: () => unknown): Promise<number> {
  Bun.gc(true); // each run starts from a collected heap, so one run's garbage is not billed to the next
  const t = Bun.nanoseconds();
  await f();
  return (Bun.nanoseconds() - t) / 1e6;
}

try {
  const text = generate(EVENTS);
  writeFileSync(ws.manifestPath, text);
  if (floor() !== EVENTS || (await grexEvents()) !== EVENTS) throw new Error("event count mismatch");
  // Warm up (JIT, page cache), then interleave so machine drift hits all three alike.
  for (let i = 0; i < 3; i++) {
    floor();
    await grexState();
    await grexEvents();
  }
  const base: number[] = [];
  const state: number[] = [];
  const events: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    base.push(await time(floor));
    state.push(await time(grexState));
    events.push(await time(grexEvents));
  }
  const b = median(base);
  const s = median(state);
  const e = median(events);
  const mb = (Buffer.byteLength(text) / 1e6).toFixed(1);
  console.log(`fold bench: ${EVENTS} events (${mb} MB), median of ${RUNS} interleaved runs`);
  console.log(`  floor  read + JSON.parse per line               ${b.toFixed(1).padStart(6)} ms`);
  console.log(`  grex   readManifest: state (validate + fold)    ${s.toFixed(1).padStart(6)} ms  ${(s / b).toFixed(2)}x`);
  console.log(`  grex   readManifest: state + events (keepEvents) ${e.toFixed(1).padStart(5)} ms  ${(e / b).toFixed(2)}x`);
  console.log(`  ratio  ${(s / b).toFixed(2)}x (goal <= ${GOAL}x) ${s / b <= GOAL ? "ok" : "OVER GOAL"}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
