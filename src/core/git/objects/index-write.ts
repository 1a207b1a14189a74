// Writing the git index (index-file.ts reads it): entries sorted as git
// sorts them, in one buffer sized first (no buffer per entry: a large index
// has tens of thousands), v2, v3 or v4, with the cache-tree extension.
import { CANONICAL_INDEX_MODES } from "./path-verify.ts";
export interface IndexEntry {
  path: string;
  mode: number;
  oid: string;
  size: number;
  ctimeSeconds: number;
  ctimeNanoseconds: number;
  mtimeSeconds: number;
  mtimeNanoseconds: number;
  dev: number;
  ino: number;
  uid: number;
  gid: number;
  /** Merge stage: 0 normally, 1-3 during a conflict. */
  stage: number;
  /** ASSUME_VALID | SKIP_WORKTREE | INTENT_TO_ADD; absent means none. */
  flags?: number;
  /** How many bytes the path is in UTF-8, when the entry has them at hand (a view into an index file): then written without decoding. */
  pathByteLength?(): number;
  /** Copy the path's UTF-8 bytes to `to` at `at` (with pathByteLength). */
  copyPath?(to: Uint8Array, at: number): void;
  /** Copy the object id's 20 bytes to `to` at `at` (with pathByteLength). */
  copyOid?(to: Uint8Array, at: number): void;
}

/** `git update-index --assume-unchanged`: git trusts the entry without looking at the file. */
export const ASSUME_VALID = 1;
/** Sparse checkout's `--skip-worktree`: the file is not expected in the work tree. */
export const SKIP_WORKTREE = 2;
/** `git add -N`: an entry for a file the user means to add (its content is not staged). */
export const INTENT_TO_ADD = 4;

/** SHA-1 of `data` (an index's checksum, a tree object's id): Bun's native hasher, as node:crypto pulls in Node's stream machinery (~3 ms at startup). */
export const sha1 = (data: Uint8Array): Buffer => new Bun.CryptoHasher("sha1").update(data).digest();

export interface CacheTreeNode {
  name: string;
  oid: string;
  entries: number;
  children: CacheTreeNode[];
}

function cacheTreeBytes(node: CacheTreeNode, out: Buffer[]): void {
  out.push(Buffer.from(`${node.name}\0${node.entries} ${node.children.length}\n`, "utf8"), Buffer.from(node.oid, "hex"));
  for (const c of node.children) cacheTreeBytes(c, out);
}

/** git's varint for v4's path compression. */
function varint(v: number): number[] {
  const out = [v & 127];
  for (let n = Math.floor(v / 128); n > 0; n = Math.floor(n / 128)) {
    n -= 1;
    out.unshift(128 | (n & 127));
  }
  return out;
}

/**
 * Serialise entries (any order; they are sorted here as git requires) into an
 * index file, with a cache-tree extension when the caller knows the entries
 * are exactly that tree (a checkout of it). The version is 2, or 3 when an
 * entry carries skip-worktree or intent-to-add (as git chooses), or 4 when
 * `version` asks for it.
 */
export function serializeIndex(entries: IndexEntry[], cacheTree?: CacheTreeNode, version?: number): Buffer {
  // Never write an index git would abort on ("unsupported ce_mode"): the tree check refuses such entries first.
  const bad = entries.find((e) => !CANONICAL_INDEX_MODES.has(e.mode));
  if (bad) throw new Error(`index entry ${JSON.stringify(bad.path)} has mode ${bad.mode.toString(8)}, which git cannot hold`);
  // Every path's UTF-8 bytes in one buffer (a Buffer per entry cost a few hundred bytes each on a large index).
  let nameBytes = 0;
  for (const e of entries) nameBytes += e.pathByteLength ? e.pathByteLength() : Buffer.byteLength(e.path, "utf8");
  const names = Buffer.allocUnsafe(nameBytes);
  const start = new Uint32Array(entries.length + 1);
  for (let i = 0, at = 0; i < entries.length; i++) {
    const e = entries[i] as IndexEntry;
    if (e.pathByteLength && e.copyPath) {
      e.copyPath(names, at);
      at += e.pathByteLength();
    } else at += names.write(e.path, at, "utf8");
    start[i + 1] = at;
  }
  const order = Array.from({ length: entries.length }, (_, i) => i);
  const from = (i: number) => start[i] as number;
  const to = (i: number) => start[i + 1] as number;
  order.sort((a, b) => names.compare(names, from(b), to(b), from(a), to(a)) || (entries[a] as IndexEntry).stage - (entries[b] as IndexEntry).stage);
  const extended = (e: IndexEntry) => ((e.flags ?? 0) & (SKIP_WORKTREE | INTENT_TO_ADD)) !== 0;
  const v = version === 4 ? 4 : entries.some((e) => extended(e)) ? 3 : 2;
  // v4 shares each path's prefix with the one before: the lengths are worked out in the same pass as the writes.
  const sizes = new Uint32Array(entries.length);
  const common = new Uint32Array(entries.length);
  let total = 12;
  for (let k = 0; k < order.length; k++) {
    const i = order[k] as number;
    const len = to(i) - from(i);
    const fixed = v >= 3 && extended(entries[i] as IndexEntry) ? 64 : 62;
    if (v === 4) {
      let c = 0;
      if (k > 0) {
        const p = order[k - 1] as number;
        const plen = to(p) - from(p);
        while (c < plen && c < len && names[from(p) + c] === names[from(i) + c]) c++;
        common[k] = c;
        sizes[k] = fixed + varint(plen - c).length + (len - c) + 1;
      } else sizes[k] = fixed + varint(0).length + len + 1;
    } else sizes[k] = (fixed + len + 8) & ~7; // NUL-padded to a multiple of 8
    total += sizes[k] as number;
  }
  let tree: Buffer | null = null;
  if (cacheTree && cacheTree.entries === entries.length) {
    const ext: Buffer[] = [];
    cacheTreeBytes(cacheTree, ext);
    tree = Buffer.concat(ext);
    total += 8 + tree.length;
  }
  const out = Buffer.alloc(total + 20); // zero-filled: the NUL padding comes for free
  out.write("DIRC", 0, "latin1");
  out.writeUInt32BE(v, 4);
  out.writeUInt32BE(entries.length, 8);
  const u32 = (n: number) => n >>> 0;
  let at = 12;
  for (let k = 0; k < order.length; k++) {
    const i = order[k] as number;
    const e = entries[i] as IndexEntry;
    const len = to(i) - from(i);
    const ext = v >= 3 && extended(e);
    const fixed = ext ? 64 : 62;
    out.writeUInt32BE(u32(e.ctimeSeconds), at);
    out.writeUInt32BE(u32(e.ctimeNanoseconds), at + 4);
    out.writeUInt32BE(u32(e.mtimeSeconds), at + 8);
    out.writeUInt32BE(u32(e.mtimeNanoseconds), at + 12);
    out.writeUInt32BE(u32(e.dev), at + 16);
    out.writeUInt32BE(u32(e.ino), at + 20);
    out.writeUInt32BE(u32(e.mode), at + 24);
    out.writeUInt32BE(u32(e.uid), at + 28);
    out.writeUInt32BE(u32(e.gid), at + 32);
    out.writeUInt32BE(u32(e.size), at + 36);
    if (e.pathByteLength && e.copyOid) e.copyOid(out, at + 40);
    else out.write(e.oid, at + 40, "hex");
    const f = e.flags ?? 0;
    out.writeUInt16BE((f & ASSUME_VALID ? 0x8000 : 0) | (ext ? 0x4000 : 0) | ((e.stage & 0x3) << 12) | Math.min(len, 0xfff), at + 60);
    if (ext) out.writeUInt16BE((f & SKIP_WORKTREE ? 0x4000 : 0) | (f & INTENT_TO_ADD ? 0x2000 : 0), at + 62);
    if (v === 4) {
      const p = k > 0 ? (order[k - 1] as number) : -1;
      const c = k > 0 ? (common[k] as number) : 0;
      const prefix = varint(p < 0 ? 0 : to(p) - from(p) - c);
      out.set(prefix, at + fixed);
      names.copy(out, at + fixed + prefix.length, from(i) + c, to(i));
    } else names.copy(out, at + fixed, from(i), to(i));
    at += sizes[k] as number;
  }
  if (tree) {
    out.write("TREE", at, "latin1");
    out.writeUInt32BE(tree.length, at + 4);
    tree.copy(out, at + 8);
    at += 8 + tree.length;
  }
  sha1(out.subarray(0, at)).copy(out, at);
  return out;
}
