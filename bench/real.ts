// Real-shape repositories (`bun bench/real.ts [path-to-repository ...]`):
// grex beside the git CLI, in the same run, on generated equivalents of the
// repository types grex was tried on (smaller than the originals where a full
// run would take too long, same shape):
//   - "names":  BENCH_FILES files (default 36,000) with long, non-ASCII names
//               in 360 directories, BENCH_SYNC + 50 commits of history;
//   - "long":   a linear history of BENCH_COMMITS commits (default 40,000);
//   - "crlf":   10,000 files under CRLF rules (`text=auto`, `eol=crlf`,
//               `eol=lf`, `binary` in .gitattributes);
//   - "tags":   a history of BENCH_TAGS commits (default 20,000), each tagged
//               (every tenth tag annotated), like vim's 19,877 tags;
//   - "submodules": 2,000 files with a submodule that has a submodule of its
//               own (`add --recurse-submodules` / `git clone --recurse-submodules`);
//   - "lfs":    2,000 files, 300 of them through a long-running
//               `filter.<driver>.process` filter (git-lfs's way of working;
//               the test filter of test/fixtures/filter-process);
//   - every repository path given on the command line (read only: a bare
//     mirror is made of each).
// For each: the served mirror is rewound by BENCH_SYNC commits (default 100),
// then
//   1. add:      `grex add <path>` in a fresh workspace / `git clone <path>`
//                (and the same over loopback smart HTTP for "names" and "long");
//   2. status:   clean `grex status --json` / `git status` (median of BENCH_RUNS);
//   3. sync:     the mirror moves forward BENCH_SYNC commits; `grex sync` /
//                `git pull --ff-only`;
//   4. ahead:    one local commit; `grex status --json` / `git status -sb`.
// Each line: milliseconds and peak RSS of both, and the ratios grex / git
// (goals: time ≤ 1.0, RSS ≤ 2.0). Peak RSS is GNU time's %M: the largest
// resident set of the command or of any one process it waited for (git's
// index-pack, upload-pack, a filter), so git is never charged for the sum of
// its processes. RSS does not depend on how loaded the machine is; time does.
// grex is the compiled binary (`npm run build`'s way).
// Env: BENCH_FILES, BENCH_COMMITS, BENCH_TAGS, BENCH_SYNC, BENCH_RUNS (default 3),
// BENCH_ONLY=names,lfs (a subset), BENCH_GREX=<a grex binary> (instead of building
// this tree's), BENCH_KEEP=1.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { grexBuildCommand } from "../scripts/compile.ts";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";

const FILES = Number(process.env.BENCH_FILES ?? 36_000);
const COMMITS = Number(process.env.BENCH_COMMITS ?? 40_000);
const TAGS = Number(process.env.BENCH_TAGS ?? 20_000);
const SYNC = Number(process.env.BENCH_SYNC ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",")) : null;
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
interface TreeShape {
  files: number;
  commits: number;
  /** Path of file `f`. */
  name(f: number): string;
  /** Content of file `f` as committed (`c` 0 for the first commit). */
  body(f: number, c: number): string;
  /** Extra entries of the first commit (.gitattributes, gitlinks: `M` lines). */
  extra?: string;
}

/** A tree of `files` files, then `commits` commits changing 5 files each. */
function streamTree(t: TreeShape): string {
  const parts: string[] = [];
  const when = (i: number) => `${1_600_000_000 + i * 3600} +0000`;
  const put = (path: string, body: string) => parts.push(`M 100644 inline ${path}\ndata ${Buffer.byteLength(body)}\n${body}\n`);
  parts.push(`commit refs/heads/main\nmark :1\ncommitter B <b@example.invalid> ${when(0)}\ndata 5\ntree\n`);
  if (t.extra) parts.push(t.extra);
  for (let f = 0; f < t.files; f++) put(t.name(f), t.body(f, 0));
  for (let c = 1; c <= t.commits; c++) {
    parts.push(`\ncommit refs/heads/main\nmark :${c + 1}\ncommitter B <b@example.invalid> ${when(c)}\ndata ${String(c).length + 2}\nc${c}\n\nfrom :${c}\n`);
    for (let k = 0; k < 5; k++) {
      const f = (c * 7919 + k * 104_729) % t.files;
      put(t.name(f), t.body(f, c));
    }
  }
  return `${parts.join("")}\n`;
}

const sourceText = (f: number, c: number) => `file ${f}${c ? ` changed in ${c}` : ""}\n${"some realistic line of source text\n".repeat(1 + ((f + c) % 40))}`;

/** Long, non-ASCII names (as in a 36k-file repository of documents). */
const names = (files: number): TreeShape => ({
  files,
  commits: SYNC + 50,
  name: (f) => `src/Ordner-${String(f % 360).padStart(3, "0")}-données/${"Übersicht_長い名前_".repeat(1 + (f % 5))}${"segment-".repeat(f % 7)}f${f}.txt`,
  body: sourceText,
});

/** CRLF rules: text files normalised to LF in the repository, written with CRLF or LF by attribute. */
function crlf(files: number): TreeShape {
  const ext = ["txt", "sh", "md", "bin", "ps1"];
  const attrs = "* text=auto\n*.txt eol=crlf\n*.ps1 text eol=crlf\n*.sh eol=lf\n*.bin binary\n";
  return {
    files,
    commits: SYNC + 50,
    name: (f) => `src/d${String(f % 200).padStart(3, "0")}/f${f}.${ext[f % ext.length]}`,
    body: sourceText,
    extra: `M 100644 inline .gitattributes\ndata ${attrs.length}\n${attrs}\n`,
  };
}

/** A history of `commits` commits, each tagged (lightweight, every tenth annotated). */
function streamTags(commits: number): string {
  const parts: string[] = [];
  for (let c = 1; c <= commits; c++) {
    parts.push(`commit refs/heads/main\nmark :${c}\ncommitter B <b@example.invalid> ${1_600_000_000 + c * 60} +0000\ndata ${String(c).length + 2}\nc${c}\n\n`);
    if (c > 1) parts.push(`from :${c - 1}\n`);
    const body = `version ${c}\n`;
    parts.push(`M 100644 inline src/version${c % 300}.h\ndata ${body.length}\n${body}\n\n`);
  }
  for (let c = 1; c <= commits; c++) {
    const name = `v9.0.${String(c).padStart(5, "0")}`;
    if (c % 10 === 0) parts.push(`tag ${name}\nfrom :${c}\ntagger B <b@example.invalid> ${1_600_000_000 + c * 60} +0000\ndata ${name.length + 7}\npatch ${name}\n\n`);
    else parts.push(`reset refs/tags/${name}\nfrom :${c}\n\n`);
  }
  return parts.join("");
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

const gitmodules = (name: string, url: string) => {
  const text = `[submodule "${name}"]\n\tpath = ${name}\n\turl = ${url}\n`;
  return `M 100644 inline .gitmodules\ndata ${text.length}\n${text}\n`;
};

/**
 * A superproject whose submodule has a submodule (Mbed TLS's shape). The two
 * submodules are served beside the superproject's mirror, so their relative
 * URLs (`../mid.git`) resolve there by path and by HTTP alike.
 */
async function generateSubmodules(serve: string): Promise<string> {
  const leaf = await generate("leaf", streamTree({ files: 300, commits: 0, name: (f) => `leaf/f${f}.c`, body: sourceText }));
  await git(root, "clone", "-q", "--bare", leaf, join(serve, "leaf.git"));
  const leafTip = await git(leaf, "rev-parse", "HEAD");
  const mid = await generate("mid", streamTree({ files: 500, commits: 0, name: (f) => `mid/f${f}.c`, body: sourceText, extra: `${gitmodules("leaf", "../leaf.git")}M 160000 ${leafTip} leaf\n` }));
  await git(root, "clone", "-q", "--bare", mid, join(serve, "mid.git"));
  const midTip = await git(mid, "rev-parse", "HEAD");
  return generate("submodules", streamTree({ files: 2000, commits: SYNC + 50, name: (f) => `src/d${f % 40}/f${f}.c`, body: sourceText, extra: `${gitmodules("mid", "../mid.git")}M 160000 ${midTip} mid\n` }));
}

/** Files of which every seventh goes through the `rot13` process filter (configured for both in the bench's HOME). */
function lfs(files: number): TreeShape {
  const attrs = "*.bin filter=rot13 -text\n";
  return {
    files,
    commits: SYNC + 50,
    name: (f) => (f % 7 === 0 ? `assets/a${f % 50}/model${f}.bin` : `src/d${f % 50}/f${f}.py`),
    body: (f, c) => (f % 7 === 0 ? `weights ${f} ${c}\n${"0123456789abcdefghijklmnopqrstuvwxyz\n".repeat(1800)}` : sourceText(f, c)),
    extra: `M 100644 inline .gitattributes\ndata ${attrs.length}\n${attrs}\n`,
  };
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
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "-");
function report(r: Row): void {
  rows.push(r);
  log(`  ${r.what.padEnd(34)} grex ${r.grex.ms.toFixed(0).padStart(7)} ms ${mb(r.grex.rss).padStart(7)}   git ${r.git.ms.toFixed(0).padStart(7)} ms ${mb(r.git.rss).padStart(7)}   time ${ratio(r.grex.ms, r.git.ms)}  RSS ${ratio(r.grex.rss, r.git.rss)}`);
}

const grex = join(root, "grex");

interface RepoOptions {
  /** Also add and sync over loopback smart HTTP. */
  http?: boolean;
  /** Submodules: `add --recurse-submodules`, `git clone/pull --recurse-submodules`. */
  submodules?: boolean;
}

async function benchRepo(name: string, source: string, server: { url: string }, opts: RepoOptions = {}): Promise<void> {
  log(`bench/real: ${name} (${source})`);
  const mirror = join(root, "serve", `${name}.git`);
  await git(root, "clone", "-q", "--bare", source, mirror);
  const branch = (await git(mirror, "symbolic-ref", "--short", "HEAD")) || "main";
  const tip = await git(mirror, "rev-parse", branch);
  const total = Number(await git(mirror, "rev-list", "--count", branch));
  const n = Math.min(SYNC, total - 1);
  const old = await git(mirror, "rev-parse", `${branch}~${n}`);
  // Tags on the commits to come are held back with them: the sync brings the commits, not an add that had them already.
  const held = (await git(mirror, "for-each-ref", "--contains", old, "--format=%(refname) %(objectname) %(*objectname)", "refs/tags/"))
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split(" "))
    .filter(([, obj, peeled]) => (peeled || obj) !== old)
    .map(([ref, obj]) => `${ref} ${obj}`);
  await run(["git", "update-ref", "--stdin"], mirror, Buffer.from(`${held.map((l) => `delete ${l.split(" ")[0]}\n`).join("")}update refs/heads/${branch} ${old}\n`));
  const files = Number((await git(mirror, "ls-tree", "-r", "--name-only", tip)).split("\n").length);
  log(`  ${total} commits, ${files} files at the tip; ${n} commits${held.length ? ` and ${held.length} tags` : ""} to sync`);

  const work = join(root, "work", name);
  mkdirSync(work, { recursive: true });
  const url = `${server.url}/${name}.git`;
  const sides: Array<["path" | "http", string]> = [["path", mirror]];
  if (opts.http) sides.push(["http", url]);
  const rec = opts.submodules ? ["--recurse-submodules"] : [];
  for (const [how, from] of sides) {
    const ws = join(work, `ws-${how}`);
    mkdirSync(ws);
    await run([grex, "init"], ws);
    const g = await run([grex, "add", ...rec, from, "pack"], ws);
    const c = await run(["git", "clone", "-q", ...rec, from, join(work, `git-${how}`)], work);
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

  await run(["git", "update-ref", "--stdin"], mirror, Buffer.from(`${held.map((l) => `create ${l}\n`).join("")}update refs/heads/${branch} ${tip}\n`));
  for (const [how] of sides) {
    const g = await run([grex, "sync", "--json"], join(work, `ws-${how}`));
    const c = await run(["git", "pull", "-q", "--ff-only", ...rec], join(work, `git-${how}`));
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
  if (process.env.BENCH_GREX) {
    // Another build (an older commit's, to compare): copied, so it is run as this one would be.
    log(`bench/real: using ${process.env.BENCH_GREX}`);
    await run(["cp", resolve(process.env.BENCH_GREX), grex], root);
  } else {
    log(`bench/real: building grex in ${root}`);
    await run(grexBuildCommand(grex), join(import.meta.dir, ".."));
  }
  const serve = join(root, "serve");
  mkdirSync(serve);
  const server = await startGitHttpServer(serve);
  try {
    // Both sides read the same global config: the test filter, and submodules by path (git refuses file transport for them by default).
    await git(root, "config", "--global", "filter.rot13.process", `${process.execPath} ${join(import.meta.dir, "..", "test", "fixtures", "filter-process", "rot13-filter.ts")} ${join(root, "filter.log")}`);
    await git(root, "config", "--global", "filter.rot13.required", "true");
    await git(root, "config", "--global", "protocol.file.allow", "always");
    const repos: Array<[string, () => Promise<string>, RepoOptions]> = [
      ["names", () => generate("names", streamTree(names(FILES))), { http: true }],
      ["long", () => generate("long", streamLong(COMMITS)), { http: true }],
      ["crlf", () => generate("crlf", streamTree(crlf(10_000))), {}],
      ["tags", () => generate("tags", streamTags(TAGS)), {}],
      ["submodules", () => generateSubmodules(serve), { submodules: true }],
      ["lfs", () => generate("lfs", streamTree(lfs(2000))), {}],
    ];
    for (const p of given) {
      if (!existsSync(p)) throw new Error(`${p} does not exist`);
      const name = basename(p).replace(/\.git$/, "").replace(/[^A-Za-z0-9_.-]/g, "_") || "repo";
      repos.push([name, async () => p, {}]);
    }
    for (const [name, make, opts] of repos) {
      if (ONLY && !ONLY.has(name)) continue;
      log(`bench/real: generating ${name}`);
      await benchRepo(name, await make(), server, opts);
    }
  } finally {
    await server.stop();
  }
  const table = [
    "| repository | operation | grex ms | git ms | time ratio | grex RSS | git RSS | RSS ratio |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...rows.map((r) => `| ${r.repo} | ${r.what} | ${r.grex.ms.toFixed(0)} | ${r.git.ms.toFixed(0)} | ${ratio(r.grex.ms, r.git.ms)} | ${mb(r.grex.rss)} | ${mb(r.git.rss)} | ${ratio(r.grex.rss, r.git.rss)} |`),
  ];
  console.log(table.join("\n"));
  writeFileSync(join(root, "results.md"), `${table.join("\n")}\n`);
} finally {
  if (process.env.BENCH_KEEP === "1") log(`bench/real: kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
