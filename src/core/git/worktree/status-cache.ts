// The status cache: a grex-owned file per pack, kept with grex's own state
// (`.grex/.state/status-cache/`, never inside the pack), that lets the dirty
// check `status` runs (worktree.ts) skip work it proved before. It remembers
//  - the tree of HEAD's commit (commits never change, so this cannot go stale);
//  - which work-tree directories held nothing but tracked entries, each with
//    its stamp (mtime, ctime, inode). Adding, removing or renaming an entry
//    changes a directory's mtime and ctime, so a directory whose stamp is the
//    same cannot have gained an untracked file and need not be listed again.
//    The directories are valid only for the index they were listed against.
//    When every directory holding a tracked path is remembered and none has
//    changed, not even the list of directories needs working out again;
//  - which tracked files had to be hashed (their stat data no longer matched
//    the index, or matched it "racily": written in the same clock tick as the
//    index, the usual state of a fresh checkout) and held their index entry's
//    content, each with the stat data it had then. Only files already settled
//    are remembered: a later edit must then give a newer mtime and ctime, so
//    the same stat data means the same content and the hash is not repeated.
//    Like the directories, they are valid only for the index they were
//    checked against.
// It is only an accelerator: missing, unreadable or foreign content means
// "nothing known", and everything is proved again.
import { mkdirSync, readFileSync, renameSync, rmSync, type Stats, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const VERSION = 1;

/** Where the cache of pack `id` lives under a workspace's state directory. */
export function statusCacheFile(stateDir: string, id: string): string {
  return join(stateDir, "status-cache", `${encodeURIComponent(id)}.json`);
}

/**
 * A directory is remembered only once its mtime and ctime are this much older
 * than the clock: a change within the same timestamp tick (file systems keep
 * anything from nanoseconds to 2 s) would leave its stamp as it was.
 */
export const SETTLED_MS = 3000;

/** [mtimeMs, ctimeMs, inode] of a directory. */
export type DirStamp = [number, number, number];

/** [mtimeMs, ctimeMs, size, inode] of a file whose content was proved by hashing. */
export type FileStamp = [number, number, number, number];

export interface StatusCache {
  /** The checksum of the index the directories were listed against. */
  index: string;
  /** A commit and its tree, or nulls. */
  commit: string | null;
  tree: string | null;
  /** Directory (relative, "" for the root) → its stamp when it held only tracked entries. */
  dirs: Record<string, DirStamp>;
  /** `dirs` holds every directory with a tracked path: if all their stamps match, nothing new can be anywhere. */
  complete: boolean;
  /** Tracked path → its stamp when hashing showed it holds its index entry's content. */
  hashed: Record<string, FileStamp>;
}

const OID = /^[0-9a-f]{40}$/;

export function stampOf(st: Stats): DirStamp {
  return [st.mtimeMs, st.ctimeMs, st.ino];
}

export function fileStampOf(st: Stats): FileStamp {
  return [st.mtimeMs, st.ctimeMs, st.size, st.ino];
}

/** Equal file stamps; a damaged entry read from the file is never equal. */
export function sameFileStamp(a: unknown, b: FileStamp): boolean {
  return Array.isArray(a) && a.length === 4 && a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

/** Equal stamps; anything else read from the file (a damaged entry) is never equal. */
export function sameStamp(a: unknown, b: DirStamp): boolean {
  return Array.isArray(a) && a.length === 3 && a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
}

/** Old enough that a later change must show in the stamp. */
export function settled(st: Stats, now: number): boolean {
  return Math.max(st.mtimeMs, st.ctimeMs) < now - SETTLED_MS;
}

/** The index file's identity for the cache: its trailing checksum, or null when the writer left it zero. */
export function indexKey(index: Buffer): string | null {
  const key = index.toString("hex", index.length - 20);
  return /^0+$/.test(key) ? null : key;
}

/** The cache in `file`, or null when absent, unreadable or not one this version wrote. */
export function readStatusCache(file: string): StatusCache | null {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
  if (typeof doc !== "object" || doc === null) return null;
  const c = doc as Record<string, unknown>;
  const oidOrNull = (v: unknown) => v === null || (typeof v === "string" && OID.test(v));
  if (c.v !== VERSION || typeof c.index !== "string" || !OID.test(c.index) || !oidOrNull(c.commit) || !oidOrNull(c.tree)) return null;
  if (typeof c.dirs !== "object" || c.dirs === null || Array.isArray(c.dirs)) return null;
  // Each stamp is checked where it is used (sameStamp, sameFileStamp): one damaged entry costs one listing or one hash.
  const dirs = c.dirs as Record<string, DirStamp>;
  const hashed = typeof c.hashed === "object" && c.hashed !== null && !Array.isArray(c.hashed) ? (c.hashed as Record<string, FileStamp>) : {};
  return { index: c.index, commit: c.commit as string | null, tree: c.tree as string | null, dirs, complete: c.complete === true, hashed };
}

/** Replace the cache (temp + rename: a reader sees the old file or the new one); a failure only costs speed later. */
export function writeStatusCache(file: string, cache: StatusCache): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(tmp, JSON.stringify({ v: VERSION, ...cache }));
    renameSync(tmp, file);
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // a read-only state directory: nothing was written
    }
  }
}
