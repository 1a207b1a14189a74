// Real-shape repositories (`bun bench/real.ts [path-to-repository ...]`):
// grex beside the git CLI, in the same run, on
//   - "wide":  a generated tree of BENCH_FILES files (default 30,000) in 600
//              directories, with BENCH_SYNC + 50 commits of history;
//   - "long":  a generated linear history of BENCH_COMMITS commits (default
//              80,000);
//   - every repository path given on the command line (read only: a bare
//     mirror is made of each).
// For each: the served mirror is rewound by BENCH_SYNC commits (default 300),
// then
//   1. add:      `grex add <path>` in a fresh workspace / `git clone <path>`,
//                and the same over loopback smart HTTP;
//   2. status:   clean `grex status --json` / `git status` (median of BENCH_RUNS);
//   3. sync:     the mirror moves forward BENCH_SYNC commits; `grex sync` /
//                `git pull --ff-only`, over the path and over HTTP;
//   4. ahead:    one local commit; `grex status --json` / `git status -sb`.
// Each line: milliseconds and peak RSS of both, and the ratio grex / git
// (goal: ≤ 1.0). grex is the compiled binary (`npm run build`'s way).
// Env: BENCH_FILES, BENCH_COMMITS, BENCH_SYNC, BENCH_RUNS (default 5), BENCH_KEEP=1.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { grexBuildCommand } from "../scripts/compile.ts";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";

const FILES = Number(process.env.BENCH_FILES ?? 30_000);
const COMMITS = Number(process.env.BENCH_COMMITS ?? 80_000);
const SYNC = Number(process.env.BENCH_SYNC ?? 300);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const given = process.argv.slice(2).map((p) => resolve(p));

const root = mkdtempSync(join(tmpdir(), "grex-bench-real-"));
const home = join(root, "home");
mkdirSync(home);
const env = benchEnv(home);
const log = (m: string) => process.stderr.write(`${m}\n`);

interface Run {
  ms: number;
  rss: number;
  out: string;
}

/**
 * Run to completion without blocking this process (it serves HTTP): time,
 * peak RSS (GNU time's %M: the largest of the command and the processes it
 * waited for, such as git's index-pack), stdout.
 */
async function run(cmd: string[], cwd: string, stdin?: Uint8Array): Promise<Run> {
  const t0 = performance.now();
  const p = Bun.spawn(["/usr/bin/time", "-f", "GREX-BENCH-RSS %M", ...cmd], { cwd, env, stdin: stdin ?? "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  const kb = Number(/GREX-BENCH-RSS (\d+)/.exec(err)?.[1] ?? 0);
  return { ms, rss: kb * 1024, out };
}
const git = async (cwd: string, ...args: string[]) => (await run(["git", ...args], cwd)).out.trim();

/** The median run of `n` (by time; its RSS with it). */
async function median(n: number, f: () => Promise<Run>): Promise<Run> {
  const runs: Run[] = [];
  for (let i = 0; i < n; i++) runs.push(await f());
  runs.sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(runs.length / 2)] as Run;
}

// --- generated repositories, through git fast-import (seconds, not minutes)
function streamWide(files: number, commits: number): string {
  const parts: string[] = [];
  const when = (i: number) => `${1_600_000_000 + i * 3600} +0000`;
  parts.push(`commit refs/heads/main\nmark :1\ncommitter B <b@example.invalid> ${when(0)}\ndata 5\ntree\n`);
  for (let f = 0; f < files; f++) {
    const body = `file ${f}\n${"some realistic line of source text\n".repeat(1 + (f % 40))}`;
    parts.push(`M 100644 inline src/d${String(f % 600).padStart(3, "0")}/f${f}.txt\ndata ${Buffer.byteLength(body)}\n${body}\n`);
  }
  for (let c = 1; c <= commits; c++) {
    parts.push(`\ncommit refs/heads/main\nmark :${c + 1}\ncommitter B <b@example.invalid> ${when(c)}\ndata ${String(c).length + 2}\nc${c}\n\nfrom :${c}\n`);
    for (let k = 0; k < 5; k++) {
      const f = (c * 7919 + k * 104_729) % files;
      const body = `file ${f} changed in ${c}\n${"another line\n".repeat(1 + (c % 20))}`;
      parts.push(`M 100644 inline src/d${String(f % 600).padStart(3, "0")}/f${f}.txt\ndata ${Buffer.byteLength(body)}\n${body}\n`);
    }
  }
  return `${parts.join("")}\n`;
}

function streamLong(commits: number): string {
  const parts: string[] = [];
  for (let c = 1; c <= commits; c++) {
    parts.push(`commit refs/heads/main\nmark :${c}\ncommitter B <b@example.invalid> ${1_600_000_000 + c * 60} +0000\ndata ${String(c).length + 2}\nc${c}\n\n`);
    if (c > 1) parts.push(`from :${c - 1}\n`);
    if (c % 10 === 1) parts.push(`M 100644 inline f${c % 500}.txt\ndata ${String(c).length + 1}\n${c}\n`);
    parts.push("\n");
  }
  return parts.join("");
}

async function generate(name: string, stream: string): Promise<string> {
  const dir = join(root, "gen", name);
  mkdirSync(dir, { recursive: true });
  await git(dir, "init", "-q", "-b", "main");
  await run(["git", "fast-import", "--quiet"], dir, Buffer.from(stream));
  await git(dir, "checkout", "-q", "main");
  return dir;
}

// --- the measurements
interface Row {
  repo: string;
  what: string;
  grex: Run;
  git: Run;
}
const rows: Row[] = [];

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
function report(r: Row): void {
  rows.push(r);
  log(`  ${r.what.padEnd(34)} grex ${r.grex.ms.toFixed(0).padStart(7)} ms ${mb(r.grex.rss).padStart(7)}   git ${r.git.ms.toFixed(0).padStart(7)} ms ${mb(r.git.rss).padStart(7)}   ratio ${(r.grex.ms / r.git.ms).toFixed(2)}`);
}

const grex = join(root, "grex");

async function benchRepo(name: string, source: string, server: { url: string }): Promise<void> {
  log(`bench/real: ${name} (${source})`);
  const mirror = join(root, "serve", `${name}.git`);
  await git(root, "clone", "-q", "--bare", source, mirror);
  const branch = (await git(mirror, "symbolic-ref", "--short", "HEAD")) || "main";
  const tip = await git(mirror, "rev-parse", branch);
  const total = Number(await git(mirror, "rev-list", "--count", branch));
  const n = Math.min(SYNC, total - 1);
  const old = await git(mirror, "rev-parse", `${branch}~${n}`);
  await git(mirror, "update-ref", `refs/heads/${branch}`, old);
  const files = Number((await git(mirror, "ls-tree", "-r", "--name-only", tip)).split("\n").length);
  log(`  ${total} commits, ${files} files at the tip; ${n} commits to sync`);

  const work = join(root, "work", name);
  mkdirSync(work, { recursive: true });
  const url = `${server.url}/${name}.git`;
  const sides: Array<["path" | "http", string]> = [
    ["path", mirror],
    ["http", url],
  ];
  for (const [how, from] of sides) {
    const ws = join(work, `ws-${how}`);
    mkdirSync(ws);
    await run([grex, "init"], ws);
    const g = await run([grex, "add", from, "pack"], ws);
    const c = await run(["git", "clone", "-q", from, join(work, `git-${how}`)], work);
    report({ repo: name, what: `add by ${how}`, grex: g, git: c });
  }
  const pack = join(work, "ws-path", "pack");
  const clone = join(work, "git-path");
  await run([grex, "status", "--json"], join(work, "ws-path"));
  await run(["git", "status"], clone);
  report({
    repo: name,
    what: "clean status",
    grex: await median(RUNS, () => run([grex, "status", "--json"], join(work, "ws-path"))),
    git: await median(RUNS, () => run(["git", "status"], clone)),
  });

  await git(mirror, "update-ref", `refs/heads/${branch}`, tip);
  for (const [how] of sides) {
    const g = await run([grex, "sync", "--json"], join(work, `ws-${how}`));
    const c = await run(["git", "pull", "-q", "--ff-only"], join(work, `git-${how}`));
    const at = await git(join(work, `ws-${how}`, "pack"), "rev-parse", "HEAD");
    if (at !== tip) throw new Error(`grex sync left ${name} at ${at}, expected ${tip}`);
    report({ repo: name, what: `sync of ${n} commits by ${how}`, grex: g, git: c });
  }

  await git(pack, "commit", "-q", "--allow-empty", "-m", "local");
  await git(clone, "commit", "-q", "--allow-empty", "-m", "local");
  const st = await run([grex, "status", "--json"], join(work, "ws-path"));
  const row = (JSON.parse(st.out) as { packs: Array<{ ahead: number | null }> }).packs[0];
  if (row?.ahead !== 1) throw new Error(`grex status counted ${row?.ahead} commits ahead, expected 1`);
  report({
    repo: name,
    what: "status, one local commit",
    grex: await median(RUNS, () => run([grex, "status", "--json"], join(work, "ws-path"))),
    git: await median(RUNS, () => run(["git", "status", "-sb"], clone)),
  });
}

try {
  log(`bench/real: building grex in ${root}`);
  await run(grexBuildCommand(grex), join(import.meta.dir, ".."));
  const serve = join(root, "serve");
  mkdirSync(serve);
  const server = await startGitHttpServer(serve);
  try {
    const repos: Array<[string, string]> = [];
    log(`bench/real: generating wide (${FILES} files) and long (${COMMITS} commits)`);
    repos.push(["wide", await generate("wide", streamWide(FILES, SYNC + 50))]);
    repos.push(["long", await generate("long", streamLong(COMMITS))]);
    for (const p of given) {
      if (!existsSync(p)) throw new Error(`${p} does not exist`);
      repos.push([basename(p).replace(/\.git$/, "").replace(/[^A-Za-z0-9_.-]/g, "_") || "repo", p]);
    }
    for (const [name, src] of repos) await benchRepo(name, src, server);
  } finally {
    await server.stop();
  }
  const table = [
    "| repository | operation | grex ms | grex RSS | git ms | git RSS | ratio |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.repo} | ${r.what} | ${r.grex.ms.toFixed(0)} | ${mb(r.grex.rss)} | ${r.git.ms.toFixed(0)} | ${mb(r.git.rss)} | ${(r.grex.ms / r.git.ms).toFixed(2)} |`),
  ];
  console.log(table.join("\n"));
  writeFileSync(join(root, "results.md"), `${table.join("\n")}\n`);
} finally {
  if (process.env.BENCH_KEEP === "1") log(`bench/real: kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
