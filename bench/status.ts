// Status cost (`bun bench/status.ts`), all in one run on one machine, timed by
// `hyperfine -N`:
//   1. `grex status --json` on N installed declarative packs (mkdir + symlink +
//      env each), and on N installed plain packs of realistic shape (30
//      commits / 50 files, plain paths), beside a compiled hello-world written
//      with Bun.stdout (the floor); goal: within 6× of it. `grex ls --json` is
//      shown for reference.
//   2. `grex status --fetch --json` on the same N packs, cloned over loopback
//      smart HTTP, beside `xargs -P 8 git fetch` over git clones of the same
//      repositories; goal: faster.
//   3. Resident status (bench/status-resident.ts): 5 packs × 20k files,
//      `grex status --json` and MCP `status` with and without a `grex serve`
//      keeping status; goals ≤ 0.3×, and ≤ 5 ms for MCP on an unchanged
//      workspace.
// Env: BENCH_N (default 100), BENCH_RUNS (hyperfine --runs, default 10),
// BENCH_KEEP=1 keeps the temp dir.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { SETTLED_MS } from "../src/core/git/worktree/status-cache.ts";
import { startGitHttpServer } from "../test/helpers/git-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";
import { makeReposScript } from "./fixtures/repos.ts";
import { COMPILE_FLAGS, grexBuildCommand } from "../scripts/compile.ts";
import { benchResident } from "./status-resident.ts";

const N = Number(process.env.BENCH_N ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const PAR = 8;
const bun = process.execPath;
const root = mkdtempSync(join(tmpdir(), "grex-bench-status-"));
const home = join(root, "home");
mkdirSync(home);
const env = benchEnv(home);
const log = (m: string) => process.stderr.write(`${m}\n`);

/** Run to completion without blocking this process (it serves HTTP). */
async function run(cmd: string[], cwd: string): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${code}: ${err.trim().slice(0, 2000)}`);
  return out;
}

// Binaries: the floor and grex, compiled the same way.
const hello = join(root, "hello.ts");
writeFileSync(hello, 'await Bun.write(Bun.stdout, "hello\\n");\n');
await run([bun, "build", ...COMPILE_FLAGS, hello, "--outfile", join(root, "hello")], root);
await run(grexBuildCommand(join(root, "grex")), root);
const grex = join(root, "grex");

// Upstreams: N declarative packs, bare copies served over HTTP.
const up = join(root, "upstream");
const serve = join(root, "serve");
mkdirSync(up);
mkdirSync(serve);
log(`bench/status: making ${N} declarative packs in ${root}`);
const yaml = (i: number) => `schema_version: "1"
name: p${i}
type: declarative
actions:
  - mkdir: { path: $HOME/.p${i} }
  - symlink: { src: files/p.conf, dst: $HOME/.p${i}/p.conf }
  - env: { name: GREX_BENCH_P${i}, value: "${i}", scope: user }
`;
for (let i = 0; i < N; i++) {
  const d = join(up, `p${i}`);
  mkdirSync(join(d, ".grex"), { recursive: true });
  mkdirSync(join(d, "files"));
  writeFileSync(join(d, ".grex", "pack.yaml"), yaml(i));
  writeFileSync(join(d, "files", "p.conf"), `pack ${i}\n`);
}
await run(
  ["sh", "-c", `set -e; for d in "${up}"/*; do n=$(basename "$d"); git -C "$d" init -q -b main; git -C "$d" add -A; git -C "$d" commit -q -m init; git clone -q --bare --no-local "$d" "${serve}/$n.git"; done`],
  root,
);
const server = await startGitHttpServer(serve);
const names = Array.from({ length: N }, (_, i) => `p${i}`);

try {
  // The grex workspace (over HTTP) and plain git clones for the baseline.
  const ws = join(root, "ws");
  const clones = join(root, "clones");
  mkdirSync(ws);
  mkdirSync(clones);
  await run([grex, "init"], ws);
  writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: `${server.url}/${n}.git`, path: n }))));
  await run([grex, "import", "--from-repos-json", "REPOS.json", "--default-type", "declarative"], ws);
  await run([grex, "sync", "--parallel", String(PAR)], ws);
  await run(["sh", "-c", `for n in ${names.join(" ")}; do echo "${server.url}/$n.git $n"; done | xargs -P ${PAR} -n 2 sh -c 'git clone -q "$0" "$1"'`], clones);
  writeFileSync(join(clones, "list"), `${names.join("\n")}\n`);

  // Sanity: every pack installed and clean; a status --fetch run agrees.
  for (const args of [["status", "--json", "--fail-on-drift"], ["status", "--fetch", "--json", "--fail-on-drift"]]) {
    const doc = JSON.parse(await run([grex, ...args], ws)) as { packs: Array<{ drift: string; behind: number | null }> };
    if (doc.packs.length !== N || doc.packs.some((p) => p.drift !== "clean" || p.behind !== 0)) throw new Error(`status is not clean: ${JSON.stringify(doc.packs.slice(0, 2))}`);
  }

  // The realistic plain packs: their own workspace, reached with --manifest.
  const plainUp = join(root, "plain-upstream");
  const streams = join(root, "streams");
  const plainWs = join(root, "ws-plain");
  for (const d of [plainUp, streams, plainWs]) mkdirSync(d);
  writeFileSync(join(root, "make-plain.sh"), makeReposScript(names, plainUp, streams));
  await run(["sh", join(root, "make-plain.sh")], root);
  await run([grex, "init"], plainWs);
  writeFileSync(join(plainWs, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: join(plainUp, n), path: n }))));
  await run([grex, "import", "--from-repos-json", "REPOS.json"], plainWs);
  await run([grex, "sync", "--parallel", String(PAR)], plainWs);
  const plainManifest = join(plainWs, "grex.jsonl");
  const plainDoc = JSON.parse(await run([grex, "status", "--json", "--fail-on-drift", "--manifest", plainManifest], root)) as { packs: unknown[] };
  if (plainDoc.packs.length !== N) throw new Error(`plain workspace: ${plainDoc.packs.length} packs, expected ${N}`);
  // Status remembers a directory (its status cache) only once it is a few
  // seconds old: wait that out, as any status run after a quiet moment would.
  await Bun.sleep(SETTLED_MS + 100);

  const hyperfine = async (cwd: string, commands: string[]): Promise<Array<{ command: string; median: number; stddev: number }>> => {
    const out = join(root, "hyperfine.json");
    await run(["hyperfine", "-N", "--warmup", "3", "--runs", String(RUNS), "--export-json", out, ...commands], cwd);
    return (JSON.parse(readFileSync(out, "utf8")) as { results: Array<{ command: string; median: number; stddev: number }> }).results;
  };

  log("bench/status: status --json vs the floor");
  const [floor, status, plain, ls] = await hyperfine(ws, [
    join(root, "hello"),
    `${grex} status --json`,
    `${grex} status --json --manifest ${plainManifest}`,
    `${grex} ls --json`,
  ]);
  log("bench/status: status --fetch vs xargs -P 8 git fetch");
  const [fetch, xargs] = await hyperfine(ws, [
    `${grex} status --fetch --json`,
    `sh -c "xargs -P ${PAR} -n 1 sh -c 'git -C ${clones}/\\$0 fetch -q' < ${clones}/list"`,
  ]);
  if (!floor || !status || !plain || !ls || !fetch || !xargs) throw new Error("hyperfine returned too few results");

  const ms = (s: number) => `${(s * 1000).toFixed(1)} ms`;
  console.log(`\nStatus benchmark: ${N} installed declarative packs, ${availableParallelism()} CPUs, bun ${Bun.version}, hyperfine -N, median of ${RUNS}\n`);
  console.log(`compiled hello-world (Bun.stdout)          ${ms(floor.median)}`);
  console.log(`compiled grex status --json                ${ms(status.median)}  (${(status.median / floor.median).toFixed(2)}× floor; goal ≤ 6×: ${status.median <= 6 * floor.median ? "yes" : "NO"})`);
  console.log(`compiled grex status --json, plain packs    ${ms(plain.median)}  (${(plain.median / floor.median).toFixed(2)}× floor; goal ≤ 6×: ${plain.median <= 6 * floor.median ? "yes" : "NO"}; 30 commits / 50 files each)`);
  console.log(`compiled grex ls --json (reference)         ${ms(ls.median)}  (${(ls.median / floor.median).toFixed(2)}× floor)`);
  console.log(`compiled grex status --fetch --json (HTTP) ${ms(fetch.median)}`);
  console.log(`xargs -P ${PAR} git fetch (HTTP)                ${ms(xargs.median)}  (grex ${(fetch.median / xargs.median).toFixed(2)}×; goal < 1: ${fetch.median < xargs.median ? "yes" : "NO"})`);

  await benchResident({ grex, root });
} finally {
  await server.stop();
  if (process.env.BENCH_KEEP === "1") log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
