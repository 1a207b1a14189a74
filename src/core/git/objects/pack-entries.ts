// The entries of a pack as the indexer walks them: an entry's header
// (type, size, delta base), its zlib stream inflated under the size it
// declares, the name of a whole object, and the per-entry table (typed
// arrays, a few dozen bytes an object) that pack-index.ts fills and
// pack-idx.ts writes out. Pure functions over bytes: no file, no store.
import { inflateZlib } from "./inflate.ts";
import { OFS_DELTA, type ObjectType, REF_DELTA } from "./object-store.ts";

/** A pack that is not what it says: the indexer turns it into one sentence naming the pack. */
export class BadPack extends Error {}

/** One hasher for every object named (a digest resets it): a pack names hundreds of thousands. */
const hasher = new Bun.CryptoHasher("sha1");
const HEADS: Record<ObjectType, Buffer> = { commit: Buffer.from("commit "), tree: Buffer.from("tree "), blob: Buffer.from("blob "), tag: Buffer.from("tag ") };
const head = Buffer.alloc(32);
/** head's first n bytes, for each n: no view made per object. */
const HEAD_VIEWS = Array.from({ length: 33 }, (_, n) => head.subarray(0, n));
/** Where digests are written (the hasher asks for room for any digest), and its first 20 bytes. */
const digestRoom = new Uint8Array(64);
const digest20 = digestRoom.subarray(0, 20);

/** The name of the object of `type` holding `data`: SHA-1 of "<type> <size>\0" and the data. */
export function objectId(type: ObjectType, data: Uint8Array): Buffer {
  return Buffer.from(nameOf(type, data));
}

/** objectId's 20 bytes in a buffer reused by the next call: for a caller that copies them at once. */
export function nameOf(type: ObjectType, data: Uint8Array): Uint8Array {
  const prefix = HEADS[type];
  for (let k = 0; k < prefix.length; k++) head[k] = prefix[k] as number;
  // The size in decimal, written backwards from its last digit.
  let digits = 1;
  for (let v = data.length; v >= 10; v = Math.floor(v / 10)) digits++;
  let at = prefix.length + digits;
  head[at] = 0;
  for (let v = data.length; at > prefix.length; v = Math.floor(v / 10)) head[--at] = 0x30 + (v % 10);
  hasher.update(HEAD_VIEWS[prefix.length + digits + 1] as Uint8Array);
  hasher.update(data);
  hasher.digest(digestRoom);
  return digest20;
}

/** A varint of a delta's header (base size, result size) at `at`: its value and where the next starts. */
export function deltaVarint(delta: Uint8Array, at: number): [number, number] {
  let v = 0;
  let shift = 0;
  let c: number;
  let i = at;
  do {
    c = delta[i++] ?? 0;
    v += (c & 0x7f) * 2 ** shift;
    shift += 7;
  } while (c & 0x80 && i < delta.length);
  return [v, i];
}

/** The size a delta says it produces. */
export const deltaResultSize = (delta: Uint8Array): number => deltaVarint(delta, deltaVarint(delta, 0)[1])[0];

export interface Header {
  kind: number;
  size: number;
  baseRel: number;
  baseOid: string | null;
  len: number;
}

/** An entry's header from `b` (relative to `at`), or null when more bytes are needed to read it. */
export function parseHeader(b: Buffer, at: number, end: number): Header | null {
  let i = at;
  if (i >= end) return null;
  let c = b[i++] as number;
  const kind = (c >> 4) & 7;
  let size = c & 0x0f;
  for (let shift = 4; c & 0x80; shift += 7) {
    if (i >= end) return null;
    if (shift > 53) throw new BadPack(`an entry at offset ${at} has an impossible size`);
    c = b[i++] as number;
    size += (c & 0x7f) * 2 ** shift;
  }
  let baseRel = 0;
  let baseOid: string | null = null;
  if (kind === OFS_DELTA) {
    if (i >= end) return null;
    c = b[i++] as number;
    baseRel = c & 0x7f;
    while (c & 0x80) {
      if (i >= end) return null;
      if (baseRel > 2 ** 45) throw new BadPack("a delta's base offset is impossible");
      c = b[i++] as number;
      baseRel = (baseRel + 1) * 128 + (c & 0x7f);
    }
  } else if (kind === REF_DELTA) {
    if (i + 20 > end) return null;
    baseOid = b.toString("hex", i, i + 20);
    i += 20;
  }
  return { kind, size, baseRel, baseOid, len: i - at };
}

/** Typed arrays, one slot per entry: 34 bytes per object received (a header and size are read again from the file when needed). */
export class Entries {
  n = 0;
  offset = new Float64Array(1024);
  kind = new Uint8Array(1024);
  crc = new Uint32Array(1024);
  base = new Int32Array(1024); // OFS_DELTA: index of the base entry; else -1
  oid = new Uint8Array(1024 * 20);
  named = new Uint8Array(1024);

  /**
   * Room for the `count` entries a pack declares (at most the object limit):
   * typed arrays are zero pages until written, so a count that lies costs
   * nothing until its entries actually arrive.
   */
  reserve(count: number): void {
    if (count > this.offset.length) this.grow(count + 16);
  }

  private grow(to = this.offset.length * 2): void {
    const cap = to;
    const more = <T extends Float64Array | Uint8Array | Uint32Array | Int32Array>(a: T, k = 1): T => {
      const b = new (a.constructor as new (n: number) => T)(cap * k);
      b.set(a);
      return b;
    };
    this.offset = more(this.offset);
    this.kind = more(this.kind);
    this.crc = more(this.crc);
    this.base = more(this.base);
    this.oid = more(this.oid, 20);
    this.named = more(this.named);
  }

  push(offset: number, kind: number, crc: number, base: number): number {
    if (this.n === this.offset.length) this.grow();
    const i = this.n++;
    this.offset[i] = offset;
    this.kind[i] = kind;
    this.crc[i] = crc;
    this.base[i] = base;
    return i;
  }

  setOid(i: number, oid: Uint8Array): void {
    const to = i * 20;
    for (let k = 0; k < 20; k++) this.oid[to + k] = oid[k] as number;
    this.named[i] = 1;
  }

  oidHex(i: number): string {
    return Buffer.from(this.oid.buffer, this.oid.byteOffset + i * 20, 20).toString("hex");
  }

  /** The entry starting exactly at `offset`, or -1 (entries are in offset order). */
  at(offset: number): number {
    let lo = 0;
    let hi = this.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.offset[mid] as number;
      if (v === offset) return mid;
      if (v < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/**
 * A buffer reused for data dropped before the next entry is inflated (a
 * delta's instructions, an object only named): hundreds of thousands of
 * small allocations less on a long history. It grows to SCRATCH_BYTES at
 * most; a larger entry gets its own buffer.
 */
export class Scratch {
  private buf = Buffer.allocUnsafe(64 * 1024);

  /** The scratch buffer if `size` bytes fit in what it may grow to, else undefined. */
  room(size: number): Buffer | undefined {
    if (size > SCRATCH_BYTES) return undefined;
    if (size > this.buf.length) this.buf = Buffer.allocUnsafe(Math.min(SCRATCH_BYTES, Math.max(size, this.buf.length * 2)));
    return this.buf;
  }

  /** True when `data` lies in the scratch buffer (it is not garbage once dropped). */
  holds(data: Uint8Array): boolean {
    return data.buffer === this.buf.buffer;
  }
}
const SCRATCH_BYTES = 1024 * 1024;

/** The stash's pieces: a delta is kept whole in one of them. */
const STASH_CHUNK = 1024 * 1024;
/** Deltas larger than this are read again from the file, never stashed. */
const STASH_LARGEST = 64 * 1024;

/**
 * Deltas' instructions as inflated on arrival, kept for their resolution up
 * to a byte budget, so that most deltas of a history (small tree and commit
 * deltas) are not read back and inflated a second time. Stored in chunks of a
 * megabyte, placed by typed arrays: nothing per delta for the collector.
 */
export class DeltaStash {
  private readonly chunks: Buffer[] = [];
  private used = STASH_CHUNK;
  private at = new Float64Array(0);
  private len = new Int32Array(0);
  private held = 0;

  constructor(private readonly budget: number) {}

  /** Keep entry `i`'s delta `data` if it fits in the budget. */
  put(i: number, data: Uint8Array): void {
    const n = data.length;
    if (n === 0 || n > STASH_LARGEST || this.held + n > this.budget) return;
    if (this.used + n > STASH_CHUNK) {
      if ((this.chunks.length + 1) * STASH_CHUNK > this.budget + STASH_CHUNK) return;
      this.chunks.push(Buffer.allocUnsafe(STASH_CHUNK));
      this.used = 0;
    }
    if (i >= this.len.length) {
      const cap = Math.max(i + 1, this.len.length * 2, 1024);
      const at = new Float64Array(cap);
      at.set(this.at);
      const len = new Int32Array(cap);
      len.set(this.len);
      this.at = at;
      this.len = len;
    }
    const chunk = this.chunks[this.chunks.length - 1] as Buffer;
    if (Buffer.isBuffer(data)) data.copy(chunk, this.used);
    else chunk.set(data, this.used);
    this.at[i] = (this.chunks.length - 1) * STASH_CHUNK + this.used;
    this.len[i] = n;
    this.used += n;
    this.held += n;
  }

  /** Entry `i`'s delta if it was kept, else null. */
  get(i: number): Buffer | null {
    const n = i < this.len.length ? (this.len[i] as number) : 0;
    if (n === 0) return null;
    const at = this.at[i] as number;
    const chunk = this.chunks[Math.floor(at / STASH_CHUNK)] as Buffer;
    const from = at % STASH_CHUNK;
    return chunk.subarray(from, from + n);
  }
}

/** Inflate one entry's zlib stream from `b[at..end)`: its data and the bytes it used, or "more" when the stream goes on past `end`. With `scratch`, the data is only valid until its next use. */
export function inflateEntry(b: Buffer, at: number, end: number, size: number, where: number, scratch?: Scratch): { data: Buffer; used: number } | "more" {
  // Output goes into one buffer of the declared size: an entry that inflates past it (an inflate bomb) stops there.
  const r = inflateZlib(b, at, end, size, scratch?.room(size));
  if (r === "more") return r;
  if (r === "too-large") throw new BadPack(`the entry at offset ${where} inflates to more than the ${size} bytes it declares`);
  if (r === "corrupt") throw new BadPack(`the entry at offset ${where} is not valid zlib data`);
  if (r.data.length !== size) throw new BadPack(`the entry at offset ${where} inflates to ${r.data.length} bytes, not the ${size} it declares`);
  return r;
}
