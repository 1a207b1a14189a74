// Writing a pack from whole objects: git's pack format (version 2) with every
// entry stored undeltified, compressed fast. Used to move many objects from a
// local repository in one file, which storePackStream then indexes and
// verifies like any received pack. The pack is produced as a stream, one
// object read at a time, so memory is bounded by the largest object and a
// chunk, never by the pack.
import { deflate, type GitObject, type ObjectType } from "./object-store.ts";
import type { ByteSource } from "./pack-receive.ts";
import { Collector, PER_OBJECT_GARBAGE } from "./garbage.ts";

const KIND: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3, tag: 4 };

/** An entry's header: type and inflated size, 4 bits then 7 per byte, low bits first. */
function entryHeader(type: ObjectType, size: number): Buffer {
  const bytes: number[] = [];
  let c = (KIND[type] << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(c | 0x80);
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(c);
  return Buffer.from(bytes);
}

/** A complete pack (header, entries, SHA-1 trailer) holding `objects`. */
export function buildPack(objects: GitObject[]): Buffer {
  let i = 0;
  const source = packStream(objects.length, () => objects[i++] ?? null);
  const parts: Uint8Array[] = [];
  for (let c = source.next(); c !== null; c = source.next()) parts.push(c);
  return Buffer.concat(parts);
}

/** Bytes gathered before a chunk is handed on: large writes, small memory. */
const CHUNK = 1 << 20;

/**
 * A pack of `count` objects, produced as it is read: `nextObject` is called
 * once per entry, when the reader needs more bytes. It must give exactly
 * `count` objects (a shortfall throws: the pack would be cut off).
 */
export function packStream(count: number, nextObject: () => GitObject | null): ByteSource & { next(): Uint8Array | null } {
  const sum = new Bun.CryptoHasher("sha1");
  let written = 0;
  let done = false;
  let started = false;
  const gc = new Collector();
  const next = (): Uint8Array | null => {
    if (done) return null;
    const parts: Buffer[] = [];
    let size = 0;
    const put = (b: Buffer) => {
      sum.update(b);
      parts.push(b);
      size += b.length;
    };
    if (!started) {
      started = true;
      const head = Buffer.alloc(12);
      head.write("PACK", 0, "latin1");
      head.writeUInt32BE(2, 4);
      head.writeUInt32BE(count, 8);
      put(head);
    }
    while (size < CHUNK && written < count) {
      const o = nextObject();
      if (!o) throw new Error(`the pack being written ran out of objects after ${written} of ${count}`);
      written++;
      put(entryHeader(o.type, o.data.length));
      const z = deflate(o.data, 1);
      put(z);
      // The object read, its compressed copy and the chunk they join: dead once handed on.
      gc.add(2 * (o.data.length + z.length) + PER_OBJECT_GARBAGE);
    }
    if (written === count) {
      parts.push(sum.digest() as Buffer);
      done = true;
    }
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  };
  return { next, read: async () => next() };
}
