// Manifest fold cost (`bun bench/fold.ts`): 100k events in a temp grex.jsonl;
// readManifest (read + parse + validate + fold) against a same-run floor of
// reading the file and JSON.parse of each line. Medians of interleaved runs.
// Goal: ratio ≤ 1.5.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventLine, type ManifestEvent, makeEvent, readManifest } from "../src/core/manifest.ts";
import { workspaceAt } from "../src/core/workspace.ts";

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
  const text = require("node:fs").readFileSync(ws.manifestPath, "utf8") as string;
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.length > 0) {
      JSON.parse(line);
      n++;
    }
  }
  return n;
}

async function grex(): Promise<number> {
  const { events, state } = await readManifest(ws, { warn: (m) => console.error(m) });
  return events.length + state.size * 0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

try {
  const text = generate(EVENTS);
  writeFileSync(ws.manifestPath, text);
  if (floor() !== EVENTS || (await grex()) !== EVENTS) throw new Error("event count mismatch");
  // Warm up both paths (JIT, page cache), then interleave so drift hits both equally.
  for (let i = 0; i < 3; i++) {
    floor();
    await grex();
  }
  const base: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let t = Bun.nanoseconds();
    floor();
    base.push((Bun.nanoseconds() - t) / 1e6);
    t = Bun.nanoseconds();
    await grex();
    ours.push((Bun.nanoseconds() - t) / 1e6);
  }
  const b = median(base);
  const o = median(ours);
  const ratio = o / b;
  const mb = (Buffer.byteLength(text) / 1e6).toFixed(1);
  console.log(`fold bench: ${EVENTS} events (${mb} MB), median of ${RUNS} interleaved runs`);
  console.log(`  floor  read + JSON.parse per line     ${b.toFixed(1)} ms`);
  console.log(`  grex   readManifest (parse+check+fold) ${o.toFixed(1)} ms`);
  console.log(`  ratio  ${ratio.toFixed(2)}x (goal <= ${GOAL}x) ${ratio <= GOAL ? "ok" : "OVER GOAL"}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
