// Config parsing cost (`bun bench/config.ts`): `status` and the dirty check
// read a pack's config (and the user's) once per pack, mostly as cold code.
// The config manager's parser (usual lines read whole by a regular
// expression, the rest by git's character reader) against, in the same run:
// the character reader alone, and a floor of splitting the text into trimmed
// lines. Warm: medians of interleaved runs; cold: the first call in fresh
// processes (median). Goal: the parser within 3x the floor warm.
import { parseConfigText } from "../src/core/git/refs/config-parse.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const COLD = Number(process.env.BENCH_COLD ?? 15);
const GOAL = 3;

/** A pack's config as grex and git leave it: core, origin, a few branches and submodules. */
const TEXT = [
  "[core]",
  "\trepositoryformatversion = 0",
  "\tfilemode = true",
  "\tbare = false",
  "\tlogallrefupdates = true",
  '[remote "origin"]',
  "\turl = https://git.example.com/org/tools.git",
  "\tfetch = +refs/heads/*:refs/remotes/origin/*",
  ...["main", "dev", "feature/x"].flatMap((b) => [`[branch "${b}"]`, "\tremote = origin", `\tmerge = refs/heads/${b}`]),
  ...["lib", "docs"].flatMap((s) => [`[submodule "${s}"]`, "\tactive = true", `\turl = https://git.example.com/org/${s}.git`]),
  "[submodule]",
  "\trecurse = true",
  "",
].join("\n");

const floor = (t: string) => t.split("\n").map((l) => l.trim());
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

if (process.argv[2] === "--cold") {
  const which = process.argv[3];
  performance.now(); // the clock's own first call is not the parser's
  const t0 = performance.now();
  if (which === "parser") parseConfigText(TEXT);
  else if (which === "careful") parseConfigText(TEXT, true);
  else floor(TEXT);
  process.stdout.write(String((performance.now() - t0) * 1000));
  process.exit(0);
}

function warm(f: () => unknown): number {
  const n = 2000;
  const t0 = Bun.nanoseconds();
  for (let i = 0; i < n; i++) f();
  return (Bun.nanoseconds() - t0) / n / 1000;
}

const kinds = { parser: () => parseConfigText(TEXT), careful: () => parseConfigText(TEXT, true), floor: () => floor(TEXT) } as const;
const warmRuns: Record<string, number[]> = { parser: [], careful: [], floor: [] };
for (const f of Object.values(kinds)) warm(f); // JIT warm-up
for (let r = 0; r < RUNS; r++) for (const [k, f] of Object.entries(kinds)) warmRuns[k]?.push(warm(f));
const coldRuns: Record<string, number[]> = { parser: [], careful: [], floor: [] };
for (let r = 0; r < COLD; r++) {
  for (const k of Object.keys(kinds)) {
    const p = Bun.spawnSync([process.execPath, import.meta.path, "--cold", k], { stdout: "pipe" });
    coldRuns[k]?.push(Number(p.stdout.toString()));
  }
}
const w = (k: string) => median(warmRuns[k] ?? []);
const c = (k: string) => median(coldRuns[k] ?? []);
console.log(`config parse bench: ${TEXT.length} bytes, ${TEXT.split("\n").length} lines; warm median of ${RUNS}, cold median of ${COLD} processes`);
for (const k of Object.keys(kinds)) console.log(`  ${k.padEnd(8)} warm ${w(k).toFixed(2)} µs   cold ${c(k).toFixed(0)} µs`);
const ratio = w("parser") / w("floor");
console.log(`  parser / floor (warm): ${ratio.toFixed(2)} (goal ≤ ${GOAL})   careful / parser (cold): ${(c("careful") / c("parser")).toFixed(2)}`);
