// Store a received pack natively, as `git index-pack` does: the pack is
// streamed to a temp file as it arrives and walked entry by entry on the way
// (each entry inflated once, its declared size checked against what inflates,
// whole objects named, the checksum verified at the trailer and nothing
// accepted after it). Deltas are then resolved from the file, depth first,
// with a delta-base cache of fixed size: memory is bounded by the largest
// object and that cache, never by the pack. A small pack becomes loose objects
// instead, as git does below transfer.unpackLimit. Pack and index appear by
// rename, index last, so a reader never sees half a pack; a failure leaves
// nothing behind, not even the temp file.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";
import { throwIfAborted } from "../../base/errors.ts";
import { atomicWriteFilesAsync, fsyncDir } from "../../fs/fsutil.ts";
import { limitError, showBytes, type TransferLimits, transferLimits } from "./limits.ts";
import { applyDelta, type GitObject, OFS_DELTA, type ObjectStore, type ObjectType, REF_DELTA, TYPES, writeLooseObjects } from "./object-store.ts";

/** Below this many objects a fetched pack is exploded into loose objects (git's transfer.unpackLimit). */
export const UNPACK_LIMIT = 100;

/** The bytes of a pack as they arrive; null once the sender is done. */
export interface ByteSource {
  read(): Promise<Uint8Array | null>;
}

export interface StoreOptions {
  store: ObjectStore;
  keepPack: boolean;
  signal: AbortSignal;
  limits?: TransferLimits;
}

class BadPack extends Error {}

/**
 * Every entry inflated or rebuilt is garbage once named. Bun collects by its
 * own schedule, which lets hundreds of megabytes of dead buffers pile up on a
 * large pack; collecting after every GARBAGE_BYTES keeps the peak near what
 * is live (a few milliseconds per collection: the live heap is small).
 */
const GARBAGE_BYTES = 24 * 1024 * 1024;

class Collector {
  private bytes = 0;
  /** Count `n` bytes of new garbage; collect when enough has piled up. */
  add(n: number): void {
    this.bytes += n;
    if (this.bytes >= GARBAGE_BYTES) {
      this.bytes = 0;
      Bun.gc(true);
    }
  }
}

function objectId(type: ObjectType, data: Uint8Array): Buffer {
  const h = new Bun.CryptoHasher("sha1");
  h.update(`${type} ${data.length}\0`);
  h.update(data);
  return h.digest() as Buffer;
}

/** A varint of a delta's header (base size, result size) at `at`: its value and where the next starts. */
function deltaVarint(delta: Uint8Array, at: number): [number, number] {
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
const deltaResultSize = (delta: Uint8Array): number => deltaVarint(delta, deltaVarint(delta, 0)[1])[0];

interface Header {
  kind: number;
  size: number;
  baseRel: number;
  baseOid: string | null;
  len: number;
}

/** An entry's header from `b` (relative to `at`), or null when more bytes are needed to read it. */
function parseHeader(b: Buffer, at: number, end: number): Header | null {
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
class Entries {
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
    this.oid.set(oid, i * 20);
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

/** Inflate one entry's zlib stream from `b[at..end)`: its data and the bytes it used, or "more" when the stream goes on past `end`. */
function inflateEntry(b: Buffer, at: number, end: number, size: number, where: number): { data: Buffer; used: number } | "more" {
  try {
    // maxOutputLength stops an entry that inflates past its declared size (an inflate bomb) at that size.
    // chunkSize past the declared size: the output is one buffer, never chunks joined into a second copy.
    const r = inflateSync(b.subarray(at, end), { info: true, maxOutputLength: Math.max(size, 1), chunkSize: Math.max(64, size + 64) }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    if (r.buffer.length !== size) throw new BadPack(`the entry at offset ${where} inflates to ${r.buffer.length} bytes, not the ${size} it declares`);
    return { data: r.buffer, used: r.engine.bytesWritten };
  } catch (err) {
    if (err instanceof BadPack) throw err;
    const code = (err as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE") throw new BadPack(`the entry at offset ${where} inflates to more than the ${size} bytes it declares`);
    if (code === "Z_BUF_ERROR") return "more";
    throw new BadPack(`the entry at offset ${where} is not valid zlib data`);
  }
}

/** Receiving: the pack goes to `fd` as it arrives while its entries are walked. */
class Receiver {
  private win = Buffer.allocUnsafe(1 << 20);
  private ws = 0;
  private we = 0;
  /** Pack offset of win[ws]. */
  private pos = 0;
  private ended = false;
  received = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly fd: number,
    private readonly limits: TransferLimits,
  ) {}

  get available(): number {
    return this.we - this.ws;
  }

  /** Read one more chunk (to disk and into the window); false at the end of the stream. */
  async more(): Promise<boolean> {
    if (this.ended) return false;
    const chunk = await this.source.read();
    if (chunk === null) {
      this.ended = true;
      return false;
    }
    if (chunk.length === 0) return true;
    this.received += chunk.length;
    if (this.received > this.limits.maxPackBytes) throw limitError("maxPackBytes", `the pack is larger than ${showBytes(this.limits.maxPackBytes)}`, this.limits.maxPackBytes);
    writeSync(this.fd, chunk);
    if (this.we + chunk.length > this.win.length) {
      const live = this.we - this.ws;
      if (live + chunk.length <= this.win.length / 2) this.win.copy(this.win, 0, this.ws, this.we);
      else {
        const bigger = Buffer.allocUnsafe(Math.max(this.win.length * 2, live + chunk.length));
        this.win.copy(bigger, 0, this.ws, this.we);
        this.win = bigger;
      }
      this.ws = 0;
      this.we = live;
    }
    this.win.set(chunk, this.we);
    this.we += chunk.length;
    return true;
  }

  /** Make at least `n` bytes available; false if the stream ends first. */
  async need(n: number): Promise<boolean> {
    while (this.available < n) if (!(await this.more())) return false;
    return true;
  }

  /** The window: bytes [pos, pos + available) of the pack, at buf[start…]. */
  view(): { buf: Buffer; start: number; end: number; pos: number } {
    return { buf: this.win, start: this.ws, end: this.we, pos: this.pos };
  }

  consume(n: number): void {
    this.ws += n;
    this.pos += n;
  }

  /** Anything after the trailer is an error: the stream must end there. */
  async atEnd(): Promise<boolean> {
    if (this.available > 0) return false;
    while (await this.more()) if (this.available > 0) return false;
    return true;
  }
}

/** Walk the pack as it arrives: every entry's header, extent, CRC and (for whole objects) name. */
async function receive(rx: Receiver, e: Entries, limits: TransferLimits, keep: Map<string, GitObject> | null, refKids: Map<string, number[]>, signal: AbortSignal): Promise<{ trailer: Buffer; end: number }> {
  if (!(await rx.need(12))) throw new BadPack("it ends before its header");
  const gc = new Collector();
  let v = rx.view();
  if (v.buf.toString("latin1", v.start, v.start + 4) !== "PACK") throw new BadPack("it does not start with PACK");
  const version = v.buf.readUInt32BE(v.start + 4);
  if (version !== 2 && version !== 3) throw new BadPack(`version ${version} is not supported`);
  const count = v.buf.readUInt32BE(v.start + 8);
  if (count > limits.maxPackObjects) throw limitError("maxPackObjects", `the pack says it holds ${count} objects`, limits.maxPackObjects);
  const sum = new Bun.CryptoHasher("sha1");
  sum.update(v.buf.subarray(v.start, v.start + 12));
  rx.consume(12);
  e.reserve(count);
  for (let n = 0; n < count; n++) {
    if (n % 256 === 0) throwIfAborted(signal);
    let h: Header | null;
    for (;;) {
      v = rx.view();
      h = parseHeader(v.buf, v.start, v.end);
      if (h || !(await rx.more())) break;
    }
    if (!h) throw new BadPack(`it ends after ${n} of ${count} objects`);
    const offset = v.pos;
    const isDelta = h.kind === OFS_DELTA || h.kind === REF_DELTA;
    if (!TYPES[h.kind] && !isDelta) throw new BadPack(`the entry at offset ${offset} has unknown type ${h.kind}`);
    if (h.size > limits.maxObjectBytes) throw limitError("maxObjectBytes", `the pack holds an object of ${showBytes(h.size)} at offset ${offset}, over the largest allowed`, limits.maxObjectBytes);
    let base = -1;
    if (h.kind === OFS_DELTA) {
      base = e.at(offset - h.baseRel);
      if (h.baseRel <= 0 || base < 0) throw new BadPack(`the delta at offset ${offset} points at no entry before it`);
    }
    // Inflate, reading more until the entry's stream ends inside the window; the window is at least doubled each time, so a large entry costs a few attempts, not one per chunk.
    let got: { data: Buffer; used: number } | "more";
    for (;;) {
      v = rx.view();
      got = inflateEntry(v.buf, v.start + h.len, v.end, h.size, offset);
      if (got !== "more") break;
      // Deflate barely grows what it cannot compress: a stream much longer than its declared output is not an honest entry.
      if (rx.available - h.len > h.size + (h.size >> 2) + 65536) throw new BadPack(`the entry at offset ${offset} goes on far past the ${h.size} bytes it declares`);
      if (!(await rx.need(rx.available * 2 + 4096))) {
        // The stream ended: the entry must end in what arrived.
        v = rx.view();
        got = inflateEntry(v.buf, v.start + h.len, v.end, h.size, offset);
        if (got === "more") throw new BadPack(`it ends inside the entry at offset ${offset}`);
        break;
      }
    }
    v = rx.view();
    const len = h.len + got.used;
    const bytes = v.buf.subarray(v.start, v.start + len);
    sum.update(bytes);
    const i = e.push(offset, h.kind, Bun.hash.crc32(bytes) >>> 0, base);
    if (isDelta) {
      const result = deltaResultSize(got.data);
      if (result > limits.maxObjectBytes) throw limitError("maxObjectBytes", `a delta in the pack at offset ${offset} builds an object of ${showBytes(result)}, over the largest allowed`, limits.maxObjectBytes);
      if (h.baseOid) refKids.set(h.baseOid, [...(refKids.get(h.baseOid) ?? []), i]);
    } else {
      const type = TYPES[h.kind] as ObjectType;
      const oid = objectId(type, got.data);
      e.setOid(i, oid);
      keep?.set(oid.toString("hex"), { type, data: got.data });
    }
    rx.consume(len);
    const size = got.data.length;
    got = "more"; // dropped before collecting: a large object is handed back before the next one is inflated
    if (!keep) gc.add(size);
  }
  const end = rx.view().pos;
  if (!(await rx.need(20))) throw new BadPack(`it ends after its last object, without its checksum`);
  v = rx.view();
  const trailer = Buffer.from(v.buf.subarray(v.start, v.start + 20));
  if (!(sum.digest() as Buffer).equals(trailer)) throw new BadPack("its checksum does not match");
  rx.consume(20);
  if (!(await rx.atEnd())) throw new BadPack("it has bytes after its checksum");
  return { trailer, end };
}

/** Reads entries back from the pack file for delta resolution. */
class PackFile {
  constructor(
    private readonly fd: number,
    private readonly e: Entries,
    private readonly end: number,
  ) {}

  /** Entry `i`'s inflated data (whole object, or delta instructions). */
  inflate(i: number): Buffer {
    const from = this.e.offset[i] as number;
    const to = i + 1 < this.e.n ? (this.e.offset[i + 1] as number) : this.end;
    const buf = Buffer.allocUnsafe(to - from);
    let got = 0;
    while (got < buf.length) {
      const r = readSync(this.fd, buf, got, buf.length - got, from + got);
      if (r <= 0) break;
      got += r;
    }
    const h = parseHeader(buf, 0, got);
    if (!h) throw new BadPack(`the entry at offset ${from} is cut off`);
    const r = inflateEntry(buf, h.len, got, h.size, from);
    if (r === "more") throw new BadPack(`the entry at offset ${this.e.offset[i]} is cut off`);
    return r.data;
  }
}

interface Frame {
  /** Entry index, or -1 for a base taken from our own store (a thin pack's). */
  idx: number;
  oid: string;
  type: ObjectType;
  depth: number;
  data: Buffer | null;
  kids: number[];
  next: number;
}

/**
 * Name every delta by applying it to its base (in the pack, or already in
 * `store`), depth first. The chain being walked keeps its objects in memory up
 * to `deltaCacheBytes`; past that the oldest are dropped and rebuilt from
 * their own bases when needed again. Returns the bases borrowed from `store`.
 */
function resolveDeltas(file: PackFile, e: Entries, refKids: Map<string, number[]>, store: ObjectStore, limits: TransferLimits, keep: Map<string, GitObject> | null, signal: AbortSignal): Map<string, GitObject> {
  const external = new Map<string, GitObject>();
  const gc = new Collector();
  // Children of each entry by offset: counting sort into one flat list.
  const start = new Int32Array(e.n + 1);
  for (let i = 0; i < e.n; i++) {
    const b = e.base[i] as number;
    if (b >= 0) start[b + 1] = (start[b + 1] as number) + 1;
  }
  for (let i = 0; i < e.n; i++) start[i + 1] = (start[i + 1] as number) + (start[i] as number);
  const kidList = new Int32Array(start[e.n] as number);
  const fill = start.slice(0, e.n);
  for (let i = 0; i < e.n; i++) {
    const b = e.base[i] as number;
    if (b >= 0) {
      kidList[fill[b] as number] = i;
      fill[b] = (fill[b] as number) + 1;
    }
  }
  if (kidList.length === 0 && refKids.size === 0) return external;
  const kidsOf = (idx: number, oid: string): number[] => {
    const out: number[] = [];
    if (idx >= 0) for (let k = start[idx] as number; k < (start[idx + 1] as number); k++) out.push(kidList[k] as number);
    const byRef = refKids.get(oid);
    if (byRef) {
      refKids.delete(oid); // a ref delta's base is resolved once even if it appears twice
      out.push(...byRef);
    }
    return out;
  };
  let held = 0;
  let resolved = 0;
  const stack: Frame[] = [];
  /** A frame's object, rebuilt from the nearest frame below it that still holds its own. */
  const dataOf = (k: number): Buffer => {
    const f = stack[k] as Frame;
    if (f.data) return f.data;
    let data: Buffer;
    if (f.idx < 0 || (e.kind[f.idx] as number) < OFS_DELTA) data = f.idx < 0 ? (external.get(f.oid) as GitObject).data : file.inflate(f.idx);
    else data = applyDelta(dataOf(k - 1), file.inflate(f.idx)) as Buffer;
    f.data = data;
    held += data.length;
    gc.add(data.length);
    return data;
  };
  const trim = () => {
    for (let k = 0; held > limits.deltaCacheBytes && k < stack.length - 1; k++) {
      const f = stack[k] as Frame;
      if (f.data) {
        held -= f.data.length;
        f.data = null;
      }
    }
  };
  const walk = (root: Frame) => {
    stack.push(root);
    held += root.data?.length ?? 0;
    while (stack.length > 0) {
      const top = stack.length - 1;
      const f = stack[top] as Frame;
      if (f.next >= f.kids.length) {
        held -= f.data?.length ?? 0;
        stack.pop();
        continue;
      }
      const k = f.kids[f.next++] as number;
      if (e.named[k]) continue;
      if (++resolved % 256 === 0) throwIfAborted(signal);
      if (f.depth + 1 > limits.maxDeltaDepth) throw limitError("maxDeltaDepth", `the pack holds a delta chain longer than ${limits.maxDeltaDepth}`, limits.maxDeltaDepth);
      const base = dataOf(top);
      const delta = file.inflate(k);
      const data = applyDelta(base, delta);
      if (!data) throw new BadPack(`the delta at offset ${e.offset[k]} does not apply to its base`);
      if (!keep) gc.add(delta.length + data.length);
      const oid = objectId(f.type, data);
      e.setOid(k, oid);
      const hex = oid.toString("hex");
      keep?.set(hex, { type: f.type, data });
      // The base is no longer needed once its last child is built (a plain chain holds two objects at a time).
      if (f.next >= f.kids.length && f.data) {
        held -= f.data.length;
        f.data = null;
      }
      const kids = kidsOf(k, hex);
      if (kids.length === 0) continue;
      stack.push({ idx: k, oid: hex, type: f.type, depth: f.depth + 1, data, kids, next: 0 });
      held += data.length;
      trim();
    }
  };
  for (let i = 0; i < e.n; i++) {
    if ((e.kind[i] as number) >= OFS_DELTA) continue;
    const oid = e.oidHex(i);
    const kids = kidsOf(i, oid);
    if (kids.length === 0) continue;
    walk({ idx: i, oid, type: TYPES[e.kind[i] as number] as ObjectType, depth: 0, data: null, kids, next: 0 });
  }
  // Ref deltas on objects we already have (a thin pack).
  for (const oid of [...refKids.keys()]) {
    const base = store.read(oid);
    if (!base) continue;
    external.set(oid, base);
    walk({ idx: -1, oid, type: base.type, depth: 0, data: base.data, kids: kidsOf(-1, oid), next: 0 });
  }
  for (let i = 0; i < e.n; i++) if (!e.named[i]) throw new BadPack(`the delta at offset ${e.offset[i]} has a base neither in the pack nor here`);
  return external;
}

/**
 * A pack kept on disk must hold every delta base itself: append the bases a
 * thin pack borrowed from our store as whole objects (git's --fix-thin), then
 * fix the object count and checksum. Returns the new checksum.
 */
function completeThinPack(fd: number, e: Entries, end: number, external: Map<string, GitObject>): { trailer: Buffer; end: number } {
  const kinds: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
  let at = end;
  for (const [oid, obj] of external) {
    const head: number[] = [];
    let size = obj.data.length;
    let c = (kinds[obj.type] << 4) | (size & 0x0f);
    size = Math.floor(size / 16);
    while (size > 0) {
      head.push(c | 0x80);
      c = size & 0x7f;
      size = Math.floor(size / 128);
    }
    head.push(c);
    const body = Buffer.concat([Buffer.from(head), deflateSync(obj.data)]);
    writeSync(fd, body, 0, body.length, at);
    const i = e.push(at, kinds[obj.type], Bun.hash.crc32(body) >>> 0, -1);
    e.setOid(i, Buffer.from(oid, "hex"));
    at += body.length;
  }
  const count = Buffer.allocUnsafe(4);
  count.writeUInt32BE(e.n);
  writeSync(fd, count, 0, 4, 8);
  const h = new Bun.CryptoHasher("sha1");
  const chunk = Buffer.allocUnsafe(1 << 20);
  for (let pos = 0; pos < at; ) {
    const r = readSync(fd, chunk, 0, Math.min(chunk.length, at - pos), pos);
    if (r <= 0) throw new Error("the temp pack file could not be read back");
    h.update(chunk.subarray(0, r));
    pos += r;
  }
  const trailer = h.digest() as Buffer;
  writeSync(fd, trailer, 0, 20, at);
  return { trailer, end: at };
}

/** The .idx (version 2) of a pack whose entries are all named. */
function buildIndex(e: Entries, trailer: Buffer): Buffer {
  const n = e.n;
  const oids = Buffer.from(e.oid.buffer, e.oid.byteOffset, n * 20);
  // Bucket sort on the first two bytes of the name, then each (small) bucket by the whole name: no per-object allocation.
  const starts = new Int32Array(65537);
  for (let i = 0; i < n; i++) {
    const k = oids.readUInt16BE(i * 20) + 1;
    starts[k] = (starts[k] as number) + 1;
  }
  for (let k = 1; k <= 65536; k++) starts[k] = (starts[k] as number) + (starts[k - 1] as number);
  const order = new Int32Array(n);
  const next = starts.slice(0, 65536);
  for (let i = 0; i < n; i++) {
    const k = oids.readUInt16BE(i * 20);
    order[next[k] as number] = i;
    next[k] = (next[k] as number) + 1;
  }
  const byName = (a: number, b: number) => oids.compare(oids, b * 20, b * 20 + 20, a * 20, a * 20 + 20);
  for (let k = 0; k < 65536; k++) {
    const from = starts[k] as number;
    const to = starts[k + 1] as number;
    if (to - from > 1) order.subarray(from, to).sort(byName);
  }
  let large = 0;
  for (let i = 0; i < n; i++) if ((e.offset[i] as number) >= 0x80000000) large++;
  const out = Buffer.alloc(8 + 1024 + n * 28 + large * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  for (let i = 0; i < n; i++) {
    const b = oids[i * 20] as number;
    fanout[b] = (fanout[b] as number) + 1;
  }
  let total = 0;
  for (let b = 0; b < 256; b++) {
    total += fanout[b] as number;
    out.writeUInt32BE(total, 8 + b * 4);
  }
  const names = 8 + 1024;
  const crcs = names + n * 20;
  const offsets = crcs + n * 4;
  const larges = offsets + n * 4;
  let nextLarge = 0;
  for (let r = 0; r < n; r++) {
    const i = order[r] as number;
    oids.copy(out, names + r * 20, i * 20, i * 20 + 20);
    out.writeUInt32BE(e.crc[i] as number, crcs + r * 4);
    const off = e.offset[i] as number;
    if (off < 0x80000000) out.writeUInt32BE(off, offsets + r * 4);
    else {
      out.writeUInt32BE((0x80000000 | nextLarge) >>> 0, offsets + r * 4);
      out.writeBigUInt64BE(BigInt(off), larges + nextLarge * 8);
      nextLarge++;
    }
  }
  const at = larges + large * 8;
  trailer.copy(out, at);
  const h = new Bun.CryptoHasher("sha1");
  h.update(out.subarray(0, at + 20));
  h.digest().copy(out, at + 20);
  return out;
}

/** Temp packs of fetches killed mid-way (their process is gone) are removed, so they never pile up. */
function removeDeadTemps(packDir: string): void {
  let names: string[];
  try {
    names = readdirSync(packDir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^tmp_pack_(\d+)_/.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (err) {
      if ((err as { code?: string }).code === "ESRCH") rmSync(join(packDir, name), { force: true });
    }
  }
}

/**
 * Add the objects of a pack arriving from `source` to `gitdir`'s store: kept
 * as a pack for a first fetch (a clone, as git does) or when large, else
 * exploded into loose objects. A corrupt or incomplete pack throws an Error
 * naming what is wrong; a pack over a limit throws that limit's error. Either
 * way nothing is written.
 */
export async function storePackStream(gitdir: string, source: ByteSource, opts: StoreOptions): Promise<{ objects: number }> {
  const { store, signal } = opts;
  const limits = opts.limits ?? transferLimits();
  const packDir = join(gitdir, "objects", "pack");
  mkdirSync(packDir, { recursive: true });
  removeDeadTemps(packDir);
  const tmp = join(packDir, `tmp_pack_${process.pid}_${Math.random().toString(36).slice(2, 10)}`);
  const fd = openSync(tmp, "w+", 0o444);
  let closed = false;
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  try {
    const e = new Entries();
    const refKids = new Map<string, number[]>();
    const rx = new Receiver(source, fd, limits);
    // The object count is known once the header is in: a small fetch's objects are kept in memory for loose writing.
    let keep: Map<string, GitObject> | null = null;
    if (!opts.keepPack && (await rx.need(12))) {
      const v = rx.view();
      if (v.buf.readUInt32BE(v.start + 8) < UNPACK_LIMIT) keep = new Map();
    }
    let { trailer, end } = await receive(rx, e, limits, keep, refKids, signal);
    const external = resolveDeltas(new PackFile(fd, e, end), e, refKids, store, limits, keep, signal);
    throwIfAborted(signal);
    if (keep) {
      close();
      rmSync(tmp, { force: true });
      writeLooseObjects(gitdir, [...keep].map(([oid, o]) => ({ oid, ...o })));
      return { objects: e.n };
    }
    if (external.size > 0) ({ trailer, end } = completeThinPack(fd, e, end, external));
    const name = `pack-${trailer.toString("hex")}`;
    if (existsSync(join(packDir, `${name}.idx`))) {
      close();
      rmSync(tmp, { force: true });
      return { objects: e.n };
    }
    Bun.gc(true); // the resolution's garbage goes before the index is built
    const idx = buildIndex(e, trailer);
    fsyncSync(fd);
    close();
    renameSync(tmp, join(packDir, `${name}.pack`));
    fsyncDir(packDir);
    await atomicWriteFilesAsync([[join(packDir, `${name}.idx`), idx]]);
    return { objects: e.n };
  } catch (err) {
    close();
    rmSync(tmp, { force: true });
    if (err instanceof BadPack) throw new Error(`the received pack is corrupt: ${err.message}`);
    throw err;
  }
}

/** A pack already in memory (the local transport's), stored as `storePackStream` does. */
export function storePack(gitdir: string, received: Buffer, opts: StoreOptions): Promise<{ objects: number }> {
  let sent = false;
  return storePackStream(gitdir, { read: async () => (sent ? null : ((sent = true), received)) }, opts);
}
