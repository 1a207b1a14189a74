// Clone modes (`bun bench/clone-modes.ts`): a full clone against a shallow one
// (`--depth 1`), grex beside git in the same run, on two generated
// repositories served by the same loopback smart-HTTP server
// (test/helpers/git-http-server.ts, `git http-backend`):
//
//   long: 80,000 commits, each changing one of 64 small files (history-heavy)
//   wide: 30,000 files in 300 directories, 3 commits (tree-heavy)
//
// Both are made deterministically with `git fast-import` (a seeded PRNG writes
// every blob) and repacked as a hosting server would serve them; they are
// cached under $XDG_CACHE_HOME/grex-bench (or ~/.cache/grex-bench).
//
// Per run: wall time; CPU time (user + system of the clone's process and the
// children it waited for: git clone's index-pack; the server's is not counted);
// peak RSS of the process tree (VmRSS summed, sampled
// every 20 ms: git clone runs index-pack as a child, grex works in one
// process); bytes transferred, counted as the pack the clone received and
// kept (`objects/pack/*.pack`: both keep the one pack a clone receives, and
// neither asks for a thin pack); bytes on disk: the clone's `.git` and the
// whole clone (work tree included), counted by allocated blocks (`du`).
//
// The modes are one list (MODES): a mode is its name and the arguments grex
// add and git clone take for it, so adding one (e.g. `--filter blob:none`) is
// one entry. BENCH_MODES=full,depth1,blobless picks some; BENCH_REPOS=long picks
// repositories; BENCH_RUNS=n repeats each run, git and grex taking turns (median time and CPU, largest RSS); each run's clone is moved aside, not deleted, until the end, and the file system is synced before each run (`sync`: the last run's files are written out before, not during, the next).
// Env for the sizes: BENCH_LONG_COMMITS (80000), BENCH_WIDE_FILES (30000);
// BENCH_COMPILED=1 times the compiled binary instead of `bun src/cli/main.ts`.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";
import { measure } from "./memory.ts";
import { grexBuildCommand } from "../scripts/compile.ts";
import { xorshift32 } from "../test/helpers/prng.ts";

const GREX_MAIN = join(import.meta.dir, "..", "src", "cli", "main.ts");
/** How grex is run: from source by default; BENCH_COMPILED=1 builds the single binary first (what users run). */
let grexCmd: string[] = [process.execPath, GREX_MAIN];

/** One way of cloning: what `grex add` and `git clone` are given for it. */
export interface CloneMode {
  key: string;
  name: string;
  grex: string[];
  git: string[];
}

export const MODES: CloneMode[] = [
  { key: "full", name: "full", grex: [], git: [] },
  { key: "depth1", name: "--depth 1", grex: ["--depth", "1"], git: ["--depth", "1"] },
  { key: "blobless", name: "--filter blob:none", grex: ["--filter", "blob:none"], git: ["--filter=blob:none"] },
];

const LONG_COMMITS = Number(process.env.BENCH_LONG_COMMITS ?? 80_000);
const WIDE_FILES = Number(process.env.BENCH_WIDE_FILES ?? 30_000);

interface RepoSpec {
  key: string;
  describe: string;
  /** The fast-import stream, chunk by chunk. */
  stream(write: (s: string) => void): void;
}

const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;
const text = (rand: () => number, words: number) => {
  let out = "";
  for (let i = 0; i < words; i++) out += `${(rand() % 100000).toString(36)}${i % 12 === 11 ? "\n" : " "}`;
  return `${out}\n`;
};
const WHEN = 1_100_000_000;

const REPOS: RepoSpec[] = [
  {
    key: "long",
    describe: `${LONG_COMMITS} commits, 64 files`,
    stream(write) {
      const rand = xorshift32(0x10ad);
      for (let c = 0; c < LONG_COMMITS; c++) {
        let out = `commit refs/heads/main\ncommitter Bench <bench@example.invalid> ${WHEN + c * 600} +0000\n${data(`commit ${c}\n`)}`;
        if (c === 0) for (let f = 0; f < 64; f++) out += `M 100644 inline src/f${f}.txt\n${data(text(rand, 60))}`;
        else out += `M 100644 inline src/f${rand() % 64}.txt\n${data(text(rand, 60))}`;
        write(`${out}\n`);
      }
    },
  },
  {
    key: "wide",
    describe: `${WIDE_FILES} files in 300 directories, 3 commits`,
    stream(write) {
      const rand = xorshift32(0x01de);
      const path = (f: number) => `d${String(f % 300).padStart(3, "0")}/f${String(f).padStart(5, "0")}.txt`;
      for (let c = 0; c < 3; c++) {
        let out = `commit refs/heads/main\ncommitter Bench <bench@example.invalid> ${WHEN + c * 600} +0000\n${data(`commit ${c}\n`)}`;
        const files = c === 0 ? WIDE_FILES : 500;
        for (let i = 0; i < files; i++) out += `M 100644 inline ${path(c === 0 ? i : rand() % WIDE_FILES)}\n${data(text(rand, 40))}`;
        write(`${out}\n`);
      }
    },
  },
];

async function generate(spec: RepoSpec, bare: string): Promise<void> {
  const env = { ...benchEnv(join(bare, "..")), GIT_DIR: bare };
  Bun.spawnSync(["git", "init", "--quiet", "--bare", "-b", "main", bare], { env, stdout: "ignore", stderr: "inherit" });
  const fi = Bun.spawn(["git", "fast-import", "--quiet", "--depth=50"], { env, stdin: "pipe", stdout: "ignore", stderr: "inherit" });
  let n = 0;
  const pending: Promise<unknown>[] = [];
  spec.stream((s) => {
    fi.stdin.write(s);
    if (++n % 500 === 0) pending.push(Promise.resolve(fi.stdin.flush()));
  });
  await Promise.all(pending);
  fi.stdin.end();
  if ((await fi.exited) !== 0) throw new Error("git fast-import failed");
  const r = Bun.spawnSync(["git", "repack", "-a", "-d", "-b", "-q", "--window=10", "--depth=50"], { env, stdout: "ignore", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error("git repack failed");
}

/** The repository `spec` describes, generated once and cached. */
async function served(spec: RepoSpec, servedDir: string): Promise<string> {
  const name = `clone-modes-${spec.key}-${spec.key === "long" ? LONG_COMMITS : WIDE_FILES}-v1`;
  const bare = join(servedDir, `${name}.git`);
  if (!existsSync(join(bare, "grex-bench-complete"))) {
    rmSync(bare, { recursive: true, force: true });
    mkdirSync(servedDir, { recursive: true });
    console.error(`generating ${spec.key} (${spec.describe}); cached for later runs…`);
    const t = performance.now();
    await generate(spec, bare);
    await Bun.write(join(bare, "grex-bench-complete"), "");
    console.error(`generated in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  // A server that does not allow filters answers a partial clone with everything (both tools then measure a full clone).
  Bun.spawnSync(["git", "--git-dir", bare, "config", "uploadpack.allowFilter", "true"], { stdout: "ignore", stderr: "inherit" });
  return name;
}

function packBytes(gitdir: string): number {
  const dir = join(gitdir, "objects", "pack");
  if (!existsSync(dir)) return 0;
  return readdirSync(dir)
    .filter((n) => n.endsWith(".pack"))
    .reduce((sum, n) => sum + statSync(join(dir, n)).size, 0);
}

/** Allocated bytes under `path` (du -sk), as disk usage is counted. */
function diskBytes(path: string): number {
  const r = Bun.spawnSync(["du", "-sk", path], { stdout: "pipe", stderr: "ignore" });
  return Number(r.stdout.toString().split(/\s/)[0] ?? 0) * 1024;
}

interface Result {
  code: number;
  seconds: number;
  cpuSeconds: number;
  rssMB: number;
  packBytes: number;
  gitDirBytes: number;
  totalBytes: number;
  stderr: string;
}

async function cloneOnce(who: "grex" | "git", url: string, mode: CloneMode, root: string, env: Record<string, string>, i: number): Promise<Result> {
  const ws = join(root, `${who}-${mode.key}-${i}`);
  mkdirSync(ws, { recursive: true });
  let dir: string;
  let cmd: string[];
  if (who === "grex") {
    const init = Bun.spawnSync([...grexCmd, "init"], { cwd: ws, env, stdout: "ignore", stderr: "pipe" });
    if (init.exitCode !== 0) throw new Error(`grex init failed: ${init.stderr}`);
    dir = join(ws, "repo");
    cmd = [...grexCmd, "add", url, "repo", ...mode.grex];
  } else {
    dir = join(ws, "repo");
    cmd = ["git", "clone", "--quiet", ...mode.git, url, dir];
  }
  // The page cache's dirty files (the last run's clone) go to disk first, not during this run: the kernel's
  // writeback of one tool's 30,000 new files, due some seconds later, otherwise ran while the other tool worked.
  await Bun.spawn(["sync"]).exited;
  const run = await measure(cmd, { cwd: ws, env });
  const gitdir = join(dir, ".git");
  const out = {
    code: run.code,
    seconds: run.seconds,
    cpuSeconds: run.cpuSeconds,
    rssMB: run.peakTree,
    packBytes: packBytes(gitdir),
    gitDirBytes: diskBytes(gitdir),
    totalBytes: diskBytes(dir),
    stderr: run.stderr,
  };
  // Moved aside, deleted at the end: ext4 passes over recently freed inodes when it creates files, so
  // deleting 30,000 files just before the next run charged their deletion to whichever tool ran next.
  mkdirSync(join(root, "trash"), { recursive: true });
  renameSync(ws, join(root, "trash", `${who}-${mode.key}-${i}-${Date.now()}`));
  return out;
}

/** The median run (wall time; CPU the median of its own) and the largest peak RSS of `all`. */
function summary(all: Result[]): Result {
  const sorted = [...all].sort((a, b) => a.seconds - b.seconds);
  const median = sorted[Math.floor(sorted.length / 2)] as Result;
  const cpu = all.map((r) => r.cpuSeconds).sort((x, y) => x - y);
  return { ...median, cpuSeconds: cpu[Math.floor(cpu.length / 2)] as number, rssMB: Math.max(...all.map((r) => r.rssMB)), code: all.find((r) => r.code !== 0)?.code ?? 0 };
}

const mb = (b: number) => (b / 1e6).toFixed(1);

async function main(): Promise<void> {
  const pick = <T extends { key: string }>(list: T[], env: string | undefined) => (env ? list.filter((x) => env.split(",").includes(x.key)) : list);
  const modes = pick(MODES, process.env.BENCH_MODES);
  const repos = pick(REPOS, process.env.BENCH_REPOS);
  const runs = Math.max(1, Number(process.env.BENCH_RUNS ?? 1));
  const cacheRoot = process.env.BENCH_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "grex-bench");
  const servedDir = join(cacheRoot, "served");
  const names = new Map<string, string>();
  for (const spec of repos) names.set(spec.key, await served(spec, servedDir));
  const root = mkdtempSync(join(tmpdir(), "grex-bench-clone-modes-"));
  if (process.env.BENCH_COMPILED === "1") {
    const bin = join(root, "grex");
    const built = Bun.spawnSync(grexBuildCommand(bin), { stdout: "ignore", stderr: "inherit" });
    if (built.exitCode !== 0) throw new Error("bun build --compile failed");
    grexCmd = [bin];
  }
  const home = join(root, "home");
  mkdirSync(home);
  const env = benchEnv(home);
  const server = await startGitHttpServer(servedDir);
  const rows: string[] = [];
  const goals: string[] = [];
  try {
    for (const spec of repos) {
      const url = `${server.url}/${names.get(spec.key)}.git`;
      for (const mode of modes) {
        // The two tools take turns, run by run, so a slower minute of the machine falls on both.
        const gitRuns: Result[] = [];
        const grexRuns: Result[] = [];
        for (let i = 0; i < runs; i++) {
          gitRuns.push(await cloneOnce("git", url, mode, root, env, i));
          grexRuns.push(await cloneOnce("grex", url, mode, root, env, i));
        }
        const git = summary(gitRuns);
        const grex = summary(grexRuns);
        for (const [who, r] of [["git", git], ["grex", grex]] as const) {
          rows.push(`| ${spec.key} | ${mode.name} | ${who} | ${r.code} | ${r.seconds.toFixed(2)} | ${r.cpuSeconds.toFixed(2)} | ${r.rssMB.toFixed(0)} | ${mb(r.packBytes)} | ${mb(r.gitDirBytes)} | ${mb(r.totalBytes)} |`);
          if (r.code !== 0) console.error(`${who} ${spec.key} ${mode.name}: ${r.stderr}`);
        }
        const time = grex.seconds / git.seconds;
        const cpu = grex.cpuSeconds / git.cpuSeconds;
        const disk = grex.totalBytes / git.totalBytes;
        goals.push(`${spec.key} ${mode.name}: time ${time.toFixed(2)}x git (goal <= 1.5x${time <= 1.5 ? ", met" : ", NOT met"}; CPU ${cpu.toFixed(2)}x), disk ${disk.toFixed(2)}x git (goal <= 1x${disk <= 1 ? ", met" : ", NOT met"})`);
      }
    }
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  console.log(`\nrepositories: ${repos.map((r) => `${r.key} = ${r.describe}`).join("; ")}; served over loopback smart HTTP; ${runs} run(s) each\n`);
  console.log("| repo | mode | tool | exit | wall s | CPU s | peak RSS MB (tree) | pack received MB | .git on disk MB | clone on disk MB |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(r);
  console.log("");
  for (const g of goals) console.log(g);
}

if (import.meta.main) await main();
