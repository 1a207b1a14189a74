// The git index (.git/index), versions 2, 3 and 4: read it to answer "is the
// work tree clean?" without a full isomorphic-git walk, and write it after a
// checkout. The reader honours what git writes: extended flags
// (skip-worktree, intent-to-add), assume-unchanged, v4's compressed paths, a
// split index (`link` + `sharedindex.*`) and sparse directory entries (left to
// the caller to expand); optional extensions it does not use (the untracked
// cache, fsmonitor, offsets tables) are skipped. Anything else makes it
// return null. The writer writes one whole file: v2, or v3 when an entry
// needs extended flags, or v4 when asked; the untracked cache and the split
// are dropped (git rebuilds the first and re-splits when configured).
import type { Stats } from "node:fs";
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { gitPath, type Repo } from "../layout/layout.ts";

import { ASSUME_VALID, INTENT_TO_ADD, type IndexEntry, SKIP_WORKTREE, sha1 } from "./index-write.ts";
export { ASSUME_VALID, INTENT_TO_ADD, type IndexEntry, SKIP_WORKTREE };
import { CANONICAL_INDEX_MODES } from "./path-verify.ts";


export function parseIndex(buf: Buffer, shared?: SharedIndexReader): IndexEntry[] | null {
  const entries = readIndex(buf, shared)?.entries ?? null;
  // A mode git cannot hold (written by something else): not an index we handle.
  return entries?.every((e) => CANONICAL_INDEX_MODES.has(e.mode)) === false ? null : entries;
}

const u32 = (b: Buffer, o: number): number => (((b[o] as number) << 24) | ((b[o + 1] as number) << 16) | ((b[o + 2] as number) << 8) | (b[o + 3] as number)) >>> 0;

function eagerEntry(buf: Buffer, off: number, path: string, stage: number, flags: number): IndexEntry {
  return {
    flags,
    ctimeSeconds: u32(buf, off),
    ctimeNanoseconds: u32(buf, off + 4),
    mtimeSeconds: u32(buf, off + 8),
    mtimeNanoseconds: u32(buf, off + 12),
    dev: u32(buf, off + 16),
    ino: u32(buf, off + 20),
    mode: u32(buf, off + 24),
    uid: u32(buf, off + 28),
    gid: u32(buf, off + 32),
    size: u32(buf, off + 36),
    oid: buf.toString("hex", off + 40, off + 60),
    stage,
    path,
  };
}

/**
 * An entry for read-only questions: the fields a status check compares for
 * every entry (times, inode, mode, size) are read at once, the rest (the
 * object id as hex above all) only when asked. Building every field of every
 * entry of every pack is a large share of a status check, and so are getter
 * calls for the fields every entry needs. Read-only; `oid`, `dev`, `uid` and
 * `gid` are getters: a spread would not copy them.
 */
class StatusEntry implements IndexEntry {
  readonly ctimeSeconds: number;
  readonly ctimeNanoseconds: number;
  readonly mtimeSeconds: number;
  readonly mtimeNanoseconds: number;
  readonly ino: number;
  readonly mode: number;
  readonly size: number;
  constructor(
    private readonly view: DataView,
    private readonly off: number,
    public path: string,
    readonly stage: number,
    readonly flags: number,
  ) {
    this.ctimeSeconds = view.getUint32(off);
    this.ctimeNanoseconds = view.getUint32(off + 4);
    this.mtimeSeconds = view.getUint32(off + 8);
    this.mtimeNanoseconds = view.getUint32(off + 12);
    this.ino = view.getUint32(off + 20);
    this.mode = view.getUint32(off + 24);
    this.size = view.getUint32(off + 36);
  }
  get dev() { return this.view.getUint32(this.off + 16); }
  get uid() { return this.view.getUint32(this.off + 28); }
  get gid() { return this.view.getUint32(this.off + 32); }
  get oid() { return Buffer.from(this.view.buffer, this.view.byteOffset + this.off + 40, 20).toString("hex"); }
}

export interface IndexRead {
  entries: IndexEntry[];
  rootTree: string | null;
  /** The file's format version: 2, 3 or 4. */
  version: number;
  /** A sparse index (the `sdir` extension): some entries are whole directories (mode 040000). */
  sparseDirs: boolean;
}

/** The format version of the index file at `path` (a v4 index is rewritten as v4); undefined when unreadable. */
export function indexVersionOf(path: string): number | undefined {
  const head = Buffer.alloc(8);
  try {
    const fd = openSync(path, "r");
    try {
      readSync(fd, head, 0, 8, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  return head.toString("latin1", 0, 4) === "DIRC" ? head.readUInt32BE(4) : undefined;
}

/** Reads `sharedindex.<hex>` for a split index; null when it is not there. */
export type SharedIndexReader = (hex: string) => Buffer | null;

/** A split index's shared file, read from the git dir it lives in. */
export function sharedIndexIn(repo: Repo): SharedIndexReader {
  return (hex) => {
    try {
      return readFileSync(gitPath(repo, `sharedindex.${hex}`));
    } catch {
      return null;
    }
  };
}

/**
 * The entries, plus the tree the whole index amounts to when its cache-tree
 * extension ("TREE") says so (root entry still valid): comparing that with
 * HEAD's tree answers "anything staged?" without reading HEAD's trees.
 * `shared` resolves a split index; without it a split index reads as null.
 */
export function readIndex(buf: Buffer, shared?: SharedIndexReader): IndexRead | null {
  return walkIndex(buf, true, () => eagerEntry, shared);
}

/**
 * readIndex for read-only questions: entries read lazily (StatusEntry) and,
 * unless `verify`, the trailing checksum not verified, as git's own reads do
 * (only fsck checks it). A damaged index can at worst read as changes.
 */
export function readIndexForStatus(buf: Buffer, shared?: SharedIndexReader, verify = false): IndexRead | null {
  return walkIndex(buf, verify, lazyEntries, shared);
}

function lazyEntries(buf: Buffer): EntryAt {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return (_, off, path, stage, flags) => new StatusEntry(view, off, path, stage, flags);
}

type EntryAt = (buf: Buffer, off: number, path: string, stage: number, flags: number) => IndexEntry;

/** v4's path compression: how many bytes to drop from the previous path (git's offset varint). */
export function readVarint(buf: Buffer, at: number): [number, number] {
  let c = buf[at++] as number;
  let v = c & 127;
  while (c & 128) {
    c = buf[at++] as number;
    v = (v + 1) * 128 + (c & 127);
  }
  return [v, at];
}

function walkIndex(buf: Buffer, verify: boolean, entriesOf: (buf: Buffer) => EntryAt, shared?: SharedIndexReader): IndexRead | null {
  const entryAt = entriesOf(buf);
  if (buf.length < 32 || buf.toString("latin1", 0, 4) !== "DIRC") return null;
  const version = u32(buf, 4);
  if (version < 2 || version > 4) return null;
  const count = u32(buf, 8);
  const end = buf.length - 20;
  if (verify && !sha1(buf.subarray(0, end)).equals(buf.subarray(end))) return null;
  const entries: IndexEntry[] = [];
  let off = 12;
  let prev: Buffer = Buffer.alloc(0); // v4: the previous entry's path bytes
  for (let i = 0; i < count; i++) {
    if (off + 62 > end) return null;
    const flags = ((buf[off + 60] as number) << 8) | (buf[off + 61] as number);
    let at = off + 62;
    let bits = flags & 0x8000 ? ASSUME_VALID : 0;
    if (flags & 0x4000) {
      if (version < 3 || at + 2 > end) return null; // extended flags are a version-3 feature
      const ext = ((buf[at] as number) << 8) | (buf[at + 1] as number);
      if (ext & 0x4000) bits |= SKIP_WORKTREE;
      if (ext & 0x2000) bits |= INTENT_TO_ADD;
      at += 2;
    }
    let path: string;
    if (version === 4) {
      const [strip, from] = readVarint(buf, at);
      const nul = buf.indexOf(0, from);
      if (strip > prev.length || nul < 0 || nul >= end) return null;
      const keep = prev.length - strip;
      const name = Buffer.allocUnsafe(keep + nul - from);
      prev.copy(name, 0, 0, keep);
      buf.copy(name, keep, from, nul);
      prev = name;
      path = name.toString("utf8");
      entries.push(entryAt(buf, off, path, (flags >> 12) & 0x3, bits));
      off = nul + 1;
    } else {
      let nameLen = flags & 0xfff;
      if (nameLen === 0xfff) nameLen = buf.indexOf(0, at) - at;
      if (nameLen < 0 || at + nameLen > end) return null;
      entries.push(entryAt(buf, off, buf.toString("utf8", at, at + nameLen), (flags >> 12) & 0x3, bits));
      off += (at - off + nameLen + 8) & ~7;
    }
  }
  // Extensions: optional ones (upper-case signature) may be skipped; of the
  // required ones, "link" (split index) and "sdir" (sparse directory entries,
  // which the caller expands) are honoured; any other is refused.
  let tree: Buffer | null = null;
  let link: Buffer | null = null;
  let sparseDirs = false;
  while (off + 8 <= end) {
    const sig = buf.toString("latin1", off, off + 4);
    const size = u32(buf, off + 4);
    if (off + 8 + size > end) return null;
    const first = buf[off] as number;
    if (sig === "TREE") tree = buf.subarray(off + 8, off + 8 + size);
    else if (sig === "link") link = buf.subarray(off + 8, off + 8 + size);
    else if (sig === "sdir") sparseDirs = true;
    else if (first < 0x41 || first > 0x5a) return null;
    off += 8 + size;
  }
  let all = entries;
  if (link && !link.subarray(0, 20).equals(Buffer.alloc(20))) {
    const sharedBuf = shared?.(link.toString("hex", 0, 20));
    const base = sharedBuf ? walkIndex(sharedBuf, verify, entriesOf) : null;
    const merged = base ? mergeSplit(base.entries, entries, link.subarray(20)) : null;
    if (!merged) return null;
    all = merged;
  }
  return { entries: all, rootTree: tree ? cacheTreeRoot(tree, all.length) : null, version, sparseDirs };
}

/** The set bit positions of a git EWAH bitmap at `at`, and where it ends. */
function ewahBits(buf: Buffer, at: number): { bits: number[]; next: number } | null {
  if (at + 8 > buf.length) return null;
  const words = u32(buf, at + 4);
  const start = at + 8;
  if (start + words * 8 + 4 > buf.length) return null;
  const bits: number[] = [];
  let pos = 0; // uncompressed word index
  for (let i = 0; i < words; ) {
    // A run-length word: bit 0 the run's bit, bits 1-32 its length in words, bits 33-63 how many literal words follow.
    const hi = u32(buf, start + i * 8);
    const lo = u32(buf, start + i * 8 + 4);
    i++;
    const runLen = (lo >>> 1) + (hi & 1) * 2 ** 31;
    const literals = hi >>> 1;
    if (lo & 1) for (let w = 0; w < runLen; w++) for (let b = 0; b < 64; b++) bits.push((pos + w) * 64 + b);
    pos += runLen;
    for (let l = 0; l < literals && i < words; l++, i++, pos++) {
      const whi = u32(buf, start + i * 8);
      const wlo = u32(buf, start + i * 8 + 4);
      for (let b = 0; b < 32; b++) if ((wlo >>> b) & 1) bits.push(pos * 64 + b);
      for (let b = 0; b < 32; b++) if ((whi >>> b) & 1) bits.push(pos * 64 + 32 + b);
    }
  }
  return { bits, next: start + words * 8 + 4 };
}

/**
 * A split index: the shared file's entries, minus those the delete bitmap
 * names, with those the replace bitmap names replaced in order by this file's
 * first entries (whose path is then empty: the shared entry's applies), plus
 * this file's remaining entries; sorted as one index.
 */
function mergeSplit(base: IndexEntry[], own: IndexEntry[], bitmaps: Buffer): IndexEntry[] | null {
  const del = bitmaps.length > 0 ? ewahBits(bitmaps, 0) : { bits: [], next: 0 };
  const rep = del && bitmaps.length > del.next ? ewahBits(bitmaps, del.next) : { bits: [], next: 0 };
  if (!del || !rep) return null;
  const out: Array<IndexEntry | null> = [...base];
  let k = 0;
  for (const b of rep.bits) {
    const e = own[k++];
    const was = base[b];
    if (!e || !was) return null;
    if (e.path === "") e.path = was.path;
    out[b] = e;
  }
  for (const b of del.bits) {
    if (b >= base.length) return null;
    out[b] = null;
  }
  const merged = out.filter((e): e is IndexEntry => e !== null);
  for (; k < own.length; k++) merged.push(own[k] as IndexEntry);
  return merged.sort((a, b) => comparePaths(a.path, b.path) || a.stage - b.stage);
}

/** git's index order: paths compared as bytes. */
function comparePaths(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** The root entry of a cache-tree extension: `"" NUL count SP subtrees LF oid`, valid when count covers every entry. */
export function cacheTreeRoot(ext: Buffer, entryCount: number): string | null {
  if (ext[0] !== 0) return null;
  const lf = ext.indexOf(0x0a, 1);
  if (lf < 0 || lf + 21 > ext.length) return null;
  const [count] = ext.toString("latin1", 1, lf).split(" ");
  return Number(count) === entryCount ? ext.toString("hex", lf + 1, lf + 21) : null;
}

/** One directory of a cache-tree: its name (within its parent), tree id, entries below it, and its subdirectories. */
export { type CacheTreeNode, serializeIndex } from "./index-write.ts";

/** Index timestamps as isomorphic-git derives them from a stat (whole milliseconds → nanoseconds), so both agree. */
export function statTimes(ms: number): [number, number] {
  const s = Math.floor(ms / 1000);
  return [s, Math.floor((ms - s * 1000) * 1000000)];
}

/** An index entry for a file just written (its stat data), or one not in the work tree (`st` null). */
export function entryFor(path: string, mode: number, oid: string, st: Pick<Stats, "ctimeMs" | "mtimeMs" | "size" | "dev" | "ino" | "uid" | "gid"> | null): IndexEntry {
  const [cs, cn] = st ? statTimes(st.ctimeMs) : [0, 0];
  const [ms, mn] = st ? statTimes(st.mtimeMs) : [0, 0];
  return {
    path,
    mode,
    oid,
    size: st?.size ?? 0,
    ctimeSeconds: cs,
    ctimeNanoseconds: cn,
    mtimeSeconds: ms,
    mtimeNanoseconds: mn,
    dev: st?.dev ?? 0,
    ino: st?.ino ?? 0,
    uid: st?.uid ?? 0,
    gid: st?.gid ?? 0,
    stage: 0,
  };
}
