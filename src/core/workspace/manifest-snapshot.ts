// The fold of a long grex.jsonl kept under .grex/.state/manifest-fold.json, so
// that `ls`, `status` and the other readers do not validate and fold every
// line again on each run (on 1,000 packs that is most of `grex ls`).
//
// Only an accelerator, never a source of truth: the snapshot is keyed by the
// exact text it was folded from (its length and a 64-bit hash of all of it),
// written atomically after a clean fold (no torn tail), and ignored when it is
// missing, unreadable, of another format or for any other text — then the
// manifest is folded as usual and the snapshot rewritten. Writing it is best
// effort: a read-only workspace just folds every time. Short manifests fold
// faster than a snapshot reads, so they get none.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../fs/fsutil.ts";
import type { PackEntry } from "./manifest-events.ts";
import type { Workspace } from "../base/workspace.ts";

/** Bumped whenever the fold or this file's shape changes: older snapshots are then ignored. */
const FORMAT = 5; // 3: packs carry their tags; 4: and their clone depth; 5: and their partial-clone filter
/** Manifests shorter than this (about 400 `add` lines) are folded directly. */
export const SNAPSHOT_MIN_CHARS = 64 * 1024;

export const snapshotPath = (ws: Workspace): string => join(ws.stateDir, "manifest-fold.json");

/** What a snapshot must match: the manifest text, by length and hash. */
export const snapshotKey = (text: string): string => `${text.length}:${Bun.hash(text).toString(36)}`;

interface SnapshotDoc {
  format: number;
  key: string;
  packs: PackEntry[];
  /** Packs with an install cut short (manifest-fold.ts OpenBrackets). */
  interrupted: string[];
}

/** What a snapshot gives back: the folded packs in fold order, and the interrupted ones. */
export interface Snapshot {
  packs: PackEntry[];
  interrupted: ReadonlySet<string>;
}

/** The fold recorded for exactly this key, or undefined. */
export function readSnapshot(ws: Workspace, key: string): Snapshot | undefined {
  let doc: Partial<SnapshotDoc>;
  try {
    doc = JSON.parse(readFileSync(snapshotPath(ws), "utf8")) as Partial<SnapshotDoc>;
  } catch {
    return undefined;
  }
  if (doc === null || typeof doc !== "object" || doc.format !== FORMAT || doc.key !== key || !Array.isArray(doc.packs) || !Array.isArray(doc.interrupted)) {
    return undefined;
  }
  // Entries are not checked one by one (that loop would cost a third of the read): the
  // key is the exact manifest text and only grex writes this file, after a clean fold.
  return { packs: doc.packs, interrupted: new Set(doc.interrupted) };
}

/** Record the fold of the text behind `key` (best effort: a failure only means the next run folds again). */
export function writeSnapshot(ws: Workspace, key: string, fold: { state: Map<string, PackEntry>; interrupted: ReadonlySet<string> }): void {
  const doc: SnapshotDoc = { format: FORMAT, key, packs: [...fold.state.values()], interrupted: [...fold.interrupted] };
  try {
    atomicWriteFile(snapshotPath(ws), `${JSON.stringify(doc)}\n`);
  } catch {
    // read-only workspace, full disk: the manifest itself is intact and is folded next time
  }
}
