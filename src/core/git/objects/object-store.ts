// Reading git objects natively: loose objects and packs (.idx v1/v2, offset
// and ref deltas), inflated with Bun's zlib. isomorphic-git does the same in
// JavaScript (pako) and costs tens of milliseconds per repository; `status`
// and checkouts read HEAD's trees and the changed blobs through this instead.
// Anything unexpected (a missing or corrupt object) answers null, and callers
// fall back to isomorphic-git, which reports it properly.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alternateDirs, objectsDir } from "../layout/layout.ts";
import { isVanished, packIndexFiles } from "./objects.ts";

export type ObjectType = "commit" | "tree" | "blob" | "tag";
export interface GitObject {
  type: ObjectType;
  data: Buffer;
}
export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

export const TYPES: Record<number, ObjectType> = { 1: "commit", 2: "tree", 3: "blob", 4: "tag" };
export const OFS_DELTA = 6;
export const REF_DELTA = 7;

export interface EntryHeader {
  /** 1–4 for whole objects (TYPES), OFS_DELTA or REF_DELTA. */
  kind: number;
  /** Inflated size of the entry's data (for deltas: of the delta instructions). */
  size: number;
  /** OFS_DELTA: the base entry's offset; else -1. */
  baseOffset: number;
  /** REF_DELTA: the base object's id; else null. */
  baseOid: string | null;
  /** Where the entry's zlib data starts. */
  dataAt: number;
}

/** The header of the pack entry at `offset`: type and size, then for deltas the base reference. */
export function readEntryHeader(pack: Uint8Array, offset: number): EntryHeader {
  let at = offset;
  let c = pack[at++] as number;
  const kind = (c >> 4) & 7;
  let size = c & 0x0f;
  for (let shift = 4; c & 0x80; shift += 7) {
    c = pack[at++] as number;
    size += (c & 0x7f) * 2 ** shift;
  }
  let baseOffset = -1;
  let baseOid: string | null = null;
  if (kind === OFS_DELTA) {
    c = pack[at++] as number;
    let rel = c & 0x7f;
    while (c & 0x80) {
      c = pack[at++] as number;
      rel = (rel + 1) * 128 + (c & 0x7f);
    }
    baseOffset = offset - rel;
  } else if (kind === REF_DELTA) {
    baseOid = Buffer.from(pack.subarray(at, at + 20)).toString("hex"); // short if the pack is cut off: callers check dataAt
    at += 20;
  }
  return { kind, size, baseOffset, baseOid, dataAt: at };
}

/** zlib-wrapped data: skip the 2-byte header and inflate the raw stream (trailing bytes are ignored). */
function inflate(buf: Uint8Array): Buffer {
  const out = Bun.inflateSync(buf.subarray(2) as Uint8Array<ArrayBuffer>);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength); // a view, not a copy
}

export function adler32(buf: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < buf.length; ) {
    const end = Math.min(buf.length, i + 5552); // the largest run before the sums must be reduced
    for (; i < end; i++) {
      a += buf[i] as number;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** zlib-wrap Bun's raw DEFLATE, as git stores loose objects and pack entries. */
export function deflate(buf: Uint8Array, level: 1 | 6 = 6): Buffer {
  const raw = Bun.deflateSync(buf as Uint8Array<ArrayBuffer>, { level });
  const out = Buffer.allocUnsafe(raw.length + 6);
  out[0] = 0x78;
  out[1] = 0x01;
  out.set(raw, 2);
  out.writeUInt32BE(adler32(buf), raw.length + 2);
  return out;
}

/**
 * Store objects as loose files (temp + rename, so a reader never sees half an
 * object); ones already present are skipped. For small fetches: no pack to
 * build or index.
 */
export function writeLooseObjects(gitdir: string, objects: Array<{ oid: string } & GitObject>): void {
  const into = objectsDir(gitdir);
  for (const o of objects) {
    const dir = join(into, o.oid.slice(0, 2));
    const path = join(dir, o.oid.slice(2));
    if (existsSync(path)) continue;
    mkdirSync(dir, { recursive: true });
    const tmp = `${path}.grex-tmp-${process.pid}`;
    try {
      writeFileSync(tmp, deflate(Buffer.concat([Buffer.from(`${o.type} ${o.data.length}\0`, "latin1"), o.data])));
      renameSync(tmp, path);
    } catch (err) {
      rmSync(tmp, { force: true }); // a full disk: no temp object left behind
      throw err;
    }
  }
}

interface Pack {
  path: string;
  idx: Buffer;
  count: number;
  v2: boolean;
  /** The pack file, mapped on first use (packs are immutable once named). */
  bytes: Buffer | null;
  size: number;
  /** This pack's place in the store's list (part of the delta-base cache's keys). */
  id: number;
}

function openIdx(packDir: string, name: string): Pack | null {
  const path = join(packDir, name.replace(/\.idx$/, ".pack"));
  let idx: Buffer;
  let size: number;
  try {
    idx = readFileSync(join(packDir, name));
    size = statSync(path).size;
  } catch {
    return null;
  }
  const v2 = idx.length >= 8 && idx.readUInt32BE(0) === 0xff744f63 && idx.readUInt32BE(4) === 2;
  const fanoutAt = v2 ? 8 : 0;
  if (idx.length < fanoutAt + 1024) return null;
  return { path, idx, count: idx.readUInt32BE(fanoutAt + 255 * 4), v2, bytes: null, size, id: 0 };
}

/** Offset of `oid` in the pack, or -1. */
function findOffset(p: Pack, oid: Buffer): number {
  const fanoutAt = p.v2 ? 8 : 0;
  const first = oid[0] as number;
  let lo = first === 0 ? 0 : p.idx.readUInt32BE(fanoutAt + (first - 1) * 4);
  let hi = p.idx.readUInt32BE(fanoutAt + first * 4);
  const base = p.v2 ? fanoutAt + 1024 : 1024 + 4;
  const stride = p.v2 ? 20 : 24;
  // The first four bytes as a number decide nearly every step; the full compare (a native call) only on a tie.
  const head = oid.readUInt32BE(0);
  const idx = p.idx;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = base + mid * stride;
    const there = ((idx[at] as number) * 0x1000000) + (((idx[at + 1] as number) << 16) | ((idx[at + 2] as number) << 8) | (idx[at + 3] as number));
    const c = head !== there ? (there > head ? 1 : -1) : idx.compare(oid, 0, 20, at, at + 20); // the sign of (entry - oid)
    if (c === 0) {
      if (!p.v2) return p.idx.readUInt32BE(at - 4);
      const offAt = fanoutAt + 1024 + p.count * 24 + mid * 4;
      const off = p.idx.readUInt32BE(offAt);
      if (!(off & 0x80000000)) return off;
      const large = fanoutAt + 1024 + p.count * 28 + (off & 0x7fffffff) * 8;
      return Number(p.idx.readBigUInt64BE(large));
    }
    if (c > 0) hi = mid;
    else lo = mid + 1;
  }
  return -1;
}

function packBytes(p: Pack): Buffer {
  if (p.bytes === null) {
    const m = Bun.mmap(p.path, { shared: false });
    p.bytes = Buffer.from(m.buffer, m.byteOffset, m.byteLength);
  }
  return p.bytes;
}

/** Apply a git delta to `base`; the result is written into `into` when it is given and large enough. */
export function applyDelta(base: Buffer, delta: Buffer, into?: Buffer): Buffer | null {
  let i = 0;
  const varint = () => {
    let v = 0;
    let shift = 0;
    let c: number;
    do {
      c = delta[i++] as number;
      v += (c & 0x7f) * 2 ** shift;
      shift += 7;
    } while (c & 0x80 && i < delta.length);
    return v;
  };
  if (varint() !== base.length) return null;
  // Its own memory: Buffer's shared pool costs more per call than it saves for the many trees a pack's deltas build.
  const size = varint();
  const out = into !== undefined && into.length >= size ? into.subarray(0, size) : Buffer.allocUnsafeSlow(size);
  let at = 0;
  while (i < delta.length) {
    const cmd = delta[i++] as number;
    if (cmd & 0x80) {
      let off = 0;
      let size = 0;
      for (let b = 0; b < 4; b++) if (cmd & (1 << b)) off += (delta[i++] as number) * 2 ** (8 * b);
      for (let b = 0; b < 3; b++) if (cmd & (0x10 << b)) size += (delta[i++] as number) * 2 ** (8 * b);
      if (size === 0) size = 0x10000;
      if (off + size > base.length || at + size > out.length) return null;
      base.copy(out, at, off, off + size);
      at += size;
    } else if (cmd !== 0) {
      if (at + cmd > out.length || i + cmd > delta.length) return null;
      delta.copy(out, at, i, i + cmd);
      at += cmd;
      i += cmd;
    } else return null;
  }
  return at === out.length ? out : null;
}

/** Bytes of delta bases an ObjectStore keeps (git's core.deltaBaseCacheLimit is 96 MiB). */
const BASE_BYTES = 48 * 1024 * 1024;

/** A raw commit's tree and parents, or null. */
export function parseCommit(data: Buffer): { tree: string; parents: string[] } | null {
  const headerEnd = data.indexOf("\n\n");
  const lines = data.toString("utf8", 0, headerEnd < 0 ? data.length : headerEnd).split("\n");
  const tree = lines[0]?.startsWith("tree ") ? lines[0].slice(5) : null;
  if (!tree) return null;
  return { tree, parents: lines.filter((l) => l.startsWith("parent ")).map((l) => l.slice(7)) };
}

export class ObjectStore {
  private readonly dirs: string[];
  private packs: Pack[] | null = null;
  private nextId = 0;
  /**
   * Delta bases by pack offset: trees and blobs are often deltas of their
   * neighbours, and a blob deep in a delta chain would otherwise re-inflate
   * the whole chain (a checkout reads thousands). Trees and commits are kept
   * (4,096 at most), and any object read as a base, within BASE_BYTES, oldest
   * dropped first, like git's delta base cache.
   */
  private readonly bases = new Map<number, GitObject>();
  private baseBytes = 0;

  constructor(gitdir: string) {
    const objects = objectsDir(gitdir);
    this.dirs = [objects, ...alternateDirs(objects)]; // alternates of alternates too, as git reads them (layout.ts)
  }

  /** Release the pack files' descriptors. */
  close(): void {
    this.packs = null; // the mappings go with the garbage collector

    this.bases.clear();
    this.baseBytes = 0;
  }

  read(oid: string): GitObject | null {
    const bin = Buffer.from(oid, "hex");
    try {
      // Packs first: an in-memory search; a loose miss would cost a failed open.
      const got = this.readPacked(bin) ?? this.readLoose(oid);
      // A miss: a repack since the packs were listed may have moved the object into a new pack.
      if (got !== null || !this.rescan()) return got;
    } catch (err) {
      if (!isVanished(err)) return null; // corrupt or unexpected: let the caller fall back
      this.rescan(); // a pack or loose file deleted under us (git gc, repack -a -d): its objects are in a new pack
    }
    try {
      return this.readPacked(bin) ?? this.readLoose(oid);
    } catch {
      return null;
    }
  }

  /**
   * List the pack directories again, as git's reprepare_packed_git does when
   * a lookup misses: packs still there are kept (their indexes and mappings),
   * new ones opened, deleted ones dropped. True when the list changed.
   */
  private rescan(): boolean {
    if (this.packs === null) return false; // never listed: the next lookup lists them
    const old = new Map(this.packs.map((p) => [p.path, p]));
    const fresh: Pack[] = [];
    let changed = false;
    for (const dir of this.dirs) {
      for (const { packDir, name } of packIndexFiles(dir)) {
        const kept = old.get(join(packDir, name.replace(/\.idx$/, ".pack")));
        if (kept) {
          old.delete(kept.path);
          fresh.push(kept);
          continue;
        }
        const p = openIdx(packDir, name);
        if (!p) continue;
        p.id = this.nextId++; // never a dropped pack's id: the delta-base cache is keyed by it
        fresh.push(p);
        changed = true;
      }
    }
    this.packs = fresh;
    return changed || old.size > 0;
  }

  readTree(oid: string): TreeEntry[] | null {
    const o = this.read(oid);
    if (o?.type !== "tree") return null;
    const out: TreeEntry[] = [];
    const d = o.data;
    let i = 0;
    while (i < d.length) {
      const sp = d.indexOf(0x20, i);
      const nul = d.indexOf(0, sp + 1);
      if (sp < 0 || nul < 0 || nul + 21 > d.length) return null;
      const mode = d.toString("latin1", i, sp);
      out.push({ mode: mode.length === 5 ? `0${mode}` : mode, name: d.toString("utf8", sp + 1, nul), oid: d.toString("hex", nul + 1, nul + 21) });
      i = nul + 21;
    }
    return out;
  }

  /** A commit's tree and parents, or null. */
  readCommit(oid: string): { tree: string; parents: string[] } | null {
    const o = this.read(oid);
    return o?.type === "commit" ? parseCommit(o.data) : null;
  }

  private readLoose(oid: string): GitObject | null {
    for (const dir of this.dirs) {
      const path = join(dir, oid.slice(0, 2), oid.slice(2));
      if (!existsSync(path)) continue;
      const raw = readFileSync(path);
      const body = inflate(raw);
      const nul = body.indexOf(0);
      const [type, size] = body.toString("latin1", 0, nul).split(" ");
      if (!type || !["commit", "tree", "blob", "tag"].includes(type) || Number(size) !== body.length - nul - 1) return null;
      return { type: type as ObjectType, data: body.subarray(nul + 1) };
    }
    return null;
  }

  private loadPacks(): Pack[] {
    if (this.packs) return this.packs;
    this.packs = [];
    for (const dir of this.dirs) {
      for (const { packDir, name } of packIndexFiles(dir)) {
        const p = openIdx(packDir, name);
        if (p) {
          p.id = this.nextId++;
          this.packs.push(p);
        }
      }
    }
    return this.packs;
  }

  private readPacked(oid: Buffer): GitObject | null {
    for (const p of this.loadPacks()) {
      const off = findOffset(p, oid);
      if (off >= 0) return this.readEntry(p, off, 0);
    }
    return null;
  }

  private readEntry(p: Pack, offset: number, depth: number): GitObject | null {
    if (depth > 64) return null;
    // A number, not a string: building and hashing a string key per read was a large share of a checkout.
    const key = p.id * 2 ** 40 + offset;
    const cached = this.bases.get(key);
    if (cached) return cached;
    const bytes = packBytes(p);
    const h = readEntryHeader(bytes, offset);
    const { kind: type, size } = h;
    const i = h.dataAt - offset;
    let base: GitObject | null = null;
    if (type === OFS_DELTA) base = this.readEntry(p, h.baseOffset, depth + 1);
    else if (type === REF_DELTA) base = this.readPacked(Buffer.from(h.baseOid as string, "hex"));
    else if (!TYPES[type]) return null;
    if ((type === OFS_DELTA || type === REF_DELTA) && !base) return null;
    // Inflate a window a little larger than the data (compression rarely
    // grows it); the whole rest of the pack would be inflated otherwise.
    let data: Buffer | null = null;
    for (let want = size + (size >> 3) + 64; data === null; want *= 4) {
      const end = offset + i + want;
      try {
        data = inflate(bytes.subarray(offset + i, end));
        if (data.length !== size && end < bytes.length) data = null;
      } catch (err) {
        if (end >= bytes.length) throw err;
      }
    }
    if (data.length !== size) return null;
    let obj: GitObject;
    if (base) {
      const out = applyDelta(base.data, data);
      if (!out) return null;
      obj = { type: base.type, data: out };
    } else obj = { type: TYPES[type] as ObjectType, data };
    if (obj.type !== "blob" ? this.bases.size < 4096 : depth > 0 && obj.data.length <= BASE_BYTES / 8) {
      this.bases.set(key, obj);
      this.baseBytes += obj.data.length;
      for (const [k, o] of this.bases) {
        if (this.baseBytes <= BASE_BYTES) break;
        this.bases.delete(k);
        this.baseBytes -= o.data.length;
      }
    }
    return obj;
  }
}
