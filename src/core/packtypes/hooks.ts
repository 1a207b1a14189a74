// Scripted-pack hooks: `.grex/hooks/<name>.sh` (`.ps1` on Windows), run with
// cwd = pack dir and the GREX_PACK_* environment. A non-zero exit fails the pack.
import type { Step } from "../actions/types.ts";
import { throwIfAborted } from "../base/errors.ts";
import { appendEvents, makeEvent } from "../workspace/manifest.ts";
import { currentOs } from "../base/os.ts";
import { runProcess } from "../base/proc.ts";
import type { PackRun, PackTypeResult } from "./types.ts";

const STDERR_TAIL = 2048;

export async function runHook(run: PackRun, name: string, file: string, idx: number): Promise<PackTypeResult> {
  throwIfAborted(run.signal);
  const action = `hook:${name}`;
  const step = (result: Step["result"], details: Record<string, unknown>): Step => ({ pack: run.id, action, idx, result, details });
  const argv = file.endsWith(".ps1") ? ["pwsh", "-NoProfile", "-File", file] : ["sh", file];
  if (!run.dryRun) await appendEvents(run.ws, [makeEvent("action_started", run.id, { action, idx })], run.signal);
  const r = await runProcess({
    argv,
    cwd: run.dir,
    env: {
      ...run.env,
      GREX_PACK_NAME: run.manifest?.name ?? run.id,
      GREX_PACK_PATH: run.dir,
      GREX_PACK_OS: currentOs(),
      GREX_DRY_RUN: run.dryRun ? "1" : "0",
    },
    signal: run.signal,
    maxBytes: STDERR_TAIL,
  });
  const { stdout, stderr } = r;
  const code = r.spawnError ? 127 : (r.code ?? 128);
  const tail = r.spawnError ? `could not start ${argv[0]} (${r.spawnError.code ?? r.spawnError.message})` : stderr;
  if (code !== 0) {
    const reason = r.signal ? `${name} hook was killed by ${r.signal}` : `${name} hook exited ${code}`;
    if (!run.dryRun) {
      await appendEvents(run.ws, [makeEvent("action_halted", run.id, { action, idx, reason, stderr: tail })], run.signal);
    }
    return { steps: [step("failed", { exit: code, stderr: tail })], failed: { idx, action, reason }, skipped: null };
  }
  if (!run.dryRun) {
    await appendEvents(run.ws, [makeEvent("action_completed", run.id, { action, idx, changed: true })], run.signal);
  }
  return {
    steps: [step(run.dryRun ? "would_perform_change" : "performed_change", { exit: 0, stdout })],
    failed: null,
    skipped: null,
  };
}
