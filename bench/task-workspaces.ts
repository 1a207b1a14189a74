// Task workspaces (`bun bench/task-workspaces.ts`, npm run bench:task-workspaces):
// a source workspace of BENCH_PACKS packs (default 100, each BENCH_COMMITS
// commits over BENCH_FILES files), then, timed by hyperfine -N in the same run:
//   task   `grex init --from <source> --branch <topic>` in an empty directory
//          (every pack a linked worktree of the source's clone)
//   fresh  `grex init` of a new directory holding the source's grex.jsonl
//          (every pack cloned from its upstream: what a copy costs without
//          task workspaces). The upstreams are local paths by default;
//          BENCH_UPSTREAM=http serves bare copies over the loopback smart-HTTP
//          server instead, as a team's packs come from a git server.
// and the disk each takes (du -sk, blocks): the task workspace plus what it
// adds to the source (`.git/worktrees/<name>/`: index, HEAD, logs) against the
// checked-out files alone (the fresh workspace without its .git directories).
// Goals (issue 39): task time <= 0.1x fresh; task disk <= checked-out files + 5%.
// Also the CPU time of each (user + system, from hyperfine): less stretched by a loaded machine.
//
// Both sides run the same grex (`bun src/cli/main.ts`, or the compiled binary
// with BENCH_COMPILED=1), so the start-up cost is in both. Env: BENCH_PACKS,
// BENCH_RUNS (default 3), BENCH_COMMITS / BENCH_FILES (default 30 / 50),
// BENCH_SIZES: "tiny" (default: every file about 400 bytes) or "spread"
// (sizes as in a source repository: most files 1-20 KiB, a few up to 256 KiB,
// about 13 KiB on average; bench/fixtures/repos.ts).
// Before each timed run the previous run's directory (and, for a task
// workspace, the registrations in the source's .git/worktrees, which is what
// `git worktree prune` would delete) is moved aside, not deleted: ext4 skips
// inodes freed in the last minutes when it allocates new ones, so creating
// thousands of files right after deleting thousands costs several times the
// usual system time, and would be charged to the next run.
// BENCH_GREX_BASE=<grex>: another grex (an earlier commit's `src/cli/main.ts`,
// run with bun, or a compiled binary) timed against this one, both sides
// interleaved run by run, for a before/after from one run.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeReposScript } from "./fixtures/repos.ts";
import { benchEnv } from "./fixtures/env.ts";
import { grexBuildCommand } from "../scripts/compile.ts";
import { type GitHttpServer, startGitHttpServer } from "../test/helpers/git-http-server.ts";

const PACKS = Number(process.env.BENCH_PACKS ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const sizes = process.env.BENCH_SIZES === "spread" ? "spread" : "tiny";
const shape = { commits: Number(process.env.BENCH_COMMITS ?? 30), files: Number(process.env.BENCH_FILES ?? 50), sizes } as const;
if (!Bun.which("hyperfine")) throw new Error("hyperfine is needed (https://github.com/sharkdp/hyperfine)");
const root = mkdtempSync(join(tmpdir(), "grex-bench-task-"));
const env = benchEnv(join(root, "home"));
mkdirSync(env.HOME as string);
const log = (m: string) => Bun.write(Bun.stderr, `${m}\n`);

function sh(cmd: string[], cwd = root): string {
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString().slice(0, 2000)}`);
  return r.stdout.toString();
}

/** `sh` without blocking the event loop: the smart-HTTP server (BENCH_UPSTREAM=http) answers from this process. */
async function shAsync(cmd: string[], cwd = root): Promise<string> {
  const p = Bun.spawn(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")}: ${err.slice(0, 2000)}`);
  return out;
}

let grex: string[];
if (process.env.BENCH_COMPILED === "1") {
  const bin = join(root, "grex");
  sh(grexBuildCommand(bin));
  grex = [bin];
} else grex = [process.execPath, join(import.meta.dir, "..", "src", "cli", "main.ts")];

const overHttp = process.env.BENCH_UPSTREAM === "http";
let server: GitHttpServer | null = null;
try {
  const shapeText = `${shape.commits} commits, ${shape.files} files each, ${sizes === "spread" ? "sizes spread as in a source repository" : "every file about 400 bytes"}`;
  log(`bench/task-workspaces: making ${PACKS} repositories (${shapeText})`);
  const up = join(root, "upstream");
  const streams = join(root, "streams");
  mkdirSync(up);
  mkdirSync(streams);
  const names = Array.from({ length: PACKS }, (_, i) => `r${String(i).padStart(3, "0")}`);
  const bare = join(root, "served");
  if (overHttp) mkdirSync(bare);
  writeFileSync(join(root, "make.sh"), makeReposScript(names, up, streams, overHttp ? bare : undefined, shape));
  sh(["sh", join(root, "make.sh")]);
  server = overHttp ? await startGitHttpServer(bare) : null;
  const urlOf = (name: string) => (server ? `${server.url}/${name}.git` : join(up, name));

  const source = join(root, "source");
  mkdirSync(source);
  writeFileSync(join(source, "REPOS.json"), JSON.stringify(names.map((name) => ({ url: urlOf(name), path: name }))));
  sh([...grex, "init"], source);
  sh([...grex, "import", "--from-repos-json", "REPOS.json"], source);
  log(`bench/task-workspaces: cloning the ${PACKS}-pack source`);
  await shAsync([...grex, "sync", "--parallel", "8"], source);

  const task = join(root, "task");
  const fresh = join(root, "fresh");
  // Before each timed run: an empty directory again (the last run's moved aside, see above), no registration or topic left in
  // the source, and the file system synced (`sync`: the last run's files are written out before the next run, not during it).
  const trash = join(root, "trash");
  mkdirSync(trash);
  const aside = (dir: string) => `if [ -d "${dir}" ]; then mv "${dir}" "${trash}/$(date +%s%N)"; fi; mkdir "${dir}"`;
  writeFileSync(
    join(root, "prep-task.sh"),
    `${aside(task)} && for p in "${source}"/r*; do if [ -d "$p/.git/worktrees" ]; then mv "$p/.git/worktrees" "${trash}/w$(date +%s%N)"; fi; git -C "$p" branch -q -D topic 2>/dev/null; done; sync\n`,
  );
  writeFileSync(join(root, "prep-fresh.sh"), `${aside(fresh)} && cp "${source}/grex.jsonl" "${fresh}/grex.jsonl" && sync\n`);

  // Wall time (median) and CPU time (user + system, hyperfine's mean): on a loaded machine the wall time stretches with everyone else's work, the CPU time far less.
  const hyperfine = async (cmd: string[], prepare: string): Promise<{ median: number; cpu: number; runs: number[] }> => {
    const out = join(root, "hf.json");
    await shAsync(["hyperfine", "-N", "--runs", String(RUNS), "--export-json", out, "--style", "none", "--prepare", `sh ${prepare}`, cmd.join(" ")]);
    type Result = { median: number; user: number; system: number; times: number[] };
    const res = (JSON.parse(readFileSync(out, "utf8")) as { results: Result[] }).results[0] as Result;
    return { median: res.median * 1000, cpu: (res.user + res.system) * 1000, runs: res.times.map((s) => s * 1000) };
  };

  log(`bench/task-workspaces: timing (${RUNS} runs each)`);
  const taskTime = await hyperfine([...grex, "--manifest", join(task, "grex.jsonl"), "init", "--from", source, "--branch", "topic"], join(root, "prep-task.sh"));
  const freshTime = await hyperfine([...grex, "--manifest", join(fresh, "grex.jsonl"), "init"], join(root, "prep-fresh.sh"));

  // Disk, after the last run of each (both left in place), in KiB of blocks (and of bytes, --apparent-size).
  const kib = (args: string[]) => Number(sh(["du", "-sk", ...args]).trim().split(/\s+/)[0]);
  const adminOf = (flags: string) => Number(sh(["sh", "-c", `du -sk ${flags} "${source}"/r*/.git/worktrees | awk '{ s += $1 } END { print s + 0 }'`]).trim());
  const admin = adminOf("");
  const taskDisk = kib([task]) + admin;
  const taskBytes = kib(["--apparent-size", task]) + adminOf("--apparent-size");
  const checkedOut = kib(["--exclude=.git", "--exclude=.grex", fresh]);
  const checkedBytes = kib(["--apparent-size", "--exclude=.git", "--exclude=.grex", fresh]);
  const freshDisk = kib([fresh]);
  // For scale: what `git worktree add` itself writes for the same packs (one sequential run).
  const gitwt = join(root, "gitwt");
  const adminBefore = admin;
  const t0 = Bun.nanoseconds();
  for (const name of names) sh(["git", "-C", join(source, name), "worktree", "add", "-q", "-b", "gtopic", join(gitwt, name)]);
  const gitMs = (Bun.nanoseconds() - t0) / 1e6;
  const gitDisk = kib([gitwt]) + adminOf("") - adminBefore;

  const ratio = taskTime.median / freshTime.median;
  const over = (taskDisk / checkedOut - 1) * 100;
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`\n### Task workspaces: ${PACKS} packs (${shapeText}), upstreams ${overHttp ? "over loopback smart HTTP" : "local paths"}, ${RUNS} runs, load average ${load}\n`);
  const row = (a: string, b: string, c: string, d: string) => `| ${a} | ${b} | ${c} | ${d} |`;
  console.log(row("", "time (median ms)", "CPU (user + sys, mean ms)", "disk (KiB)"));
  console.log(row("---", "---:", "---:", "---:"));
  console.log(row("fresh `grex init` + clone of every pack", freshTime.median.toFixed(0), freshTime.cpu.toFixed(0), String(freshDisk)));
  console.log(row("task workspace (`init --from`)", taskTime.median.toFixed(0), taskTime.cpu.toFixed(0), `${taskDisk} (of which ${admin} in the source's .git/worktrees)`));
  console.log(row("`git worktree add` of every pack (one run, sequential)", gitMs.toFixed(0), "", String(gitDisk)));
  console.log(row("checked-out files alone", "", "", String(checkedOut)));
  console.log(`\ntask / fresh time: ${ratio.toFixed(3)}x (goal <= 0.1x) ${ratio <= 0.1 ? "MET" : "NOT MET"}; CPU time: ${(taskTime.cpu / freshTime.cpu).toFixed(3)}x`);
  console.log(`task disk over the checked-out files: ${over >= 0 ? "+" : ""}${over.toFixed(1)}% (goal <= +5%) ${over <= 5 ? "MET" : "NOT MET"}; git worktree add's: +${((gitDisk / checkedOut - 1) * 100).toFixed(1)}%`);
  // What grex keeps beyond git's own layout (each pack's .git file and .git/worktrees/<name>/, the same in both): the workspace's files.
  const grexOwn = kib([join(task, ".grex")]);
  console.log(`beyond git worktree add's layout: ${taskDisk - gitDisk} KiB, the workspace's own files (.grex/ ${grexOwn} KiB; grex.jsonl, grex.lock.jsonl, .gitignore, .gitattributes the rest)`);
  console.log(`in bytes (--apparent-size): task ${taskBytes} KiB vs checked-out files ${checkedBytes} KiB (+${((taskBytes / checkedBytes - 1) * 100).toFixed(1)}%)`);
  console.log(`runs (ms): task ${taskTime.runs.map((x) => x.toFixed(0)).join(", ")}; fresh ${freshTime.runs.map((x) => x.toFixed(0)).join(", ")}`);
  const base = process.env.BENCH_GREX_BASE;
  if (base) await beforeAfter(base.endsWith(".ts") ? [process.execPath, base] : [base], { task, fresh, source });
} finally {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
}

/** This grex against `baseCmd`, each side's task workspace and fresh init run by turns (prepared as above): wall and CPU time, medians. */
async function beforeAfter(baseCmd: string[], at: { task: string; fresh: string; source: string }): Promise<void> {
  log(`bench/task-workspaces: before/after against ${baseCmd.join(" ")} (${RUNS} runs each, interleaved)`);
  type Side = { name: string; cmd: string[]; prep: string; wall: number[]; cpu: number[] };
  const taskArgs = ["--manifest", join(at.task, "grex.jsonl"), "init", "--from", at.source, "--branch", "topic"];
  const freshArgs = ["--manifest", join(at.fresh, "grex.jsonl"), "init"];
  const sides: Side[] = [
    { name: "task workspace, base grex", cmd: [...baseCmd, ...taskArgs], prep: "prep-task.sh", wall: [], cpu: [] },
    { name: "task workspace, this grex", cmd: [...grex, ...taskArgs], prep: "prep-task.sh", wall: [], cpu: [] },
    { name: "fresh init + clone, base grex", cmd: [...baseCmd, ...freshArgs], prep: "prep-fresh.sh", wall: [], cpu: [] },
    { name: "fresh init + clone, this grex", cmd: [...grex, ...freshArgs], prep: "prep-fresh.sh", wall: [], cpu: [] },
  ];
  for (let r = 0; r < RUNS; r++) {
    for (const side of sides) {
      await shAsync(["sh", join(root, side.prep)]);
      const t0 = performance.now();
      const p = Bun.spawn(side.cmd, { cwd: root, env, stdout: "ignore", stderr: "pipe" });
      const err = await new Response(p.stderr).text();
      if ((await p.exited) !== 0) throw new Error(`${side.cmd.join(" ")}: ${err.slice(0, 2000)}`);
      side.wall.push(performance.now() - t0);
      const use = p.resourceUsage();
      side.cpu.push(use ? Number(use.cpuTime.user + use.cpuTime.system) / 1000 : Number.NaN);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`\n#### Before/after: ${RUNS} interleaved runs each, load average ${load}\n`);
  console.log("| | time (median ms) | CPU (user + sys, median ms) |");
  console.log("| --- | ---: | ---: |");
  for (const side of sides) console.log(`| ${side.name} | ${median(side.wall).toFixed(0)} | ${median(side.cpu).toFixed(0)} |`);
  const [tb, tn, fb, fn] = sides as [Side, Side, Side, Side];
  console.log(`\ntask workspace, this / base: time ${(median(tn.wall) / median(tb.wall)).toFixed(3)}x, CPU ${(median(tn.cpu) / median(tb.cpu)).toFixed(3)}x; fresh init, this / base: time ${(median(fn.wall) / median(fb.wall)).toFixed(3)}x, CPU ${(median(fn.cpu) / median(fb.cpu)).toFixed(3)}x`);
  console.log(`task / fresh, this grex: time ${(median(tn.wall) / median(fn.wall)).toFixed(3)}x, CPU ${(median(tn.cpu) / median(fn.cpu)).toFixed(3)}x; base grex: time ${(median(tb.wall) / median(fb.wall)).toFixed(3)}x, CPU ${(median(tb.cpu) / median(fb.cpu)).toFixed(3)}x`);
}
