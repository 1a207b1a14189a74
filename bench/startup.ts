// Startup latency (`bun bench/startup.ts`): compiled hello-world (the floor)
// vs grex compiled and uncompiled, all measured in this run. Medians of N runs,
// ratios to the floor, and peak RSS from /proc (VmHWM) of a sample run.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const root = mkdtempSync(join(tmpdir(), "grex-bench-startup-"));
const repo = join(import.meta.dir, "..");
const bun = process.execPath;
const env = {
  ...process.env,
  HOME: join(root, "home"),
  GIT_AUTHOR_NAME: "b",
  GIT_AUTHOR_EMAIL: "b@example.invalid",
  GIT_COMMITTER_NAME: "b",
  GIT_COMMITTER_EMAIL: "b@example.invalid",
};
mkdirSync(env.HOME, { recursive: true });

function sh(cmd: string[], cwd = root): void {
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
}

// Binaries: the floor and grex, built the same way.
const hello = join(root, "hello.ts");
writeFileSync(hello, 'process.stdout.write("hello\\n");\n');
const flags = ["--compile", "--minify", "--bytecode", "--format=esm"];
sh([bun, "build", ...flags, hello, "--outfile", join(root, "hello")]);
sh([bun, "build", ...flags, join(repo, "src/cli/main.ts"), "--outfile", join(root, "grex")]);
const grexBin = join(root, "grex");
const grexSrc = [bun, join(repo, "src/cli/main.ts")];

// Workspaces: 1,000 registered packs for ls; 100 real clones for status.
const big = join(root, "ws-1000");
mkdirSync(big);
let manifest = "";
for (let i = 0; i < 1000; i++) {
  manifest += `${JSON.stringify({ op: "add", ts: "2026-01-01T00:00:00.000Z", id: `pack-${i}`, schema_version: "1", url: `https://example.invalid/pack-${i}.git`, path: `pack-${i}`, type: "meta", ref: null })}\n`;
}
writeFileSync(join(big, "grex.jsonl"), manifest);
writeFileSync(join(big, "grex.lock.jsonl"), "");

const hundred = join(root, "ws-100");
const up = join(root, "upstream");
mkdirSync(hundred);
mkdirSync(up);
const repos: Array<{ url: string; path: string }> = [];
for (let i = 0; i < 100; i++) {
  const d = join(up, `r${i}`);
  mkdirSync(d);
  writeFileSync(join(d, "README.md"), `repo ${i}\n`);
  sh(["git", "init", "-q", "-b", "main"], d);
  sh(["git", "add", "-A"], d);
  sh(["git", "commit", "-q", "-m", "init"], d);
  repos.push({ url: d, path: `r${i}` });
}
writeFileSync(join(hundred, "REPOS.json"), JSON.stringify(repos));
sh([...grexSrc, "init"], hundred);
sh([...grexSrc, "import", "--from-repos-json", "REPOS.json"], hundred);
sh([...grexSrc, "sync", "--parallel", "8"], hundred);

function timeOnce(cmd: string[], cwd: string): number {
  const t0 = Bun.nanoseconds();
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "ignore", stderr: "ignore" });
  const ms = (Bun.nanoseconds() - t0) / 1e6;
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} exited ${r.exitCode}`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

function measure(cmd: string[], cwd = root): number {
  timeOnce(cmd, cwd); // warm the page cache
  return median(Array.from({ length: RUNS }, () => timeOnce(cmd, cwd)));
}

/** Peak RSS (MiB) of one run, read by GNU time when present. */
function peakRss(cmd: string[], cwd = root): string {
  if (!Bun.which("/usr/bin/time")) return "n/a";
  const r = Bun.spawnSync(["/usr/bin/time", "-f", "%M", ...cmd], { cwd, env, stdout: "ignore", stderr: "pipe" });
  const kb = Number(r.stderr.toString().trim().split("\n").pop());
  return Number.isFinite(kb) ? (kb / 1024).toFixed(1) : "n/a";
}

/** Spawn `grex serve`, send initialize, time until the response line arrives. */
async function serveInit(cmd: string[]): Promise<number> {
  const once = async () => {
    const t0 = Bun.nanoseconds();
    const p = Bun.spawn([...cmd, "serve"], { cwd: big, env, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
    p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } })}\n`);
    p.stdin.flush();
    const reader = p.stdout.getReader();
    let got = "";
    while (!got.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      got += new TextDecoder().decode(value);
    }
    const ms = (Bun.nanoseconds() - t0) / 1e6;
    p.stdin.end();
    await p.exited;
    if (!got.includes('"protocolVersion"')) throw new Error(`serve did not answer: ${got}`);
    return ms;
  };
  await once();
  const xs: number[] = [];
  for (let i = 0; i < RUNS; i++) xs.push(await once());
  return median(xs);
}

const floor = measure([join(root, "hello")]);
const rows: Array<[string, number, string]> = [["compiled hello-world (floor)", floor, peakRss([join(root, "hello")])]];
const cases: Array<[string, string[], string]> = [
  ["--version", ["--version"], root],
  ["--help", ["--help"], root],
  ["ls --json (1,000 packs)", ["ls", "--json"], big],
  ["status --json (100 packs)", ["status", "--json"], hundred],
];
for (const [label, args, cwd] of cases) {
  rows.push([`compiled grex ${label}`, measure([grexBin, ...args], cwd), peakRss([grexBin, ...args], cwd)]);
}
for (const [label, args, cwd] of cases) {
  rows.push([`bun src grex ${label}`, measure([...grexSrc, ...args], cwd), peakRss([...grexSrc, ...args], cwd)]);
}
rows.push(["compiled grex serve: spawn → initialize", await serveInit([grexBin]), "-"]);
rows.push(["bun src grex serve: spawn → initialize", await serveInit(grexSrc), "-"]);

console.log(`startup benchmark, median of ${RUNS} runs each (same machine, same run)\n`);
console.log(`${"case".padEnd(44)} ${"ms".padStart(8)} ${"× floor".padStart(8)} ${"peak MiB".padStart(9)}`);
for (const [label, ms, rss] of rows) {
  console.log(`${label.padEnd(44)} ${ms.toFixed(2).padStart(8)} ${(ms / floor).toFixed(2).padStart(8)} ${rss.padStart(9)}`);
}
rmSync(root, { recursive: true, force: true });
