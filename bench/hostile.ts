// Hostile smart-HTTP servers against `grex add` with the default limits
// (`bun bench/hostile.ts`): for each way a server can misbehave
// (test/helpers/hostile-http-server.ts), the peak RSS of the grex process
// tree, the wall time, the exit code and the one-line message. The slow
// modes send one byte every 3 s and run into the 30 s low-speed limit, so a
// whole run takes a few minutes. BENCH_MODES=a,b picks modes.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOSTILE_MODES, startHostileServer } from "../test/helpers/hostile-http-server.ts";
import { benchEnv } from "./fixtures/env.ts";
import { measure } from "./memory.ts";

const GREX_MAIN = join(import.meta.dir, "..", "src", "cli", "main.ts");
const picked = process.env.BENCH_MODES?.split(",").filter(Boolean);
const modes = HOSTILE_MODES.filter((m) => !picked || picked.includes(m));

const root = mkdtempSync(join(tmpdir(), "grex-bench-hostile-"));
const home = join(root, "home");
mkdirSync(home);
const env = benchEnv(home);
// As in the trials: one byte every 3 s for the slow modes; bombs of 400 MiB per blob, a 1 GiB gzip advertisement.
const server = await startHostileServer({ slowMs: 3000, bombMiB: 400, gzipRefsMiB: 1024 });
try {
  console.log("| server | peak RSS (MB) | wall s | exit | message |");
  console.log("|---|---:|---:|---:|---|");
  for (const mode of modes) {
    const ws = join(root, mode);
    mkdirSync(ws);
    const init = Bun.spawnSync([process.execPath, GREX_MAIN, "init"], { cwd: ws, env, stdout: "ignore", stderr: "pipe" });
    if (init.exitCode !== 0) throw new Error(`grex init failed: ${init.stderr}`);
    const r = await measure([process.execPath, GREX_MAIN, "add", `${server.url}/${mode}.git`, "pack"], { cwd: ws, env });
    const message = (r.stderr.split("\n").find((l) => l.startsWith("grex:")) ?? r.stderr.split("\n")[0] ?? "").replace(server.url, "<url>").replaceAll("|", "\\|");
    console.log(`| ${mode} | ${r.peakTree.toFixed(0)} | ${r.seconds.toFixed(1)} | ${r.code} | ${message} |`);
  }
} finally {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}
