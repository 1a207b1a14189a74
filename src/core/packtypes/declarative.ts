// `declarative`: the pack's `actions` are its setup; `teardown` (or the reverse
// of the actions) undoes it.
import { join } from "node:path";
import { SurfaceHasher } from "../base/hash.ts";
import { runPackActions, teardownPackActions } from "./run-actions.ts";
import type { PackType } from "./types.ts";

export const declarativeType: PackType = {
  name: "declarative",
  hash(dir, manifest) {
    return new SurfaceHasher()
      .json("actions", manifest?.actions ?? [])
      .json("teardown", manifest?.teardown ?? null)
      .tree("files", join(dir, "files"))
      .digest();
  },
  install: (run) => runPackActions(run, run.manifest?.actions ?? []),
  sync: async () => ({ steps: [], failed: null, skipped: null }),
  teardown: (run) => teardownPackActions(run),
};
