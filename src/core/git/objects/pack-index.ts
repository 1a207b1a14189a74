// Store a received pack natively, as `git index-pack` does: the pack is
// streamed to a temp file as it arrives and walked entry by entry on the way
// (pack-receive.ts). Deltas are then resolved from the file, depth first,
// with a delta-base cache of fixed size: memory is bounded by the largest
// object and that cache, never by the pack. A small pack becomes loose objects
// instead, as git does below transfer.unpackLimit. Pack and index appear by
// rename, index last, so a reader never sees half a pack; a failure leaves
// nothing behind, not even the temp file.
import { reportActivity } from "../../base/activity.ts";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { throwIfAborted } from "../../base/errors.ts";
import { atomicWriteFilesAsync, fsyncAsync, fsyncDirAsync } from "../../fs/fsutil.ts";
import { phaseEnd, phaseStart } from "../../base/profile.ts";
import { deferFsync } from "../layout/unpublished.ts";
import { limitError, type TransferLimits, transferLimits } from "./limits.ts";
import { BadPack, DeltaStash, deltaResultSize, Entries, inflateEntry, nameOf, parseHeader, Scratch } from "./pack-entries.ts";
import { Receiver, receive, type ByteSource } from "./pack-receive.ts";
import { buildIndex, completeThinPack, nameOrder } from "./pack-idx.ts";
import type { PackLinks } from "./pack-links.ts";
import { Collector, collectAtBoundary, PER_OBJECT_GARBAGE } from "./garbage.ts";
import { applyDelta, type GitObject, OFS_DELTA, type ObjectStore, type ObjectType, TYPES, writeLooseObjects } from "./object-store.ts";
import { objectsDir } from "../layout/layout.ts";

/** Below this many objects a fetched pack is exploded into loose objects (git's transfer.unpackLimit). */
export const UNPACK_LIMIT = 100;

export interface StoreOptions {
  store: ObjectStore;
  keepPack: boolean;
  signal: AbortSignal;
  limits?: TransferLimits;
  /** Filled with what the pack's commits and tags point at (a first fetch checks its history from it). */
  links?: PackLinks;
  /** A pack from a promisor remote (a partial clone's origin): its `.promisor` file's text, written before the pack appears (keepPack must be true). */
  promisor?: string;
}

/** Objects up to this size let go in delta resolution are kept for reuse (8 at most). */
const SPARE_LARGEST = 1024 * 1024;

/** Bytes read from the pack file at a time in delta resolution: an entry's neighbours (often the next to resolve) come with it. */
const READ_BLOCK = 256 * 1024;

/** Reads entries back from the pack file for delta resolution. */
class PackFile {
  /** The bytes last read, [from, from + got) of the pack: one buffer, grown only for an entry larger than a block. */
  private block = Buffer.allocUnsafe(READ_BLOCK);
  private from = 0;
  private got = 0;
  /** Where a delta's instructions are inflated: they are dropped once applied. */
  private readonly scratch = new Scratch();

  constructor(
    private readonly fd: number,
    private readonly e: Entries,
    private readonly end: number,
    private readonly stash: DeltaStash | null = null,
  ) {}

  /** Entry `i`'s inflated data (whole object, or delta instructions, from the stash if kept there); with `transient`, valid only until the next transient call. */
  inflate(i: number, transient = false): Buffer {
    const kept = transient ? this.stash?.get(i) : null;
    if (kept) return kept;
    const from = this.e.offset[i] as number;
    const to = i + 1 < this.e.n ? (this.e.offset[i + 1] as number) : this.end;
    if (from < this.from || to > this.from + this.got) this.read(from, to);
    const at = from - this.from;
    const end = Math.min(to - this.from, this.got);
    const h = parseHeader(this.block, at, end);
    if (!h) throw new BadPack(`the entry at offset ${from} is cut off`);
    const r = inflateEntry(this.block, at + h.len, end, h.size, from, transient ? this.scratch : undefined);
    if (r === "more") throw new BadPack(`the entry at offset ${from} is cut off`);
    return r.data;
  }

  /** Read the block starting at `from` that holds at least [from, to). */
  private read(from: number, to: number): void {
    const want = Math.min(Math.max(to - from, READ_BLOCK), this.end - from);
    if (this.block.length < want) this.block = Buffer.allocUnsafe(want);
    else if (this.block.length > READ_BLOCK && want <= READ_BLOCK) this.block = Buffer.allocUnsafe(READ_BLOCK); // a large entry's room is let go
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, this.block, got, want - got, from + got);
      if (r <= 0) break;
      got += r;
    }
    this.from = from;
    this.got = got;
  }
}

interface Frame {
  /** Entry index, or -1 for a base taken from our own store (a thin pack's). */
  idx: number;
  /** Its id: set for a base from our store, and whenever ref deltas wait on a base ("" otherwise). */
  oid: string;
  type: ObjectType;
  depth: number;
  data: Buffer | null;
  kids: number[];
  next: number;
}

/** The deltas based on each entry by offset. */
interface Children {
  count: number;
  has(idx: number): boolean;
  of(idx: number): number[];
}

/** Each entry's children by offset, counting-sorted into one flat list. */
function childrenByOffset(e: Entries): Children {
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
  return {
    count: kidList.length,
    has: (idx) => start[idx] !== start[idx + 1],
    of: (idx) => {
      const out: number[] = [];
      for (let k = start[idx] as number; k < (start[idx + 1] as number); k++) out.push(kidList[k] as number);
      return out;
    },
  };
}

/** An entry's children: by offset, then the ref deltas naming its id (a ref delta's base is resolved once even if it appears twice). */
function kidsFinder(children: Children, refKids: Map<string, number[]>): (idx: number, oid: string) => number[] {
  const none: number[] = [];
  return (idx, oid) => {
    // Most entries have no children: no array made for them.
    if ((idx < 0 || !children.has(idx)) && (refKids.size === 0 || !refKids.has(oid))) return none;
    const out: number[] = idx >= 0 ? children.of(idx) : [];
    const byRef = refKids.get(oid);
    if (byRef) {
      refKids.delete(oid);
      out.push(...byRef);
    }
    return out;
  };
}

/**
 * Buffers of resolved objects let go, handed out again for the next results
 * (a plain chain of tree deltas then alternates two buffers): a few, each in
 * its own memory and not too large; none when results are kept elsewhere.
 */
class SpareBuffers {
  private readonly spare: Buffer[] = [];
  constructor(private readonly enabled: boolean) {}

  put(data: Buffer): void {
    if (this.enabled && this.spare.length < 8 && data.byteOffset === 0 && data.buffer.byteLength <= SPARE_LARGEST) this.spare.push(data);
  }

  /** A spare buffer of at least `size` bytes (its whole memory), or undefined. */
  take(size: number): Buffer | undefined {
    for (let s = 0; s < this.spare.length; s++) {
      const b = this.spare[s] as Buffer;
      if (b.buffer.byteLength < size) continue;
      this.spare[s] = this.spare[this.spare.length - 1] as Buffer;
      this.spare.pop();
      return Buffer.from(b.buffer, 0, b.buffer.byteLength);
    }
    return undefined;
  }
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
  const children = childrenByOffset(e);
  if (children.count === 0 && refKids.size === 0) return external;
  const kidsOf = kidsFinder(children, refKids);
  let held = 0;
  let resolved = 0;
  let deltas = children.count;
  for (const kids of refKids.values()) deltas += kids.length;
  reportActivity({ phase: "resolving deltas", done: 0, total: deltas });
  const stack: Frame[] = [];
  /** A frame's object, rebuilt from the nearest frame below it that still holds its own. */
  const dataOf = (k: number): Buffer => {
    const f = stack[k] as Frame;
    if (f.data) return f.data;
    let data: Buffer;
    if (f.idx < 0 || (e.kind[f.idx] as number) < OFS_DELTA) data = f.idx < 0 ? (external.get(f.oid) as GitObject).data : file.inflate(f.idx);
    else data = applyDelta(dataOf(k - 1), file.inflate(f.idx, true)) as Buffer;
    f.data = data;
    held += data.length;
    gc.add(data.length);
    return data;
  };
  // Objects let go are reused for the next results, only when nothing else holds them (no loose writing).
  const spare = new SpareBuffers(keep === null);
  const release = (f: Frame) => {
    if (!f.data) return;
    held -= f.data.length;
    if (f.idx >= 0) spare.put(f.data); // never a base borrowed from our store
    f.data = null;
  };
  const trim = () => {
    for (let k = 0; held > limits.deltaCacheBytes && k < stack.length - 1; k++) release(stack[k] as Frame);
  };
  const walk = (root: Frame) => {
    stack.push(root);
    held += root.data?.length ?? 0;
    while (stack.length > 0) {
      const top = stack.length - 1;
      const f = stack[top] as Frame;
      if (f.next >= f.kids.length) {
        release(f);
        stack.pop();
        continue;
      }
      const k = f.kids[f.next++] as number;
      if (e.named[k]) continue;
      if (++resolved % 256 === 0) {
        throwIfAborted(signal);
        reportActivity({ phase: "resolving deltas", done: resolved, total: deltas });
      }
      if (f.depth + 1 > limits.maxDeltaDepth) throw limitError("maxDeltaDepth", `the pack holds a delta chain longer than ${limits.maxDeltaDepth}`, limits.maxDeltaDepth);
      const base = dataOf(top);
      const delta = file.inflate(k, true);
      const into = spare.take(deltaResultSize(delta));
      const data = applyDelta(base, delta, into);
      if (!data) throw new BadPack(`the delta at offset ${e.offset[k]} does not apply to its base`);
      if (!keep) gc.add(into && data.buffer === into.buffer ? PER_OBJECT_GARBAGE / 4 : data.length + PER_OBJECT_GARBAGE);
      e.setOid(k, nameOf(f.type, data));
      links?.record(k, f.type, data);
      // The id as text only where something looks it up (ref deltas waiting on it, loose writing).
      const hex = keep || refKids.size > 0 ? e.oidHex(k) : "";
      keep?.set(hex, { type: f.type, data });
      // The base is no longer needed once its last child is built (a plain chain holds two objects at a time).
      if (f.next >= f.kids.length) release(f);
      const kids = kidsOf(k, hex);
      if (kids.length === 0) {
        spare.put(data);
        continue;
      }
      stack.push({ idx: k, oid: hex, type: f.type, depth: f.depth + 1, data, kids, next: 0 });
      held += data.length;
      trim();
    }
  };
  for (let i = 0; i < e.n; i++) {
    if ((e.kind[i] as number) >= OFS_DELTA || (!children.has(i) && refKids.size === 0)) continue;
    const oid = refKids.size > 0 ? e.oidHex(i) : "";
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
  reportActivity({ phase: "resolving deltas", done: deltas, total: deltas });
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
  const packDir = join(objectsDir(gitdir), "pack");
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
    const t0 = phaseStart();
    // Deltas kept from arrival for their resolution: a quarter of the delta-base cache's budget, 16 MiB at most.
    let stash = keep ? null : new DeltaStash(Math.min(16 * 1024 * 1024, Math.floor(limits.deltaCacheBytes / 4)));
    let { trailer, end } = await receive(rx, e, limits, keep, refKids, opts.links, signal, stash ?? undefined);
    const t1 = phaseStart();
    phaseEnd("pack.receive", t0);
    const external = resolveDeltas(new PackFile(fd, e, end, stash), e, refKids, store, limits, keep, opts.links, signal);
    stash = null; // garbage before the index is built
    phaseEnd("pack.resolve-deltas", t1);
    throwIfAborted(signal);
    if (keep) {
      close();
      rmSync(tmp, { force: true });
      const t2 = phaseStart();
      writeLooseObjects(gitdir, [...keep].map(([oid, o]) => ({ oid, ...o })));
      phaseEnd("pack.write-loose", t2);
      return { objects: e.n };
    }
    if (external.size > 0) ({ trailer, end } = completeThinPack(fd, e, end, external));
    const order = nameOrder(e);
    opts.links?.seal(e, order);
    const name = `pack-${trailer.toString("hex")}`;
    if (existsSync(join(packDir, `${name}.idx`))) {
      close();
      rmSync(tmp, { force: true });
      if (opts.promisor !== undefined && !existsSync(join(packDir, `${name}.promisor`))) await atomicWriteFilesAsync([[join(packDir, `${name}.promisor`), Buffer.from(opts.promisor)]]);
      return { objects: e.n };
    }
    const t3 = phaseStart();
    collectAtBoundary(); // the resolution's garbage goes before the index is built, when there is much of it
    const t4 = phaseStart();
    phaseEnd("pack.gc", t3);
    const idx = buildIndex(e, trailer, order);
    const packPath = join(packDir, `${name}.pack`);
    const idxPath = join(packDir, `${name}.idx`);
    // As index-pack --promisor: the mark is in place before the pack is, so its missing links are never unexplained.
    const markPromisor = async (): Promise<void> => {
      if (opts.promisor !== undefined) await atomicWriteFilesAsync([[join(packDir, `${name}.promisor`), Buffer.from(opts.promisor)]]);
    };
    if (deferFsync(packPath) && deferFsync(idxPath)) {
      // A clone still under its temp name: both files are fsync'd with the clone's others before its rename (unpublished.ts).
      close();
      await markPromisor();
      renameSync(tmp, packPath);
      const idxTmp = `${tmp}.idx`;
      writeFileSync(idxTmp, idx, { mode: 0o444 });
      renameSync(idxTmp, idxPath);
    } else {
      // On the I/O pool, so that concurrent fetches overlap their fsyncs instead of taking turns on the event loop.
      await fsyncAsync(fd);
      close();
      await markPromisor();
      renameSync(tmp, packPath);
      await fsyncDirAsync(packDir);
      await atomicWriteFilesAsync([[idxPath, idx]]);
    }
    phaseEnd("pack.write-idx+fsync", t4);
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
