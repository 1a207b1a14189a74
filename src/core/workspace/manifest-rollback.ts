// Undo of grex.jsonl appends made by a command that failed as a whole (`add`):
// the log is cut back to the length it had before. Only the holder of the
// workspace lock may do this: every writer of the log holds that lock, so
// nothing but its own lines follow the mark.
import { closeSync, fsyncSync, ftruncateSync, openSync, statSync } from "node:fs";
import { withManifestLock } from "../locks/locks.ts";
import type { Workspace } from "../base/workspace.ts";

/** The manifest's current length in bytes: the mark to roll back to. */
export function manifestMark(ws: Workspace): number {
  return statSync(ws.manifestPath).size;
}

/** Cut grex.jsonl back to `mark` bytes, durably (no-op when nothing was appended). */
export async function rollbackManifest(ws: Workspace, mark: number): Promise<void> {
  await withManifestLock(ws, undefined, () => {
    if (statSync(ws.manifestPath).size <= mark) return;
    const fd = openSync(ws.manifestPath, "r+");
    try {
      ftruncateSync(fd, mark);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  });
}
