// Scale (`bun bench/scale.ts`): the same workspace shape at 100 and 1,000
// packs (plain paths, installed), timing `ls --json`, `status --json` and a
// no-op `sync` with the compiled grex, with peak RSS; the cost per pack should
// stay flat from 100 to 1,000. Each timing is the median of BENCH_RUNS runs,
// the two sizes interleaved.
//
// Env: BENCH_BIG (default 1000), BENCH_SMALL (default 100), BENCH_RUNS
// (default 3), BENCH_COMMITS / BENCH_FILES (repository shape, default 30 / 50).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SETTLED_MS } from "../src/core/git/worktree/status-cache.ts";
import { makeReposScript } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";
import { grexBuildCommand } from "../scripts/compile.ts";

const BIG = Number(process.env.BENCH_BIG ?? 1000);
const SMALL = Number(process.env.BENCH_SMALL ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const shape = { commits: Number(process.env.BENCH_COMMITS ?? 30), files: Number(process.env.BENCH_FILES ?? 50) };
const root = mkdtempSync(join(tmpdir(), "grex-bench-scale-"));
const env = benchEnv(join(root, "home"));
mkdirSync(env.HOME as string);
const log = (m: string) => Bun.write(Bun.stderr, `${m}\n`);

function sh(cmd: string[], cwd = root): string {
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString().slice(0, 2000)}`);
  return r.stdout.toString();
}

const grex = join(root, "grex");
sh(grexBuildCommand(grex));

log(`bench/scale: making ${BIG} repositories (${shape.commits} commits, ${shape.files} files each)`);
const up = join(root, "upstream");
const streams = join(root, "streams");
mkdirSync(up);
mkdirSync(streams);
const names = Array.from({ length: BIG }, (_, i) => `r${i}`);
writeFileSync(join(root, "make.sh"), makeReposScript(names, up, streams, undefined, shape));
sh(["sh", join(root, "make.sh")]);

const workspaces = new Map<number, string>();
for (const n of [SMALL, BIG]) {
  const ws = join(root, `ws-${n}`);
  mkdirSync(ws);
  writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.slice(0, n).map((name) => ({ url: join(up, name), path: name }))));
  sh([grex, "init"], ws);
  sh([grex, "import", "--from-repos-json", "REPOS.json"], ws);
  log(`bench/scale: first sync of ${n} packs`);
  sh([grex, "sync", "--parallel", "8"], ws);
  workspaces.set(n, ws);
}
// Past the "racy" second of the freshly written index files, and old enough for
// status to remember the directories (its status cache), as after any quiet moment.
await Bun.sleep(SETTLED_MS + 100);

/** Wall ms and peak RSS (MiB) of one run, from GNU time when present. */
function once(args: string[], cwd: string): { ms: number; rssMiB: number } {
  const time = Bun.which("/usr/bin/time");
  const cmd = time ? [time, "-f", "%M", grex, ...args] : [grex, ...args];
  const t0 = Bun.nanoseconds();
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "ignore", stderr: "pipe" });
  const ms = (Bun.nanoseconds() - t0) / 1e6;
  if (r.exitCode !== 0) throw new Error(`grex ${args.join(" ")} exited ${r.exitCode}: ${r.stderr.toString().slice(0, 500)}`);
  const kb = time ? Number(r.stderr.toString().trim().split("\n").pop()) : Number.NaN;
  return { ms, rssMiB: kb / 1024 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const cases: Array<[string, string[]]> = [
  ["ls --json", ["ls", "--json"]],
  ["status --json", ["status", "--json"]],
  ["no-op sync", ["sync", "--parallel", "8", "--json"]],
];
const results = new Map<string, { ms: number[]; rss: number }>();
for (const [, args] of cases) for (const n of [SMALL, BIG]) once(args, workspaces.get(n) as string); // warm caches
for (let r = 0; r < RUNS; r++) {
  for (const [label, args] of cases) {
    for (const n of [SMALL, BIG]) {
      const key = `${label}@${n}`;
      const { ms, rssMiB } = once(args, workspaces.get(n) as string);
      const cur = results.get(key) ?? { ms: [], rss: 0 };
      cur.ms.push(ms);
      cur.rss = Math.max(cur.rss, rssMiB);
      results.set(key, cur);
    }
  }
}

console.log(`scale benchmark: compiled grex, median of ${RUNS} interleaved runs, plain-path packs of ${shape.commits} commits / ${shape.files} files`);
console.log(`${"case".padEnd(16)} ${`${SMALL} packs`.padStart(12)} ${`${BIG} packs`.padStart(12)} ${"ratio".padStart(7)} ${"ms/pack".padStart(16)} ${"peak MiB".padStart(14)}`);
for (const [label] of cases) {
  const s = results.get(`${label}@${SMALL}`) as { ms: number[]; rss: number };
  const b = results.get(`${label}@${BIG}`) as { ms: number[]; rss: number };
  const sm = median(s.ms);
  const bm = median(b.ms);
  console.log(
    `${label.padEnd(16)} ${`${sm.toFixed(0)} ms`.padStart(12)} ${`${bm.toFixed(0)} ms`.padStart(12)} ${`${(bm / sm).toFixed(2)}×`.padStart(7)} ${`${(sm / SMALL).toFixed(2)} / ${(bm / BIG).toFixed(2)}`.padStart(16)} ${`${s.rss.toFixed(0)} / ${b.rss.toFixed(0)}`.padStart(14)}`,
  );
}
const syncRatio = median((results.get(`no-op sync@${BIG}`) as { ms: number[] }).ms) / median((results.get(`no-op sync@${SMALL}`) as { ms: number[] }).ms);
console.log(`Goal: no-op sync at ${BIG} packs ≤ 10× the ${SMALL}-pack one: ${syncRatio.toFixed(2)}× ${syncRatio <= 10 ? "ok" : "NOT MET"}`);
rmSync(root, { recursive: true, force: true });
