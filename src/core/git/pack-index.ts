// Store a received pack natively, as `git index-pack` / `git unpack-objects`
// do: check its checksum, inflate each entry once (Node's zlib reports how
// many bytes each stream used, which walking a pack needs), resolve deltas
// from their bases, name every object by its SHA-1 and write the .idx (v2).
// A small pack becomes loose objects instead, as git does below
// transfer.unpackLimit. Pack and index appear by rename, index last, so a
// reader never sees half a pack; nothing else is written.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";
import { throwIfAborted } from "../errors.ts";
import { atomicWriteFilesAsync } from "../fsutil.ts";
import { adler32, applyDelta, type GitObject, OFS_DELTA, type ObjectStore, type ObjectType, REF_DELTA, readEntryHeader, TYPES, writeLooseObjects } from "./object-store.ts";

/** Below this many objects a fetched pack is exploded into loose objects (git's transfer.unpackLimit). */
export const UNPACK_LIMIT = 100;


interface Entry {
  offset: number;
  /** End of the entry's compressed data (exclusive). */
  end: number;
  /** 1–4 for whole objects, 6/7 for deltas. */
  kind: number;
  /** Whole objects: where the zlib data starts; deltas: their inflated instructions. */
  dataAt: number;
  delta: Buffer | null;
  baseOffset: number;
  baseOid: string | null;
  oid: string | null;
  type: ObjectType | null;
}

class BadPack extends Error {}

function objectId(type: ObjectType, data: Uint8Array): string {
  const h = new Bun.CryptoHasher("sha1");
  h.update(`${type} ${data.length}\0`);
  h.update(data);
  return h.digest("hex");
}

/**
 * Inflate the zlib stream at `at`: its data and where it ends. Bun's inflate
 * is fast but does not say where a stream ends; the stream's adler-32 trailer
 * does: when those four bytes occur exactly once in the window, that is the
 * end. Otherwise (rare) Node's zlib, which counts the bytes it used, decides.
 */
function inflateAt(pack: Buffer, at: number, size: number, limit: number): { data: Buffer; end: number } {
  const cmf = pack[at] as number;
  const flg = pack[at + 1] as number;
  if ((cmf & 0x0f) !== 8 || ((cmf << 8) | flg) % 31 !== 0) throw new BadPack(`an entry at offset ${at} is not zlib data`);
  // A window a little larger than the data (deflate barely grows incompressible
  // input), widened only if the stream does not end inside it.
  for (let want = size + (size >> 3) + 64; ; want *= 4) {
    const stop = Math.min(limit, at + want);
    let raw: Uint8Array;
    try {
      raw = Bun.inflateSync(pack.subarray(at + 2, stop) as Uint8Array<ArrayBuffer>);
    } catch {
      if (stop >= limit) throw new BadPack(`an entry at offset ${at} is not valid zlib data`);
      continue;
    }
    const data = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (data.length !== size) throw new BadPack(`an entry at offset ${at} inflates to ${data.length} bytes, not ${size}`);
    const trailer = Buffer.allocUnsafe(4);
    trailer.writeUInt32BE(adler32(data));
    const region = pack.subarray(at + 2, Math.min(limit, stop + 4));
    const first = region.indexOf(trailer);
    if (first >= 0 && region.indexOf(trailer, first + 1) < 0) return { data, end: at + 2 + first + 4 };
    return inflateCounted(pack, at, stop, size);
  }
}

/** Node's zlib over [at, stop): slower, but it reports how many bytes the stream used. */
function inflateCounted(pack: Buffer, at: number, stop: number, size: number): { data: Buffer; end: number } {
  try {
    const r = inflateSync(pack.subarray(at, stop), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    if (r.buffer.length === size) return { data: r.buffer, end: at + r.engine.bytesWritten };
  } catch {
    // reported below
  }
  throw new BadPack(`an entry at offset ${at} is not valid zlib data`);
}

/** Walk the pack: every entry's header, extent and (for deltas) instructions; whole objects are named on the way. */
function readEntries(pack: Buffer, signal: AbortSignal, keep: Map<string, GitObject> | null): Entry[] {
  if (pack.length < 32 || pack.toString("latin1", 0, 4) !== "PACK") throw new BadPack("it does not start with PACK");
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new BadPack(`version ${version} is not supported`);
  const count = pack.readUInt32BE(8);
  const limit = pack.length - 20;
  const sum = new Bun.CryptoHasher("sha1");
  sum.update(pack.subarray(0, limit));
  if (!sum.digest().equals(pack.subarray(limit))) throw new BadPack("its checksum does not match");
  const entries: Entry[] = [];
  let at = 12;
  for (let n = 0; n < count; n++) {
    if (n % 256 === 0) throwIfAborted(signal);
    if (at >= limit) throw new BadPack(`it ends after ${n} of ${count} objects`);
    const offset = at;
    const { kind, size, baseOffset, baseOid, dataAt } = readEntryHeader(pack, offset);
    if (kind === OFS_DELTA && (baseOffset < 12 || baseOffset >= offset)) throw new BadPack(`a delta at offset ${offset} points outside the pack`);
    if (!TYPES[kind] && kind !== OFS_DELTA && kind !== REF_DELTA) throw new BadPack(`an entry at offset ${offset} has unknown type ${kind}`);
    if (dataAt >= limit) throw new BadPack(`it ends inside the entry at offset ${offset}`);
    at = dataAt;
    const { data, end } = inflateAt(pack, at, size, limit);
    const type = TYPES[kind] ?? null;
    const isDelta = type === null;
    const oid = isDelta ? null : objectId(type, data);
    if (!isDelta && keep && oid) keep.set(oid, { type, data });
    entries.push({ offset, end, kind, dataAt: at, delta: isDelta ? data : null, baseOffset, baseOid, oid, type });
    at = end;
  }
  if (at !== limit) throw new BadPack("it has bytes after its last object");
  return entries;
}

/**
 * Name every delta by applying it to its base (in the pack, or already in
 * `store`); returns the bases taken from `store` (a thin pack's).
 */
function resolveDeltas(pack: Buffer, entries: Entry[], store: ObjectStore, keep: Map<string, GitObject> | null, signal: AbortSignal): Map<string, GitObject> {
  const external = new Map<string, GitObject>();
  const byOffset = new Map<number, number[]>();
  const byOid = new Map<string, number[]>();
  for (const [i, e] of entries.entries()) {
    if (e.kind === OFS_DELTA) byOffset.set(e.baseOffset, [...(byOffset.get(e.baseOffset) ?? []), i]);
    else if (e.kind === REF_DELTA && e.baseOid) byOid.set(e.baseOid, [...(byOid.get(e.baseOid) ?? []), i]);
  }
  if (byOffset.size === 0 && byOid.size === 0) return external;
  let resolved = 0;
  // Depth-first from one base: its children, theirs, …; only one chain's data is held at a time.
  const walk = (offset: number, oid: string, base: GitObject) => {
    const stack: Array<{ offset: number; oid: string; obj: GitObject }> = [{ offset, oid, obj: base }];
    while (stack.length > 0) {
      const top = stack.pop() as { offset: number; oid: string; obj: GitObject };
      const kids = [...(byOffset.get(top.offset) ?? []), ...(byOid.get(top.oid) ?? [])];
      byOid.delete(top.oid); // a ref delta's base is resolved once even if it appears twice
      for (const k of kids) {
        const e = entries[k] as Entry;
        if (e.oid !== null) continue;
        if (++resolved % 256 === 0) throwIfAborted(signal);
        const data = applyDelta(top.obj.data, e.delta as Buffer);
        if (!data) throw new BadPack(`the delta at offset ${e.offset} does not apply to its base`);
        e.type = top.obj.type;
        e.oid = objectId(e.type, data);
        e.delta = null;
        const obj = { type: e.type, data };
        keep?.set(e.oid, obj);
        stack.push({ offset: e.offset, oid: e.oid, obj });
      }
    }
  };
  for (const e of entries) {
    const type = TYPES[e.kind]; // whole objects only: resolved deltas are walked from theirs
    if (!type || e.oid === null || (!byOffset.has(e.offset) && !byOid.has(e.oid))) continue;
    const data = keep?.get(e.oid)?.data ?? inflateAt(pack, e.dataAt, readEntryHeader(pack, e.offset).size, pack.length - 20).data;
    walk(e.offset, e.oid, { type, data });
  }
  // Ref deltas on objects we already have (a thin pack).
  for (const oid of [...byOid.keys()]) {
    const base = store.read(oid);
    if (!base) continue;
    external.set(oid, base);
    walk(-1, oid, base);
  }
  const left = entries.find((e) => e.oid === null);
  if (left) throw new BadPack(`the delta at offset ${left.offset} has a base neither in the pack nor here`);
  return external;
}

/**
 * A pack kept on disk must hold every delta base itself: append the bases a
 * thin pack borrowed from our store as whole objects (git's --fix-thin), then
 * fix the object count and checksum.
 */
function completeThinPack(pack: Buffer, entries: Entry[], external: Map<string, GitObject>): Buffer {
  const kinds: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };
  const parts: Buffer[] = [pack.subarray(0, pack.length - 20)];
  let at = pack.length - 20;
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
    entries.push({ offset: at, end: at + body.length, kind: kinds[obj.type], dataAt: at + head.length, delta: null, baseOffset: -1, baseOid: null, oid, type: obj.type });
    parts.push(body);
    at += body.length;
  }
  const out = Buffer.concat([...parts, Buffer.alloc(20)]);
  out.writeUInt32BE(entries.length, 8);
  const h = new Bun.CryptoHasher("sha1");
  h.update(out.subarray(0, out.length - 20));
  h.digest().copy(out, out.length - 20);
  return out;
}

/** The .idx (version 2) of a pack whose entries are all named. */
function buildIndex(pack: Buffer, entries: Entry[]): Buffer {
  const sorted = entries.map((e) => ({ oid: Buffer.from(e.oid as string, "hex"), e })).sort((a, b) => a.oid.compare(b.oid));
  const n = sorted.length;
  const large = sorted.filter((s) => s.e.offset >= 0x80000000).length;
  const out = Buffer.alloc(8 + 1024 + n * 28 + large * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  for (const s of sorted) fanout[s.oid[0] as number] = (fanout[s.oid[0] as number] as number) + 1;
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
  for (const [i, s] of sorted.entries()) {
    s.oid.copy(out, names + i * 20);
    out.writeUInt32BE(Bun.hash.crc32(pack.subarray(s.e.offset, s.e.end)) >>> 0, crcs + i * 4);
    if (s.e.offset < 0x80000000) out.writeUInt32BE(s.e.offset, offsets + i * 4);
    else {
      out.writeUInt32BE((0x80000000 | nextLarge) >>> 0, offsets + i * 4);
      out.writeBigUInt64BE(BigInt(s.e.offset), larges + nextLarge * 8);
      nextLarge++;
    }
  }
  const trailer = larges + large * 8;
  pack.copy(out, trailer, pack.length - 20);
  const h = new Bun.CryptoHasher("sha1");
  h.update(out.subarray(0, trailer + 20));
  h.digest().copy(out, trailer + 20);
  return out;
}

/**
 * Add the objects of a received pack to `gitdir`'s store: kept as a pack for
 * a first fetch (a clone, as git does) or when large, else exploded into loose
 * objects. Throws an Error naming what is wrong with a corrupt or incomplete
 * pack (nothing is written then).
 */
export async function storePack(gitdir: string, received: Buffer, opts: { store: ObjectStore; keepPack: boolean; signal: AbortSignal }): Promise<{ objects: number }> {
  const { store, signal } = opts;
  let pack = received;
  try {
    const count = pack.length >= 12 ? pack.readUInt32BE(8) : 0;
    const small = !opts.keepPack && count < UNPACK_LIMIT;
    const keep = small ? new Map<string, GitObject>() : null;
    const entries = readEntries(pack, signal, keep);
    const external = resolveDeltas(pack, entries, store, keep, signal);
    throwIfAborted(signal);
    if (keep) {
      writeLooseObjects(gitdir, [...keep].map(([oid, o]) => ({ oid, ...o })));
      return { objects: entries.length };
    }
    if (external.size > 0) pack = completeThinPack(pack, entries, external);
    const packDir = join(gitdir, "objects", "pack");
    const name = `pack-${pack.toString("hex", pack.length - 20)}`;
    if (!existsSync(join(packDir, `${name}.idx`))) {
      const idx = buildIndex(pack, entries);
      await atomicWriteFilesAsync([
        [join(packDir, `${name}.pack`), pack],
        [join(packDir, `${name}.idx`), idx],
      ]);
    }
    return { objects: entries.length };
  } catch (err) {
    if (err instanceof BadPack) throw new Error(`the received pack is corrupt: ${err.message}`);
    throw err;
  }
}
