// The git index (.git/index), version 2: read it to answer "is the work tree
// clean?" without a full isomorphic-git walk, and write it after a fresh
// checkout. Anything we do not fully understand (other versions, required
// extensions, split index) makes the reader return null so callers fall back
// to isomorphic-git.

export interface IndexEntry {
  path: string;
  mode: number;
  oid: string;
  size: number;
  ctimeSeconds: number;
  ctimeNanoseconds: number;
  mtimeSeconds: number;
  mtimeNanoseconds: number;
  dev: number;
  ino: number;
  uid: number;
  gid: number;
  /** Merge stage: 0 normally, 1-3 during a conflict. */
  stage: number;
}

import { CANONICAL_INDEX_MODES } from "./path-verify.ts";

// Bun's native hasher: node:crypto pulls in Node's stream machinery (~3 ms at startup).
const sha1 = (data: Uint8Array): Buffer => new Bun.CryptoHasher("sha1").update(data).digest();

export function parseIndex(buf: Buffer): IndexEntry[] | null {
  const entries = readIndex(buf)?.entries ?? null;
  // A mode git cannot hold (written by something else): not an index we handle.
  return entries?.every((e) => CANONICAL_INDEX_MODES.has(e.mode)) === false ? null : entries;
}

const u32 = (b: Buffer, o: number): number => (((b[o] as number) << 24) | ((b[o + 1] as number) << 16) | ((b[o + 2] as number) << 8) | (b[o + 3] as number)) >>> 0;

function eagerEntry(buf: Buffer, off: number, path: string, stage: number): IndexEntry {
  return {
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
    readonly path: string,
    readonly stage: number,
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
}

/**
 * The entries, plus the tree the whole index amounts to when its cache-tree
 * extension ("TREE") says so (root entry still valid): comparing that with
 * HEAD's tree answers "anything staged?" without reading HEAD's trees.
 */
export function readIndex(buf: Buffer): IndexRead | null {
  return walkIndex(buf, true, eagerEntry);
}

/**
 * readIndex for read-only questions: entries read lazily (StatusEntry) and the
 * trailing checksum not verified, as git's own reads do (only fsck checks
 * it). A damaged index can at worst read as changes.
 */
export function readIndexForStatus(buf: Buffer): IndexRead | null {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return walkIndex(buf, false, (_, off, path, stage) => new StatusEntry(view, off, path, stage));
}

function walkIndex(buf: Buffer, verify: boolean, entryAt: (buf: Buffer, off: number, path: string, stage: number) => IndexEntry): IndexRead | null {
  if (buf.length < 32 || buf.toString("latin1", 0, 4) !== "DIRC" || u32(buf, 4) !== 2) return null;
  const count = u32(buf, 8);
  const end = buf.length - 20;
  if (verify && !sha1(buf.subarray(0, end)).equals(buf.subarray(end))) return null;
  const entries: IndexEntry[] = [];
  let off = 12;
  for (let i = 0; i < count; i++) {
    if (off + 62 > end) return null;
    const flags = ((buf[off + 60] as number) << 8) | (buf[off + 61] as number);
    if (flags & 0x4000) return null; // extended flags are a version-3 feature
    let nameLen = flags & 0xfff;
    if (nameLen === 0xfff) nameLen = buf.indexOf(0, off + 62) - (off + 62);
    if (nameLen < 0 || off + 62 + nameLen > end) return null;
    entries.push(entryAt(buf, off, buf.toString("utf8", off + 62, off + 62 + nameLen), (flags >> 12) & 0x3));
    off += (62 + nameLen + 8) & ~7;
  }
  // Extensions: optional ones (upper-case signature) may be skipped; a required one we cannot honour.
  let rootTree: string | null = null;
  while (off + 8 <= end) {
    const first = buf[off] as number;
    if (first < 0x41 || first > 0x5a) return null;
    const size = u32(buf, off + 4);
    if (buf.toString("latin1", off, off + 4) === "TREE") rootTree = cacheTreeRoot(buf.subarray(off + 8, off + 8 + size), count);
    off += 8 + size;
  }
  return { entries, rootTree };
}

/** The root entry of a cache-tree extension: `"" NUL count SP subtrees LF oid`, valid when count covers every entry. */
function cacheTreeRoot(ext: Buffer, entryCount: number): string | null {
  if (ext[0] !== 0) return null;
  const lf = ext.indexOf(0x0a, 1);
  if (lf < 0 || lf + 21 > ext.length) return null;
  const [count] = ext.toString("latin1", 1, lf).split(" ");
  return Number(count) === entryCount ? ext.toString("hex", lf + 1, lf + 21) : null;
}

/** One directory of a cache-tree: its name (within its parent), tree id, entries below it, and its subdirectories. */
export interface CacheTreeNode {
  name: string;
  oid: string;
  entries: number;
  children: CacheTreeNode[];
}

function cacheTreeBytes(node: CacheTreeNode, out: Buffer[]): void {
  out.push(Buffer.from(`${node.name}\0${node.entries} ${node.children.length}\n`, "utf8"), Buffer.from(node.oid, "hex"));
  for (const c of node.children) cacheTreeBytes(c, out);
}

/**
 * Serialise entries (any order; they are sorted here as git requires) into an
 * index file, with a cache-tree extension when the caller knows the entries
 * are exactly that tree (a checkout of it).
 */
export function serializeIndex(entries: IndexEntry[], cacheTree?: CacheTreeNode): Buffer {
  // Never write an index git would abort on ("unsupported ce_mode"): the tree check refuses such entries first.
  const bad = entries.find((e) => !CANONICAL_INDEX_MODES.has(e.mode));
  if (bad) throw new Error(`index entry ${JSON.stringify(bad.path)} has mode ${bad.mode.toString(8)}, which git cannot hold`);
  const named = entries.map((e) => ({ e, name: Buffer.from(e.path, "utf8") }));
  named.sort((a, b) => Buffer.compare(a.name, b.name) || a.e.stage - b.e.stage);
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.write("DIRC", 0, "latin1");
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(named.length, 8);
  parts.push(header);
  const u32 = (n: number) => n >>> 0;
  for (const { e, name } of named) {
    const len = (62 + name.length + 8) & ~7;
    const b = Buffer.alloc(len); // zero-filled: the NUL padding comes for free
    b.writeUInt32BE(u32(e.ctimeSeconds), 0);
    b.writeUInt32BE(u32(e.ctimeNanoseconds), 4);
    b.writeUInt32BE(u32(e.mtimeSeconds), 8);
    b.writeUInt32BE(u32(e.mtimeNanoseconds), 12);
    b.writeUInt32BE(u32(e.dev), 16);
    b.writeUInt32BE(u32(e.ino), 20);
    b.writeUInt32BE(u32(e.mode), 24);
    b.writeUInt32BE(u32(e.uid), 28);
    b.writeUInt32BE(u32(e.gid), 32);
    b.writeUInt32BE(u32(e.size), 36);
    b.write(e.oid, 40, "hex");
    b.writeUInt16BE(((e.stage & 0x3) << 12) | Math.min(name.length, 0xfff), 60);
    name.copy(b, 62);
    parts.push(b);
  }
  if (cacheTree && cacheTree.entries === named.length) {
    const ext: Buffer[] = [];
    cacheTreeBytes(cacheTree, ext);
    const data = Buffer.concat(ext);
    const head = Buffer.alloc(8);
    head.write("TREE", 0, "latin1");
    head.writeUInt32BE(data.length, 4);
    parts.push(head, data);
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, sha1(body)]);
}

/** Index timestamps as isomorphic-git derives them from a stat (whole milliseconds → nanoseconds), so both agree. */
export function statTimes(ms: number): [number, number] {
  const s = Math.floor(ms / 1000);
  return [s, Math.floor((ms - s * 1000) * 1000000)];
}
