// The git index read as views into its own bytes: where each entry starts and
// where its path lies, in typed arrays, and nothing else. A status check of a
// large work tree used to build an object and a path string per entry up
// front (36,000 long non-ASCII names cost some 30 MB); here an entry's fields
// are read from the buffer when asked, its path decoded only when wanted, and
// a path is found by binary search over the sorted path bytes. Reads what
// readIndexForStatus reads (v2, v3, v4, extended flags, a split index, a
// sparse index's directory entries expanded by the caller); the rare forms
// that need merging (a split index) are merged as entries, then viewed.
import { cacheTreeRoot, readIndexForStatus, readVarint, type IndexEntry, type IndexRead, type SharedIndexReader } from "./index-file.ts";
import { ASSUME_VALID, INTENT_TO_ADD, serializeIndex, sha1, SKIP_WORKTREE } from "./index-write.ts";

/** One entry of a view, read-only: its fields come from the index's bytes when asked, the path decoded once. */
class ViewEntry implements IndexEntry {
  private decoded: string | undefined;
  constructor(
    private readonly v: IndexView,
    private readonly i: number,
  ) {}
  get path(): string {
    if (this.decoded === undefined) this.decoded = this.v.path(this.i);
    return this.decoded;
  }
  get ctimeSeconds() { return this.v.field(this.i, 0); }
  get ctimeNanoseconds() { return this.v.field(this.i, 4); }
  get mtimeSeconds() { return this.v.field(this.i, 8); }
  get mtimeNanoseconds() { return this.v.field(this.i, 12); }
  get dev() { return this.v.field(this.i, 16); }
  get ino() { return this.v.field(this.i, 20); }
  get mode() { return this.v.field(this.i, 24); }
  get uid() { return this.v.field(this.i, 28); }
  get gid() { return this.v.field(this.i, 32); }
  get size() { return this.v.field(this.i, 36); }
  get oid() { return this.v.oid(this.i); }
  pathByteLength(): number { return this.v.pathByteLength(this.i); }
  copyPath(to: Uint8Array, at: number): void { this.v.copyPath(this.i, to, at); }
  copyOid(to: Uint8Array, at: number): void { this.v.copyOid(this.i, to, at); }
  get stage() { return this.v.stage(this.i); }
  get flags() { return this.v.flags(this.i); }
}

export class IndexView {
  private readonly dv: DataView;
  private constructor(s: Scanned, rootTree: string | null, sparseDirs: boolean) {
    this.buf = s.buf;
    this.at = s.at;
    this.names = s.names;
    this.pathStart = s.pathStart;
    this.pathEnd = s.pathEnd;
    this.bits = s.bits;
    this.count = s.count;
    this.version = s.version;
    this.rootTree = rootTree;
    this.sparseDirs = sparseDirs;
    this.dv = new DataView(s.buf.buffer, s.buf.byteOffset, s.buf.byteLength);
  }
  private readonly buf: Buffer;
  /** Where each entry's fixed fields start in `buf`. */
  private readonly at: Uint32Array;
  /** The bytes the paths are in: `buf` itself (v2, v3) or the expanded paths of a v4 index. */
  private readonly names: Buffer;
  private readonly pathStart: Uint32Array;
  private readonly pathEnd: Uint32Array;
  /** stage << 4 | ASSUME_VALID/SKIP_WORKTREE/INTENT_TO_ADD bits. */
  private readonly bits: Uint8Array;
  readonly count: number;
  /** The cache-tree's root tree when it covers every entry (readIndex's rootTree). */
  readonly rootTree: string | null;
  readonly version: number;
  /** Some entries are a sparse index's directories (mode 040000). */
  readonly sparseDirs: boolean;

  /**
   * The index file `buf` viewed, or null when it is not one readIndexForStatus
   * reads. The checksum is verified when `verify`. A split index is merged
   * (through `shared`) and rewritten as one buffer first.
   */
  static of(buf: Buffer, shared?: SharedIndexReader, verify = false): IndexView | null {
    const scanned = scan(buf, verify);
    if (scanned === null) return null;
    if (scanned !== "split") return new IndexView(scanned, scanned.rootTree, scanned.sparseDirs);
    const read = readIndexForStatus(buf, shared, verify);
    return read ? IndexView.fromRead(read) : null;
  }

  /** A view of entries already read (a merged split index, an expanded sparse index); null when git could not hold them. */
  static fromRead(read: Pick<IndexRead, "entries" | "rootTree" | "sparseDirs">): IndexView | null {
    let bytes: Buffer;
    try {
      bytes = serializeIndex(read.entries);
    } catch {
      return null; // a mode git cannot hold: not an index a status check answers
    }
    const v = scan(bytes, false);
    if (v === null || v === "split") return null;
    return new IndexView(v, read.rootTree, read.sparseDirs);
  }

  /** The 32-bit field at `rel` bytes into entry `i`'s fixed part (0 ctime s, 8 mtime s, 20 ino, 24 mode, 36 size, …). */
  field(i: number, rel: number): number {
    return this.dv.getUint32((this.at[i] as number) + rel);
  }
  mode(i: number): number {
    return this.field(i, 24);
  }
  stage(i: number): number {
    return (this.bits[i] as number) >> 4;
  }
  /** ASSUME_VALID | SKIP_WORKTREE | INTENT_TO_ADD. */
  flags(i: number): number {
    return (this.bits[i] as number) & 15;
  }
  oid(i: number): string {
    const o = (this.at[i] as number) + 40;
    return this.buf.toString("hex", o, o + 20);
  }
  /** How many bytes entry `i`'s path is (UTF-8). */
  pathByteLength(i: number): number {
    return (this.pathEnd[i] as number) - (this.pathStart[i] as number);
  }
  /** Whether entry `i`'s path is `name` or ends in `/` + `name` (compared as bytes: no string made). */
  hasBaseName(i: number, name: Uint8Array): boolean {
    const start = this.pathStart[i] as number;
    const end = this.pathEnd[i] as number;
    const from = end - name.length;
    if (from < start || (from > start && this.names[from - 1] !== 0x2f)) return false;
    return this.names.compare(name, 0, name.length, from, end) === 0;
  }
  /** Copy entry `i`'s path bytes into `to` at `at` (no object made). */
  copyPath(i: number, to: Uint8Array, at: number): void {
    this.names.copy(to, at, this.pathStart[i], this.pathEnd[i]);
  }
  /** Copy entry `i`'s 20-byte object id into `to` at `at`. */
  copyOid(i: number, to: Uint8Array, at: number): void {
    const o = (this.at[i] as number) + 40;
    this.buf.copy(to, at, o, o + 20);
  }
  path(i: number): string {
    return this.names.toString("utf8", this.pathStart[i], this.pathEnd[i]);
  }
  /** Entry `i` as an IndexEntry (read-only; its fields read when asked). */
  entry(i: number): IndexEntry {
    return new ViewEntry(this, i);
  }
  /** Every entry as an IndexEntry, in index order. */
  *entries(): Generator<IndexEntry> {
    for (let i = 0; i < this.count; i++) yield new ViewEntry(this, i);
  }

  /** Whether some entry (any stage) has exactly this path: a binary search over the sorted path bytes. */
  has(path: string): boolean {
    return this.find(Buffer.from(path, "utf8")) >= 0;
  }

  /** The first entry whose path is exactly `key`'s bytes, or -1. */
  find(key: Uint8Array): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compareAt(mid, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.count && this.compareAt(lo, key) === 0 ? lo : -1;
  }

  private compareAt(i: number, key: Uint8Array): number {
    return this.names.compare(key, 0, key.length, this.pathStart[i], this.pathEnd[i]);
  }
}

/**
 * An index being edited by path (a checkout's move): the view's entries, some
 * replaced, removed or added, without an object per untouched entry until the
 * new index is written.
 */
export class EditedIndex {
  private readonly edits = new Map<string, IndexEntry | null>();
  constructor(readonly view: IndexView) {}

  /** The entry at `path` now (stage 0 is the only stage an edited index holds). */
  get(path: string): IndexEntry | undefined {
    const e = this.edits.get(path);
    if (e !== undefined) return e ?? undefined;
    const i = this.view.find(Buffer.from(path, "utf8"));
    return i < 0 ? undefined : this.view.entry(i);
  }
  set(path: string, e: IndexEntry): void {
    this.edits.set(path, e);
  }
  delete(path: string): void {
    this.edits.set(path, null);
  }

  /** Which of the view's entries an edit replaced or removed. */
  private touched(): Uint8Array {
    const marks = new Uint8Array(this.view.count);
    for (const p of this.edits.keys()) {
      const i = this.view.find(Buffer.from(p, "utf8"));
      if (i >= 0) marks[i] = 1;
    }
    return marks;
  }

  /** The view's entries no edit touched, by position. */
  untouched(): number[] {
    const marks = this.touched();
    const out: number[] = [];
    for (let i = 0; i < marks.length; i++) if (marks[i] === 0) out.push(i);
    return out;
  }

  /** Every entry of the edited index (untouched ones as views), unsorted. */
  entries(): IndexEntry[] {
    const out: IndexEntry[] = this.untouched().map((i) => this.view.entry(i));
    for (const e of this.edits.values()) if (e !== null) out.push(e);
    return out;
  }
}

interface Scanned {
  buf: Buffer;
  at: Uint32Array;
  names: Buffer;
  pathStart: Uint32Array;
  pathEnd: Uint32Array;
  bits: Uint8Array;
  count: number;
  version: number;
}

/** The walk of index-file.ts's reader, recording offsets instead of building entries; "split" for a split index. */
function scan(buf: Buffer, verify: boolean): (Scanned & { rootTree: string | null; sparseDirs: boolean }) | null | "split" {
  if (buf.length < 32 || buf.toString("latin1", 0, 4) !== "DIRC") return null;
  const version = buf.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = buf.readUInt32BE(8);
  const end = buf.length - 20;
  if (count > end / 62) return null;
  if (verify && !sha1(buf.subarray(0, end)).equals(buf.subarray(end))) return null;
  const at = new Uint32Array(count);
  const pathStart = new Uint32Array(count);
  const pathEnd = new Uint32Array(count);
  const bits = new Uint8Array(count);
  // v4: every path spelled out, one after another (at most the previous path's length plus the bytes stored per entry).
  let names = buf;
  let used = 0;
  let prevStart = 0;
  if (version === 4) names = Buffer.allocUnsafe(Math.max(1024, buf.length * 2));
  let off = 12;
  for (let i = 0; i < count; i++) {
    if (off + 62 > end) return null;
    const flags = buf.readUInt16BE(off + 60);
    let p = off + 62;
    let b = ((flags >> 12) & 0x3) << 4;
    if (flags & 0x8000) b |= ASSUME_VALID;
    if (flags & 0x4000) {
      if (version < 3 || p + 2 > end) return null; // extended flags are a version-3 feature
      const ext = buf.readUInt16BE(p);
      if (ext & 0x4000) b |= SKIP_WORKTREE;
      if (ext & 0x2000) b |= INTENT_TO_ADD;
      p += 2;
    }
    at[i] = off;
    bits[i] = b;
    if (version === 4) {
      const [strip, from] = readVarint(buf, p);
      const nul = buf.indexOf(0, from);
      const prevLen = i === 0 ? 0 : used - prevStart;
      if (strip > prevLen || nul < 0 || nul >= end) return null;
      const keep = prevLen - strip;
      const need = used + keep + (nul - from);
      if (need > names.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, names.length * 2));
        names.copy(grown, 0, 0, used);
        names = grown;
      }
      names.copy(names, used, prevStart, prevStart + keep);
      buf.copy(names, used + keep, from, nul);
      prevStart = used;
      pathStart[i] = used;
      used += keep + (nul - from);
      pathEnd[i] = used;
      off = nul + 1;
    } else {
      let nameLen = flags & 0xfff;
      if (nameLen === 0xfff) nameLen = buf.indexOf(0, p) - p;
      if (nameLen < 0 || p + nameLen > end) return null;
      pathStart[i] = p;
      pathEnd[i] = p + nameLen;
      off += (p - off + nameLen + 8) & ~7;
    }
  }
  let tree: Buffer | null = null;
  let sparseDirs = false;
  while (off + 8 <= end) {
    const sig = buf.toString("latin1", off, off + 4);
    const size = buf.readUInt32BE(off + 4);
    if (off + 8 + size > end) return null;
    const first = buf[off] as number;
    if (sig === "TREE") tree = buf.subarray(off + 8, off + 8 + size);
    else if (sig === "link") {
      if (size >= 20 && buf.subarray(off + 8, off + 28).some((x) => x !== 0)) return "split";
    } else if (sig === "sdir") sparseDirs = true;
    else if (first < 0x41 || first > 0x5a) return null;
    off += 8 + size;
  }
  return { buf, at, names, pathStart, pathEnd, bits, count, version, rootTree: tree ? cacheTreeRoot(tree, count) : null, sparseDirs };
}

