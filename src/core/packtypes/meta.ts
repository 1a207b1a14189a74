// `meta`: a pack that owns children. Its own surface is the list of children and
// the commits they resolved to; actions, when a meta pack declares any, run like
// a declarative pack's.
import { SurfaceHasher } from "../base/hash.ts";
import { runPackActions, teardownPackActions } from "./run-actions.ts";
import type { PackType } from "./types.ts";

export const metaType: PackType = {
  name: "meta",
  hash(_dir, manifest, childShas) {
    return new SurfaceHasher()
      .json("children", (manifest?.children ?? []).map((c) => ({ url: c.url, path: c.path, ref: c.ref })))
      .json("child-shas", childShas)
      .json("actions", manifest?.actions ?? [])
      .digest();
  },
  install: (run) => runPackActions(run, run.manifest?.actions ?? []),
  sync: async () => ({ steps: [], failed: null, skipped: null }),
  teardown: (run) => teardownPackActions(run),
};
