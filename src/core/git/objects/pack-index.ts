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
import { throwIfAborted } from "../../base/errors.ts";
import { atomicWriteFilesAsync, fsyncDir } from "../../fs/fsutil.ts";
import { limitError, showBytes, type TransferLimits, transferLimits } from "./limits.ts";
import { BadPack, deltaResultSize, Entries, type Header, inflateEntry, objectId, parseHeader } from "./pack-entries.ts";
import { buildIndex, completeThinPack, nameOrder } from "./pack-idx.ts";
import type { PackLinks } from "./pack-links.ts";
import { Collector, PER_OBJECT_GARBAGE } from "./garbage.ts";
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
  /** Filled with what the pack's commits and tags point at (a first fetch checks its history from it). */
  links?: PackLinks;
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
async function receive(rx: Receiver, e: Entries, limits: TransferLimits, keep: Map<string, GitObject> | null, refKids: Map<string, number[]>, links: PackLinks | undefined, signal: AbortSignal): Promise<{ trailer: Buffer; end: number }> {
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
      links?.record(i, type, got.data);
      keep?.set(oid.toString("hex"), { type, data: got.data });
    }
    rx.consume(len);
    const size = got.data.length;
    got = "more"; // dropped before collecting: a large object is handed back before the next one is inflated
    if (!keep) gc.add(size + PER_OBJECT_GARBAGE);
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
  /** One read buffer, grown as needed: an entry's compressed bytes are dead once inflated. */
  private scratch = Buffer.allocUnsafe(64 * 1024);

  constructor(
    private readonly fd: number,
    private readonly e: Entries,
    private readonly end: number,
  ) {}

  /** Entry `i`'s inflated data (whole object, or delta instructions). */
  inflate(i: number): Buffer {
    const from = this.e.offset[i] as number;
    const to = i + 1 < this.e.n ? (this.e.offset[i + 1] as number) : this.end;
    if (this.scratch.length < to - from) this.scratch = Buffer.allocUnsafe(Math.max(to - from, this.scratch.length * 2));
    const buf = this.scratch;
    const want = to - from;
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, buf, got, want - got, from + got);
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
function resolveDeltas(file: PackFile, e: Entries, refKids: Map<string, number[]>, store: ObjectStore, limits: TransferLimits, keep: Map<string, GitObject> | null, links: PackLinks | undefined, signal: AbortSignal): Map<string, GitObject> {
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
      if (!keep) gc.add(delta.length + data.length + PER_OBJECT_GARBAGE);
      const oid = objectId(f.type, data);
      e.setOid(k, oid);
      links?.record(k, f.type, data);
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
    let { trailer, end } = await receive(rx, e, limits, keep, refKids, opts.links, signal);
    const external = resolveDeltas(new PackFile(fd, e, end), e, refKids, store, limits, keep, opts.links, signal);
    throwIfAborted(signal);
    if (keep) {
      close();
      rmSync(tmp, { force: true });
      writeLooseObjects(gitdir, [...keep].map(([oid, o]) => ({ oid, ...o })));
      return { objects: e.n };
    }
    if (external.size > 0) ({ trailer, end } = completeThinPack(fd, e, end, external));
    const order = nameOrder(e);
    opts.links?.seal(e, order);
    const name = `pack-${trailer.toString("hex")}`;
    if (existsSync(join(packDir, `${name}.idx`))) {
      close();
      rmSync(tmp, { force: true });
      return { objects: e.n };
    }
    Bun.gc(true); // the resolution's garbage goes before the index is built
    const idx = buildIndex(e, trailer, order);
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
