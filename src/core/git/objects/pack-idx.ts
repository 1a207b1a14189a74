// What a stored pack gets written with: the `.idx` (version 2) byte for
// byte as `git index-pack` writes it, and the bases a thin pack borrowed
// appended to it (git's --fix-thin), so the kept pack stands alone.
import { readSync, writeSync } from "node:fs";
import { deflateSync } from "node:zlib";
import type { Entries } from "./pack-entries.ts";
import type { GitObject, ObjectType } from "./object-store.ts";

/**
 * A pack kept on disk must hold every delta base itself: append the bases a
 * thin pack borrowed from our store as whole objects (git's --fix-thin), then
 * fix the object count and checksum. Returns the new checksum.
 */
export function completeThinPack(fd: number, e: Entries, end: number, external: Map<string, GitObject>): { trailer: Buffer; end: number } {
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

/** The entries of a pack whose entries are all named, sorted by name. */
export function nameOrder(e: Entries): Int32Array {
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
  // Each bucket (a handful of names) by insertion sort on the remaining 18 bytes, compared in place.
  const less = (a: number, b: number): boolean => {
    for (let k = 2; k < 20; k++) {
      const x = oids[a * 20 + k] as number;
      const y = oids[b * 20 + k] as number;
      if (x !== y) return x < y;
    }
    return false;
  };
  for (let k = 0; k < 65536; k++) {
    const from = starts[k] as number;
    const to = starts[k + 1] as number;
    if (to - from > 64) {
      const byName = (a: number, b: number) => oids.compare(oids, b * 20, b * 20 + 20, a * 20, a * 20 + 20);
      order.subarray(from, to).sort(byName);
      continue;
    }
    for (let i = from + 1; i < to; i++) {
      const v = order[i] as number;
      let j = i - 1;
      while (j >= from && less(v, order[j] as number)) {
        order[j + 1] = order[j] as number;
        j--;
      }
      order[j + 1] = v;
    }
  }
  return order;
}

/** The .idx (version 2) of a pack whose entries are all named, given their order by name (nameOrder). */
export function buildIndex(e: Entries, trailer: Buffer, order: Int32Array): Buffer {
  const n = e.n;
  const oids = Buffer.from(e.oid.buffer, e.oid.byteOffset, n * 20);
  let large = 0;
  for (let i = 0; i < n; i++) if ((e.offset[i] as number) >= 0x80000000) large++;
  // Its own memory (never a slice of Buffer's shared pool), so that the name table is 4-byte aligned.
  const out = Buffer.from(new ArrayBuffer(8 + 1024 + n * 28 + large * 8 + 40));
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
  // Names copied as 32-bit words (both tables are 4-byte aligned): no native call per entry.
  const src32 = new Uint32Array(e.oid.buffer, e.oid.byteOffset, n * 5);
  const names32 = new Uint32Array(out.buffer, out.byteOffset + names, n * 5);
  for (let r = 0; r < n; r++) {
    const i = order[r] as number;
    for (let k = 0; k < 5; k++) names32[r * 5 + k] = src32[i * 5 + k] as number;
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
