// Writing a pack from whole objects: git's pack format (version 2) with every
// entry stored undeltified, compressed fast. Used to move many objects from a
// local repository in one file, which storePack then indexes and verifies
// like any received pack.
import { deflate, type GitObject, type ObjectType } from "./object-store.ts";

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
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(objects.length, 8);
  const parts: Buffer[] = [head];
  for (const o of objects) parts.push(entryHeader(o.type, o.data.length), deflate(o.data, 1));
  const body = Buffer.concat(parts);
  return Buffer.concat([body, new Bun.CryptoHasher("sha1").update(body).digest()]);
}
