// The npm launcher's cost (`bun bench/npm-launcher.ts`): `grex --version`
// through the installed `grex` command (npm's bin link → bin/grex.cjs under
// Node → the platform package's binary) against the same binary run directly,
// the least a Node launcher can do (spawnSync of the binary, nothing else),
// and an empty Node script started the same way (`#!/usr/bin/env node`), which
// is Node's own start-up. The packages are packed and installed as
// test/integration/npm-install.test.ts does (scripts/pack-npm.ts, then
// `npm i -g --prefix` offline), with a PATH holding Node and no Bun.
// Timed by `hyperfine -N` in ROUNDS rounds of RUNS runs per case, the cases
// taking turns each round, so load drift on a shared machine hits all alike.
//
// Env: BENCH_RUNS (runs per case per round, default 5), BENCH_ROUNDS (default 12).
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { packHost } from "../scripts/pack-npm.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const root = mkdtempSync(join(tmpdir(), "grex-bench-npm-"));
const log = (m: string) => Bun.write(Bun.stderr, `${m}\n`);

try {
  const node = Bun.which("node");
  const npm = Bun.which("npm");
  const hyperfine = Bun.which("hyperfine");
  if (!node || !npm || !hyperfine) throw new Error("bench/npm-launcher needs node, npm and hyperfine on PATH");
  const tools = join(root, "tools");
  mkdirSync(tools);
  symlinkSync(realpathSync(node), join(tools, "node"));
  symlinkSync(realpathSync(npm), join(tools, "npm"));
  const prefix = join(root, "prefix");
  const env = { HOME: join(root, "home"), PATH: `${join(prefix, "bin")}:${tools}`, npm_config_registry: "http://127.0.0.1:9/", npm_config_update_notifier: "false" };
  mkdirSync(env.HOME);

  log("bench/npm-launcher: packing and installing");
  const { main, platform } = packHost(join(root, "npm"));
  const install = Bun.spawnSync([join(tools, "npm"), "i", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", main, platform], { env, stdout: "pipe", stderr: "pipe" });
  if (install.exitCode !== 0) throw new Error(`npm i -g failed: ${install.stderr.toString()}`);
  const binary = join(prefix, "lib", "node_modules", `${pkg.name}-${process.platform}-${process.arch}`, "bin", "grex");
  const emptyNode = join(root, "empty-node");
  writeFileSync(emptyNode, "#!/usr/bin/env node\n", { mode: 0o755 });
  // The least a Node launcher can do: spawn the binary, wait, take its status.
  const minimal = join(root, "minimal-launcher");
  writeFileSync(
    minimal,
    `#!/usr/bin/env node\nconst r = require("node:child_process").spawnSync(${JSON.stringify(binary)}, process.argv.slice(2), { stdio: "inherit" });\nprocess.exit(r.status ?? 1);\n`,
    { mode: 0o755 },
  );

  const cases: Record<string, string> = {
    "launcher (grex --version)": `${join(prefix, "bin", "grex")} --version`,
    "binary (grex --version)": `${binary} --version`,
    "minimal Node launcher": `${minimal} --version`,
    "empty Node script": emptyNode,
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  // CPU time (user + system, hyperfine's per-round means) is steadier than wall time on a loaded machine.
  const cpu: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const names = Object.keys(cases);
    const order = round % 2 === 0 ? names : [...names].reverse();
    const out = join(root, `round-${round}.json`);
    const r = Bun.spawnSync(
      [hyperfine, "-N", "--warmup", "1", "--runs", String(RUNS), "--export-json", out, ...order.flatMap((n) => ["-n", n, cases[n] as string])],
      { env, stdout: "ignore", stderr: "pipe" },
    );
    if (r.exitCode !== 0) throw new Error(`hyperfine failed: ${r.stderr.toString()}`);
    for (const res of (JSON.parse(readFileSync(out, "utf8")) as { results: { command: string; times: number[]; user: number; system: number }[] }).results) {
      times[res.command]?.push(...res.times);
      cpu[res.command]?.push(res.user + res.system);
    }
  }
  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mean = s.reduce((a, b) => a + b, 0) / s.length;
    return { mean: mean * 1000, median: (s[Math.floor(s.length / 2)] as number) * 1000, min: (s[0] as number) * 1000, n: s.length };
  };
  process.stdout.write(`${"case".padEnd(26)} ${"runs".padStart(5)} ${"mean ms".padStart(9)} ${"median".padStart(8)} ${"min".padStart(7)} ${"cpu ms".padStart(7)}\n`);
  const stats: Record<string, ReturnType<typeof stat>> = {};
  for (const [name, xs] of Object.entries(times)) {
    const s = (stats[name] = stat(xs));
    const c = (cpu[name] ?? []).reduce((a, b) => a + b, 0) / Math.max(1, cpu[name]?.length ?? 0);
    process.stdout.write(`${name.padEnd(26)} ${String(s.n).padStart(5)} ${s.mean.toFixed(1).padStart(9)} ${s.median.toFixed(1).padStart(8)} ${s.min.toFixed(1).padStart(7)} ${(c * 1000).toFixed(1).padStart(7)}\n`);
  }
  const l = stats["launcher (grex --version)"];
  const b = stats["binary (grex --version)"];
  const e = stats["empty Node script"];
  const m = stats["minimal Node launcher"];
  if (l && b && e && m) {
    process.stdout.write(
      `medians: launcher − binary ${(l.median - b.median).toFixed(1)} ms; Node's own start-up ${e.median.toFixed(1)} ms; launcher − minimal launcher ${(l.median - m.median).toFixed(1)} ms\n`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
