// A clone is built under a hidden temp name and renamed into place only when
// complete (clone.ts `cloneAtomically`): until then nothing but the grex
// building it reads its files. Git's lock files written there (its config,
// twice; its index) skip their fsyncs as they are written and are fsync'd
// together, with their directories, on the I/O thread pool, just before the
// clone is renamed into place: what the clone's final name shows is as
// durable as before, at a third of the fsyncs and none on the event loop.
import { closeSync, openSync } from "node:fs";
import { dirname, sep } from "node:path";
import { fsyncAsync, fsyncDirAsync } from "../../fs/fsutil.ts";

/** Clones being built (their temp directory, ending in a separator) → the files whose fsync waits for the publish. */
const building = new Map<string, Set<string>>();

/** Files written under `dir` from now on (through git's lock files) defer their fsyncs to `syncUnpublished`. */
export function startUnpublished(dir: string): void {
  building.set(dir.endsWith(sep) ? dir : `${dir}${sep}`, new Set());
}

/** Forget `dir` (published, or given up): later writes there fsync as they go. */
export function endUnpublished(dir: string): void {
  building.delete(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/** True (and `path` noted for `syncUnpublished`) when `path` is in a clone still being built: skip its fsync now. */
export function deferFsync(path: string): boolean {
  if (building.size === 0) return false;
  // The innermost clone being built (a submodule's clone inside its superproject's) syncs it before its own rename.
  let best: [string, Set<string>] | null = null;
  for (const [root, files] of building) if (path.startsWith(root) && (best === null || root.length > best[0].length)) best = [root, files];
  best?.[1].add(path);
  return best !== null;
}

/** fsync every file whose fsync was deferred under `dir`, then their directories (on the I/O thread pool). */
export async function syncUnpublished(dir: string): Promise<void> {
  const files = building.get(dir.endsWith(sep) ? dir : `${dir}${sep}`);
  if (!files) return;
  await Promise.all(
    [...files].map(async (path) => {
      let fd: number;
      try {
        fd = openSync(path, "r");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // removed since: nothing to make durable
        throw err;
      }
      try {
        await fsyncAsync(fd);
      } finally {
        closeSync(fd);
      }
    }),
  );
  await Promise.all([...new Set([...files].map((f) => dirname(f)))].map((d) => fsyncDirAsync(d)));
}
