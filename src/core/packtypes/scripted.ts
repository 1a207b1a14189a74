// `scripted`: hooks under .grex/hooks/ do the work (setup on install, sync on
// every sync, teardown on removal); declared actions, if any, run first.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { SurfaceHasher } from "../base/hash.ts";
import { currentOs } from "../base/os.ts";
import { runHook } from "./hooks.ts";
import { runPackActions, teardownPackActions } from "./run-actions.ts";
import type { PackRun, PackType, PackTypeResult } from "./types.ts";

const hookFile = (dir: string, name: string) =>
  join(dir, ".grex", "hooks", currentOs() === "windows" ? `${name}.ps1` : `${name}.sh`);

async function withHook(run: PackRun, name: "setup" | "sync" | "teardown", first: PackTypeResult): Promise<PackTypeResult> {
  if (first.failed || first.skipped) return first;
  const file = hookFile(run.dir, name);
  if (!existsSync(file)) return first; // a missing hook is a no-op
  const r = await runHook(run, name, file, first.steps.length);
  return { steps: [...first.steps, ...r.steps], failed: r.failed, skipped: null };
}

export const scriptedType: PackType = {
  name: "scripted",
  hash(dir, manifest) {
    return new SurfaceHasher()
      .json("actions", manifest?.actions ?? [])
      .tree("files", join(dir, "files"))
      .tree("hooks", join(dir, ".grex", "hooks"))
      .digest();
  },
  install: async (run) => withHook(run, "setup", await runPackActions(run, run.manifest?.actions ?? [])),
  sync: (run) => withHook(run, "sync", { steps: [], failed: null, skipped: null }),
  async teardown(run) {
    const hooked = await withHook(run, "teardown", { steps: [], failed: null, skipped: null });
    if (hooked.failed) return hooked;
    const undo = await teardownPackActions(run);
    return { steps: [...hooked.steps, ...undo.steps], failed: undo.failed, skipped: null };
  },
};
