// The npm routes' cost (`bun bench/npm-launcher.ts`): `grex --version`,
// `grex ls --json` and `grex status --json` (on a workspace of BENCH_PACKS
// plain packs) through
//   - npm:       the `grex` an ordinary `npm i -g` installs, which its install
//                step made the platform binary itself (npm/install.cjs);
//   - launcher:  the `grex` of `npm i -g --ignore-scripts`, the Node launcher
//                (npm/launcher.cjs) spawning that binary — the fallback;
//   - binary:    the compiled binary run directly (the anchor; goal: npm ≤ 1.2×);
// plus an empty Node script started the same way (`#!/usr/bin/env node`),
// which is Node's own start-up. The packages are packed and installed as
// test/integration/npm-install.test.ts does (scripts/pack-npm.ts, then
// `npm i -g --prefix` offline), with a PATH holding Node and no Bun.
// Timed by `hyperfine -N` (or, without hyperfine, a spawn loop here) in
// ROUNDS rounds of RUNS runs per case, the cases taking turns each round, so
// load drift on a shared machine hits all alike.
//
// Env: BENCH_RUNS (runs per case per round, default 5), BENCH_ROUNDS (default 6),
// BENCH_PACKS (default 20).
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { packHost } from "../scripts/pack-npm.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PACKS = Number(process.env.BENCH_PACKS ?? 20);
const root = mkdtempSync(join(tmpdir(), "grex-bench-npm-"));
const log = (m: string) => Bun.write(Bun.stderr, `${m}\n`);

function must(argv: string[], cwd: string, env: Record<string, string>): string {
  const r = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.slice(0, 4).join(" ")} failed: ${r.stderr.toString().trim().slice(0, 2000)}`);
  return r.stdout.toString();
}

/** Seconds per run of each command (cwd `cwd`), by hyperfine -N or a spawn loop. */
function timeRound(commands: Array<[string, string]>, cwd: string, env: Record<string, string>, hyperfine: string | null, out: string): Record<string, number[]> {
  const times: Record<string, number[]> = {};
  if (hyperfine) {
    const r = Bun.spawnSync([hyperfine, "-N", "--warmup", "1", "--runs", String(RUNS), "--export-json", out, ...commands.flatMap(([n, c]) => ["-n", n, c])], {
      cwd,
      env,
      stdout: "ignore",
      stderr: "pipe",
    });
    if (r.exitCode !== 0) throw new Error(`hyperfine failed: ${r.stderr.toString()}`);
    for (const res of (JSON.parse(readFileSync(out, "utf8")) as { results: { command: string; times: number[] }[] }).results) times[res.command] = res.times;
    return times;
  }
  for (const [name, command] of commands) {
    const argv = command.split(" ");
    Bun.spawnSync(argv, { cwd, env, stdout: "ignore", stderr: "ignore" });
    const xs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = Bun.nanoseconds();
      Bun.spawnSync(argv, { cwd, env, stdout: "ignore", stderr: "ignore" });
      xs.push((Bun.nanoseconds() - t0) / 1e9);
    }
    times[name] = xs;
  }
  return times;
}

try {
  const node = Bun.which("node");
  const npm = Bun.which("npm");
  const git = Bun.which("git");
  const hyperfine = Bun.which("hyperfine");
  if (!node || !npm || !git) throw new Error("bench/npm-launcher needs node, npm and git on PATH");
  if (!hyperfine) log("bench/npm-launcher: hyperfine is not on PATH; timing with a spawn loop instead");
  const tools = join(root, "tools");
  mkdirSync(tools);
  for (const [name, p] of [["node", node], ["npm", npm], ["git", git], ["sh", "/bin/sh"], ["mkdir", Bun.which("mkdir") ?? "/bin/mkdir"]] as const) symlinkSync(realpathSync(p), join(tools, name));
  const home = join(root, "home");
  mkdirSync(home);
  const envFor = (prefix: string) => ({
    HOME: home,
    PATH: `${join(prefix, "bin")}:${tools}`,
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_update_notifier: "false",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "bench",
    GIT_AUTHOR_EMAIL: "bench@example.invalid",
    GIT_COMMITTER_NAME: "bench",
    GIT_COMMITTER_EMAIL: "bench@example.invalid",
  });

  log("bench/npm-launcher: packing and installing (with install scripts, and with --ignore-scripts)");
  const { main, platform } = packHost(join(root, "npm"));
  const withScripts = join(root, "prefix");
  const noScripts = join(root, "prefix-noscripts");
  const env = envFor(withScripts);
  must([join(tools, "npm"), "i", "-g", "--prefix", withScripts, "--offline", "--no-audit", "--no-fund", main, platform], root, env);
  must([join(tools, "npm"), "i", "-g", "--prefix", noScripts, "--offline", "--no-audit", "--no-fund", "--ignore-scripts", main, platform], root, env);
  const binary = join(withScripts, "lib", "node_modules", `${pkg.name}-${process.platform}-${process.arch}`, "bin", "grex");
  const npmGrex = join(withScripts, "bin", "grex");
  const launcherGrex = join(noScripts, "bin", "grex");
  if (readFileSync(npmGrex).subarray(0, 2).toString() === "#!") log("bench/npm-launcher: WARNING: the install step kept the Node launcher; the npm row is the launcher");
  const emptyNode = join(root, "empty-node");
  writeFileSync(emptyNode, "#!/usr/bin/env node\n", { mode: 0o755 });

  log(`bench/npm-launcher: a workspace of ${PACKS} plain packs`);
  const up = join(root, "upstream");
  const ws = join(root, "ws");
  mkdirSync(up);
  mkdirSync(ws);
  const names = Array.from({ length: PACKS }, (_, i) => `p${i}`);
  must(
    ["sh", "-c", `set -e; for n in ${names.join(" ")}; do mkdir -p "${up}/$n/src"; for f in 1 2 3 4 5 6 7 8 9 10; do echo "$n $f" > "${up}/$n/src/f$f.txt"; done; git -C "${up}/$n" init -q -b main; git -C "${up}/$n" add -A; git -C "${up}/$n" commit -q -m init; done`],
    root,
    env,
  );
  must([binary, "init"], ws, env);
  writeFileSync(join(ws, "REPOS.json"), JSON.stringify(names.map((n) => ({ url: join(up, n), path: n }))));
  must([binary, "import", "--from-repos-json", "REPOS.json"], ws, env);
  must([binary, "sync"], ws, env);
  await Bun.sleep(3200); // past the status cache's settle time, as any run after a quiet moment

  const verbs: Array<[string, string]> = [
    ["--version", "--version"],
    ["ls", "ls --json"],
    ["status", "status --json"],
  ];
  const cases: Array<[string, string]> = [];
  for (const [verb, args] of verbs) {
    cases.push([`npm ${verb}`, `${npmGrex} ${args}`], [`binary ${verb}`, `${binary} ${args}`], [`launcher ${verb}`, `${launcherGrex} ${args}`]);
  }
  cases.push(["empty Node script", emptyNode]);
  const times: Record<string, number[]> = Object.fromEntries(cases.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? cases : [...cases].reverse();
    for (const [name, xs] of Object.entries(timeRound(order, ws, env, hyperfine, join(root, `round-${round}.json`)))) times[name]?.push(...xs);
  }
  const median = (xs: number[]) => ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN) * 1000;
  process.stdout.write(`\nnpm routes vs the compiled binary: ${PACKS} plain packs, ${hyperfine ? "hyperfine -N" : "spawn loop"}, ${ROUNDS}×${RUNS} runs per case, medians in ms\n\n`);
  process.stdout.write(`${"command".padEnd(12)} ${"binary".padStart(8)} ${"npm".padStart(8)} ${"npm/bin".padStart(8)} ${"launcher".padStart(9)} ${"launch/bin".padStart(10)}  goal npm ≤ 1.2×\n`);
  for (const [verb] of verbs) {
    const b = median(times[`binary ${verb}`] ?? []);
    const n = median(times[`npm ${verb}`] ?? []);
    const l = median(times[`launcher ${verb}`] ?? []);
    process.stdout.write(
      `${verb.padEnd(12)} ${b.toFixed(1).padStart(8)} ${n.toFixed(1).padStart(8)} ${`${(n / b).toFixed(2)}×`.padStart(8)} ${l.toFixed(1).padStart(9)} ${`${(l / b).toFixed(2)}×`.padStart(10)}  ${n <= 1.2 * b ? "yes" : "NO"}\n`,
    );
  }
  process.stdout.write(`empty Node script (Node's own start-up): ${median(times["empty Node script"] ?? []).toFixed(1)} ms\n`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
