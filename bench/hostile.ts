// Hostile smart-HTTP servers against `grex add` with the default limits
// (`bun bench/hostile.ts`): for each way a server can misbehave
// (test/helpers/hostile-http-server.ts), the peak RSS of the grex process
// tree, the wall time, the exit code and the one-line message. The slow
// modes send one byte every 3 s and run into the 30 s low-speed limit, so a
// whole run takes a few minutes. BENCH_MODES=a,b picks modes. The git-side
// rows (bench/fixtures/hostile-git-rows.ts: a submodule fan-out under the
// default budget, a checkout cut short by a full disk and its healing) follow,
// with what each left behind (temp clones, temp files: none expected).
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOSTILE_MODES, startHostileServer } from "../test/helpers/hostile-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";
import { GIT_ROWS, gitRow } from "./fixtures/hostile-git-rows.ts";
import { measure } from "./memory.ts";

const GREX_MAIN = join(import.meta.dir, "..", "src", "cli", "main.ts");
const picked = process.env.BENCH_MODES?.split(",").filter(Boolean);
const modes = HOSTILE_MODES.filter((m) => !picked || picked.includes(m));
const gitRows = GIT_ROWS.filter((m) => !picked || picked.includes(m));

/** What a failed add left in its workspace: the pack's directory or a temp clone (none expected). */
const leftIn = (ws: string) => {
  const left = readdirSync(ws).filter((n) => n === "pack" || n.includes(".grex-clone-"));
  return left.length === 0 ? "nothing" : left.join(", ");
};

const root = mkdtempSync(join(tmpdir(), "grex-bench-hostile-"));
const home = join(root, "home");
mkdirSync(home);
const env = benchEnv(home);
// As in the trials: one byte every 3 s for the slow modes; bombs of 400 MiB per blob, a 1 GiB gzip advertisement.
const server = await startHostileServer({ slowMs: 3000, bombMiB: 400, gzipRefsMiB: 1024 });
try {
  console.log("| case | peak RSS (MB) | wall s | exit | message | left behind |");
  console.log("|---|---:|---:|---:|---|---|");
  for (const mode of modes) {
    const ws = join(root, mode);
    mkdirSync(ws);
    const init = Bun.spawnSync([process.execPath, GREX_MAIN, "init"], { cwd: ws, env, stdout: "ignore", stderr: "pipe" });
    if (init.exitCode !== 0) throw new Error(`grex init failed: ${init.stderr}`);
    const r = await measure([process.execPath, GREX_MAIN, "add", `${server.url}/${mode}.git`, "pack"], { cwd: ws, env });
    const message = (r.stderr.split("\n").find((l) => l.startsWith("grex:")) ?? r.stderr.split("\n")[0] ?? "").replace(server.url, "<url>").replaceAll("|", "\\|");
    console.log(`| ${mode} | ${r.peakTree.toFixed(0)} | ${r.seconds.toFixed(1)} | ${r.code} | ${message} | ${leftIn(ws)} |`);
  }
  for (const name of gitRows) {
    for (const row of await gitRow(name, root, env)) {
      const left = row.leftBehind.length === 0 ? "nothing" : row.leftBehind.join(", ");
      console.log(`| ${row.name} | ${row.peakMB.toFixed(0)} | ${row.seconds.toFixed(1)} | ${row.code} | ${row.message.replaceAll("|", "\\|")} | ${left} |`);
    }
  }
} finally {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}
