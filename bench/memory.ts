// Peak memory of a clone over smart HTTP (`bun bench/memory.ts`): `grex add`
// against `git clone` of the same generated repository, served by the same
// loopback `git http-backend`, in the same run. The repository has git.git's
// shape — 50,000 commits, 4,096 files in 64 directories, a pack over 300 MB —
// and is made deterministically with `git fast-import` (a seeded PRNG writes
// every blob), then repacked with bitmaps as a hosting server would serve it.
// Generating it takes a few minutes, so it is cached under
// $XDG_CACHE_HOME/grex-bench (or ~/.cache/grex-bench) by its parameters.
//
// Peak RSS is sampled from /proc/<pid>/status (VmHWM of each process, VmRSS
// summed over the process tree) every 20 ms: git clone runs index-pack as a
// child, grex works in one process.
//
// Env: BENCH_COMMITS (default 50000), BENCH_FILES (default 4096),
// BENCH_BLOB_BYTES (random bytes per changed file, default 2800),
// BENCH_CACHE (cache dir), BENCH_KEEP=1 keeps the clones.
// A quick run: BENCH_COMMITS=5000 BENCH_FILES=1024 bun bench/memory.ts
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";
import { xorshift32 } from "../test/helpers/prng.ts";

const COMMITS = Number(process.env.BENCH_COMMITS ?? 50_000);
const FILES = Number(process.env.BENCH_FILES ?? 4096);
const BLOB_BYTES = Number(process.env.BENCH_BLOB_BYTES ?? 2800);
const DIRS = 64;
const CHANGED_PER_COMMIT = 2;
const GREX_MAIN = join(import.meta.dir, "..", "src", "cli", "main.ts");

const pathOf = (f: number) => `d${String(f % DIRS).padStart(2, "0")}/f${String(f).padStart(5, "0")}.txt`;

/** The fast-import stream, written to git's stdin in pieces (never held whole). */
async function generate(bare: string): Promise<void> {
  const env = { ...benchEnv(join(bare, "..")), GIT_DIR: bare };
  Bun.spawnSync(["git", "init", "--quiet", "--bare", "-b", "main", bare], { env, stdout: "ignore", stderr: "inherit" });
  const fi = Bun.spawn(["git", "fast-import", "--quiet", "--depth=50"], { env, stdin: "pipe", stdout: "ignore", stderr: "inherit" });
  const rand = xorshift32(0x5eed);
  const blob = (n: number) => {
    // Base64 of random bytes: text that deflate barely shrinks, as source history adds up over the years.
    const raw = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i += 4) raw.writeUInt32LE(rand(), Math.min(i, n - 4));
    return `${raw.toString("base64").replace(/(.{76})/g, "$1\n")}\n`;
  };
  const data = (s: string) => `data ${Buffer.byteLength(s)}\n${s}\n`;
  const when = 1_100_000_000;
  for (let c = 0; c < COMMITS; c++) {
    let out = `commit refs/heads/main\nmark :${c + 1}\ncommitter Bench <bench@example.invalid> ${when + c * 600} +0000\n${data(`commit ${c}\n\nchange ${c}\n`)}`;
    if (c === 0) for (let f = 0; f < FILES; f++) out += `M 100644 inline ${pathOf(f)}\n${data(blob(256))}`;
    else for (let k = 0; k < CHANGED_PER_COMMIT; k++) out += `M 100644 inline ${pathOf(rand() % FILES)}\n${data(blob(BLOB_BYTES))}`;
    if (c % 5000 === 0 && c > 0) out += `\n`;
    fi.stdin.write(out);
    if (c % 200 === 0) await fi.stdin.flush();
  }
  // A few hundred tags, as real projects have.
  for (let t = 0; t < 500; t++) fi.stdin.write(`reset refs/tags/v${t}\nfrom :${1 + Math.floor((COMMITS - 1) * (t / 500))}\n\n`);
  fi.stdin.end();
  if ((await fi.exited) !== 0) throw new Error("git fast-import failed");
  // Served as a hosting site does: one pack, deltas found once, bitmaps for counting.
  const r = Bun.spawnSync(["git", "repack", "-a", "-d", "-b", "-q", "--window=10", "--depth=50"], { env, stdout: "ignore", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error("git repack failed");
}

function packBytes(bare: string): number {
  const dir = join(bare, "objects", "pack");
  return readdirSync(dir)
    .filter((n) => n.endsWith(".pack"))
    .reduce((sum, n) => sum + statSync(join(dir, n)).size, 0);
}

/** VmHWM (kB) of one process, and VmRSS, from /proc; null once it is gone. */
function procMem(pid: number): { hwm: number; rss: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    return { hwm: Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0), rss: Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0) };
  } catch {
    return null;
  }
}

/** `pid` and every process below it. */
function tree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const c of readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, "utf8").trim().split(/\s+/)) if (c) out.push(Number(c));
    } catch {
      // gone
    }
  }
  return out;
}

interface Run {
  code: number;
  seconds: number;
  /** Largest VmHWM of any one process in the tree, MB. */
  peakProcess: number;
  /** Largest sampled sum of VmRSS over the tree, MB. */
  peakTree: number;
  /** CPU time (user + system) of the process and the children it waited for, seconds. */
  cpuSeconds: number;
  stderr: string;
}

/** Run a command, sampling its process tree's memory every 20 ms. */
export async function measure(cmd: string[], opts: { cwd: string; env: Record<string, string | undefined> }): Promise<Run> {
  const t0 = performance.now();
  const p = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const hwm = new Map<number, number>();
  let peakTree = 0;
  let done = false;
  const stderr = new Response(p.stderr).text();
  void p.exited.then(() => {
    done = true;
  });
  while (!done) {
    let sum = 0;
    for (const pid of tree(p.pid)) {
      const m = procMem(pid);
      if (!m) continue;
      hwm.set(pid, Math.max(hwm.get(pid) ?? 0, m.hwm));
      sum += m.rss;
    }
    peakTree = Math.max(peakTree, sum);
    await Bun.sleep(20);
  }
  const code = await p.exited;
  const cpuSeconds = Number(p.resourceUsage()?.cpuTime.total ?? 0) / 1e6;
  return { code, seconds: (performance.now() - t0) / 1000, peakProcess: Math.max(0, ...hwm.values()) / 1024, peakTree: peakTree / 1024, cpuSeconds, stderr: (await stderr).trim() };
}

async function main(): Promise<void> {
  const cacheRoot = process.env.BENCH_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "grex-bench");
  const name = `memory-c${COMMITS}-f${FILES}-b${BLOB_BYTES}-v1`;
  const served = join(cacheRoot, "served");
  const bare = join(served, `${name}.git`);
  if (!existsSync(join(bare, "grex-bench-complete"))) {
    rmSync(bare, { recursive: true, force: true });
    mkdirSync(served, { recursive: true });
    console.error(`generating ${name} (${COMMITS} commits, ${FILES} files) under ${cacheRoot}; cached for later runs…`);
    const t = performance.now();
    await generate(bare);
    await Bun.write(join(bare, "grex-bench-complete"), "");
    console.error(`generated in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  const pack = packBytes(bare);
  const root = mkdtempSync(join(tmpdir(), "grex-bench-memory-"));
  const home = join(root, "home");
  mkdirSync(home);
  const env = benchEnv(home);
  const server = await startGitHttpServer(served);
  try {
    const url = `${server.url}/${name}.git`;
    const ws = join(root, "ws");
    mkdirSync(ws);
    const init = Bun.spawnSync([process.execPath, GREX_MAIN, "init"], { cwd: ws, env, stdout: "ignore", stderr: "pipe" });
    if (init.exitCode !== 0) throw new Error(`grex init failed: ${init.stderr}`);
    // Both check out the default branch: git clone and grex add do the same work.
    const git = await measure(["git", "clone", "--quiet", url, join(root, "git-clone")], { cwd: root, env });
    const grex = await measure([process.execPath, GREX_MAIN, "add", url, "repo"], { cwd: ws, env });
    const row = (who: string, r: Run) => `| ${who} | ${r.code} | ${r.seconds.toFixed(1)} | ${r.peakProcess.toFixed(0)} | ${r.peakTree.toFixed(0)} |`;
    console.log(`\nrepository: ${COMMITS} commits, ${FILES} files, pack ${(pack / 1e6).toFixed(0)} MB (${name})\n`);
    console.log("| command | exit | wall s | peak RSS, largest process (MB) | peak RSS, process tree (MB) |");
    console.log("|---|---|---|---|---|");
    console.log(row("git clone (http)", git));
    console.log(row("grex add (http)", grex));
    const ratio = grex.peakTree / git.peakTree;
    console.log(`\ngrex / git peak (tree): ${ratio.toFixed(2)}x (goal: at most 2x)`);
    if (git.code !== 0) console.log(`git: ${git.stderr}`);
    if (grex.code !== 0) console.log(`grex: ${grex.stderr}`);
  } finally {
    await server.stop();
    if (process.env.BENCH_KEEP !== "1") rmSync(root, { recursive: true, force: true });
    else console.error(`kept ${root}`);
  }
}

if (import.meta.main) await main();
