// Wall time of `grex sync --parallel 8` on a 30-pack workspace whose setups
// sleep 0–3 s (PACKS, PARALLEL and SLEEP change the shape) (the same deterministic sleeps every run), cold: every pack
// registered with --no-install, so the one timed sync clones nothing new but
// runs all 30 setups. Compare two builds with GREX_ENTRY (a main.ts of
// another checkout, e.g. a `git worktree` of an older commit):
//   bun bench/parallel-setup.ts
//   GREX_ENTRY=/tmp/old/src/cli/main.ts bun bench/parallel-setup.ts
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const entry = process.env.GREX_ENTRY ?? join(import.meta.dir, "..", "src", "cli", "main.ts");
const PACKS = Number(process.env.PACKS ?? 30);
const PARALLEL = process.env.PARALLEL ?? "8";
const root = mkdtempSync(join(tmpdir(), "grex-bench-psetup-"));
const home = join(root, "home");
const ws = join(root, "ws");
mkdirSync(home);
mkdirSync(ws);
const env = {
  ...process.env,
  HOME: home,
  GIT_AUTHOR_NAME: "b",
  GIT_AUTHOR_EMAIL: "b@example.invalid",
  GIT_COMMITTER_NAME: "b",
  GIT_COMMITTER_EMAIL: "b@example.invalid",
};
const run = (cwd: string, argv: string[]) => {
  const r = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
};
try {
  run(ws, [process.execPath, entry, "init"]);
  let total = 0;
  for (let i = 0; i < PACKS; i++) {
    // 0, 1.75, 0.5, 2.25, …: 0–3 s (SLEEP=1 gives every setup the same sleep)
    const secs = process.env.SLEEP ? Number(process.env.SLEEP) : ((i * 7) % 13) / 4;
    total += secs;
    const dir = join(root, "up", `repo${i}`);
    mkdirSync(join(dir, ".grex"), { recursive: true });
    writeFileSync(join(dir, ".grex", "pack.yaml"), `schema_version: "1"\nname: repo${i}\ntype: declarative\nactions:\n  - exec: { cmd: [sleep, "${secs}"] }\n`);
    run(dir, ["git", "init", "-q", "-b", "main"]);
    run(dir, ["git", "add", "-A"]);
    run(dir, ["git", "commit", "-q", "-m", "init"]);
    run(ws, [process.execPath, entry, "add", dir, `repo${i}`, "--no-install"]);
  }
  const t0 = performance.now();
  run(ws, [process.execPath, entry, "sync", "--parallel", PARALLEL]);
  const wall = (performance.now() - t0) / 1000;
  process.stdout.write(`${PACKS} packs, setups sleeping ${total.toFixed(2)} s in all: sync --parallel ${PARALLEL} took ${wall.toFixed(2)} s (${entry})\n`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
