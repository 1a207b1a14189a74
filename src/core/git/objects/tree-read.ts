// Commits' trees flattened to path → "mode oid" (blobs, symlinks and gitlinks,
// as the index holds them): through the native object reader, falling back to
// isomorphic-git for anything it cannot read.
import * as fs from "node:fs";
import { loadGit } from "./iso.ts";
import type { CacheTreeNode } from "./index-file.ts";
import { ObjectStore } from "./object-store.ts";
import { entryProblem, foldedName } from "./path-verify.ts";
import { Collector, PER_OBJECT_GARBAGE } from "./garbage.ts";

/**
 * A blob's bytes for a checkout. The native reader (object-store.ts) reads
 * loose objects and packs; what it cannot decode — a delta chain deeper than
 * 64, a ref-delta whose base is a loose object, an entry it finds damaged —
 * and an object that is not there at all are asked of isomorphic-git, which
 * reads the first kinds and throws its NotFoundError for the last. This is
 * the checkout's one use of isomorphic-git for blobs.
 */
export async function readBlobBytes(store: ObjectStore, gitdir: string, oid: string, cache: object = {}): Promise<Uint8Array> {
  const o = store.read(oid);
  if (o?.type === "blob") return o.data;
  return (await (await loadGit()).readBlob({ fs, gitdir, oid, cache })).blob;
}

/** A commit's tree flattened to path → "mode oid" (blobs, symlinks and gitlinks, as the index holds them). */
export async function flatTree(gitdir: string, oid: string, store?: ObjectStore): Promise<Map<string, string>> {
  const own = store ?? new ObjectStore(gitdir);
  const native = flatTreeNative(own, oid);
  if (!store) own.close();
  if (native) return native;
  const git = await loadGit();
  const cache = {};
  const out = new Map<string, string>();
  const { commit } = await git.readCommit({ fs, gitdir, oid, cache });
  const walk = async (treeOid: string, prefix: string): Promise<void> => {
    const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
    for (const e of tree) {
      if (e.type === "tree") await walk(e.oid, `${prefix}${e.path}/`);
      else out.set(prefix + e.path, `${Number.parseInt(e.mode, 8)} ${e.oid}`);
    }
  };
  await walk(commit.tree, "");
  return out;
}

/**
 * Each entry of a raw tree: its mode's bytes [start, sp), its name's
 * [sp + 1, nul), its id at nul + 1. No object per entry: walking a large
 * tree this way leaves nothing behind but what the caller keeps. False when
 * the tree is malformed.
 */
function scanTree(d: Buffer, each: (start: number, sp: number, nul: number) => boolean): boolean {
  let i = 0;
  while (i < d.length) {
    const sp = d.indexOf(0x20, i);
    const nul = sp < 0 ? -1 : d.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0 || nul + 21 > d.length) return false;
    if (!each(i, sp, nul)) return false;
    i = nul + 21;
  }
  return true;
}

/** Whether the mode at [start, sp) is a tree's ("40000", or "040000" as some writers put it). */
const isTreeMode = (d: Buffer, start: number, sp: number): boolean => (sp - start === 5 && d[start] === 0x34 && d[start + 1] === 0x30) || (sp - start === 6 && d[start] === 0x30 && d[start + 1] === 0x34);

/** A raw tree's bytes, or null when it is not a readable tree. */
function treeBytes(store: ObjectStore, oid: string): Buffer | null {
  const o = store.read(oid);
  return o?.type === "tree" ? o.data : null;
}

/** The same through the native reader; null if any object is unreadable there. */
function flatTreeNative(store: ObjectStore, oid: string): Map<string, string> | null {
  const commit = store.readCommit(oid);
  if (!commit) return null;
  const out = new Map<string, string>();
  const walk = (treeOid: string, prefix: string): boolean => {
    const d = treeBytes(store, treeOid);
    if (!d) return false;
    return scanTree(d, (start, sp, nul) => {
      const name = d.toString("utf8", sp + 1, nul);
      const id = d.toString("hex", nul + 1, nul + 21);
      if (isTreeMode(d, start, sp)) return walk(id, `${prefix}${name}/`);
      out.set(prefix + name, `${Number.parseInt(d.toString("latin1", start, sp), 8)} ${id}`);
      return true;
    });
  };
  return walk(commit.tree, "") ? out : null;
}

/** The cache-tree of a commit (every directory's tree id and entry count), for an index that is exactly that commit; null if unreadable natively. */
export function cacheTreeOf(store: ObjectStore, commitOid: string): CacheTreeNode | null {
  const commit = store.readCommit(commitOid);
  if (!commit) return null;
  const gc = new Collector(); // each tree read leaves its inflated (and delta-applied) bytes behind
  const build = (name: string, oid: string): CacheTreeNode | null => {
    const d = treeBytes(store, oid);
    if (!d) return null;
    gc.add(PER_OBJECT_GARBAGE + 2 * d.length);
    const node: CacheTreeNode = { name, oid, entries: 0, children: [] };
    // Only subtrees are named; a file is counted without decoding anything.
    const ok = scanTree(d, (start, sp, nul) => {
      if (!isTreeMode(d, start, sp)) {
        node.entries++;
        return true;
      }
      const child = build(d.toString("utf8", sp + 1, nul), d.toString("hex", nul + 1, nul + 21));
      if (!child) return false;
      node.entries += child.entries;
      node.children.push(child);
      return true;
    });
    return ok ? node : null;
  };
  return build("", commit.tree);
}

/** A tree git would refuse to check out: which path, and why. */
export class UnsafeTreeError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`unsafe path ${JSON.stringify(path)} (${reason})`);
    this.name = "UnsafeTreeError";
  }
}

/** An object a commit needs is not in the repository (an interrupted or incomplete fetch). */
export class MissingObjectError extends Error {
  /** `role`: what the object is to the commit, e.g. "the tree of directory 'a' in commit 1234abcd5678". */
  constructor(
    readonly oid: string,
    readonly role: string = `object ${oid.slice(0, 12)}`,
  ) {
    super(`${role} is missing`);
    this.name = "MissingObjectError";
  }
}

const asBuffer = (d: Uint8Array): Buffer => (Buffer.isBuffer(d) ? d : Buffer.from(d.buffer, d.byteOffset, d.byteLength));

/** scanTree for a walk that awaits between entries. */
async function scanTreeAsync(d: Buffer, each: (start: number, sp: number, nul: number) => Promise<void>): Promise<boolean> {
  let i = 0;
  while (i < d.length) {
    const sp = d.indexOf(0x20, i);
    const nul = sp < 0 ? -1 : d.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0 || nul + 21 > d.length) return false;
    await each(i, sp, nul);
    i = nul + 21;
  }
  return true;
}

/** The mode at [start, sp) as six digits ("040000" for git's "40000"); the common ones without building a string. */
function modeString(d: Buffer, start: number, sp: number): string {
  const n = sp - start;
  if (n === 6 && d[start] === 0x31 && d[start + 1] === 0x30 && d[start + 2] === 0x30 && d[start + 3] === 0x36 && d[start + 4] === 0x34 && d[start + 5] === 0x34) return "100644";
  const m = d.toString("latin1", start, sp);
  return m.length === 5 ? `0${m}` : m;
}

/**
 * A commit's tree flattened like `flatTree`, refusing what git refuses to
 * check out: names and modes by git's verify_path rules (path-verify.ts), two
 * entries of one name in a tree, and a symbolic link whose name, as a
 * case-insensitive file system sees it, is also a directory or another file
 * of the tree (on macOS or Windows a write to one would go through the link).
 * Throws UnsafeTreeError or MissingObjectError.
 */
export async function verifiedFlatTree(gitdir: string, oid: string, store?: ObjectStore): Promise<Map<string, string>> {
  const own = store ?? new ObjectStore(gitdir);
  let iso: Awaited<ReturnType<typeof loadGit>> | null = null;
  const cache = {};
  const short = oid.slice(0, 12);
  const roleOf = (type: "commit" | "tree", prefix: string[]): string =>
    type === "commit" ? `commit ${short}` : prefix.length === 0 ? `the tree of commit ${short}` : `the tree of directory '${prefix.join("/")}' in commit ${short}`;
  const raw = async (want: string, type: "commit" | "tree", prefix: string[] = []): Promise<Uint8Array> => {
    const o = own.read(want);
    if (o) {
      if (o.type !== type) throw new UnsafeTreeError(want, `a ${o.type} where a ${type} belongs`);
      return o.data;
    }
    iso ??= await loadGit();
    try {
      const r = await iso.readObject({ fs, gitdir, oid: want, format: "content", cache });
      if (r.type !== type) throw new UnsafeTreeError(want, `a ${r.type} where a ${type} belongs`);
      return r.object as Uint8Array;
    } catch (err) {
      if (err instanceof UnsafeTreeError) throw err;
      throw new MissingObjectError(want, roleOf(type, prefix));
    }
  };
  try {
    const commit = Buffer.from(await raw(oid, "commit"));
    const m = /^tree ([0-9a-f]{40})$/m.exec(commit.toString("latin1", 0, Math.min(commit.length, 100)));
    if (!m) throw new UnsafeTreeError("", "a commit without a tree");
    let out = new Map<string, string>();
    let symlinks: string[] = [];
    // Each entry leaves its parsed fields and path parts behind: collected as they pile up, not after the walk's peak.
    const gc = new Collector();
    /** One entry of the tree `d` (at `prefix`, its names so far in `names`) checked and recorded; the id of a subtree to walk, else null. */
    const entry = (d: Buffer, start: number, sp: number, nul: number, prefix: string, names: Set<string>): { id: string; name: string } | null => {
      gc.add(PER_OBJECT_GARBAGE / 4);
      const name = d.toString("utf8", sp + 1, nul);
      const path = prefix + name;
      const mode = modeString(d, start, sp);
      const why = entryProblem(name, mode, prefix === "");
      if (why) throw new UnsafeTreeError(path, why);
      if (names.has(name)) throw new UnsafeTreeError(path, "two entries of the same name");
      names.add(name);
      const id = d.toString("hex", nul + 1, nul + 21);
      if (mode === "040000") return { id, name };
      out.set(path, `${Number.parseInt(mode, 8)} ${id}`);
      if (mode === "120000") symlinks.push(path);
      return null;
    };
    // Straight from the tree's bytes: no object per entry, and each name checked once (its directories were checked on the way in).
    // First without a pause: every tree in the open packs (the usual case); false when one is not, and the walk is made again below.
    const walkNow = (treeOid: string, prefix: string, dirs: string[]): boolean => {
      const o = own.read(treeOid);
      if (!o) return false;
      if (o.type !== "tree") throw new UnsafeTreeError(treeOid, `a ${o.type} where a tree belongs`);
      const d = asBuffer(o.data);
      const names = new Set<string>();
      let whole = true;
      const ok = scanTree(d, (start, sp, nul) => {
        const sub = entry(d, start, sp, nul, prefix, names);
        if (sub !== null && !walkNow(sub.id, `${prefix}${sub.name}/`, [...dirs, sub.name])) whole = false;
        return whole;
      });
      if (!ok && whole) throw new UnsafeTreeError(dirs.join("/"), "a malformed tree");
      return whole;
    };
    const walk = async (treeOid: string, prefix: string, dirs: string[]): Promise<void> => {
      const d = asBuffer(await raw(treeOid, "tree", dirs));
      const names = new Set<string>();
      const ok = await scanTreeAsync(d, async (start, sp, nul) => {
        const sub = entry(d, start, sp, nul, prefix, names);
        if (sub !== null) await walk(sub.id, `${prefix}${sub.name}/`, [...dirs, sub.name]);
      });
      if (!ok) throw new UnsafeTreeError(dirs.join("/"), "a malformed tree");
    };
    if (!walkNow(m[1] as string, "", [])) {
      out = new Map();
      symlinks = [];
      await walk(m[1] as string, "", []);
    }
    refuseLinkCollisions(out.keys(), symlinks);
    return out;
  } finally {
    if (!store) own.close();
  }
}

/**
 * Refuse a symbolic link whose name, as a case-insensitive file system sees
 * it, is also another path of the tree or a directory above one (a write to
 * that path would go through the link there). Only a tree with links can
 * collide dangerously: most have none, and nothing is folded then.
 */
export function refuseLinkCollisions(paths: Iterable<string>, symlinks: readonly string[]): void {
  if (symlinks.length === 0) return;
  const links = new Map(symlinks.map((p) => [foldedName(p), p]));
  for (const path of paths) {
    const f = foldedName(path);
    const same = links.get(f);
    if (same !== undefined && same !== path) {
      throw new UnsafeTreeError(path, `the same name as the symbolic link ${JSON.stringify(same)} on a case-insensitive file system`);
    }
    for (let i = f.indexOf("/"); i !== -1; i = f.indexOf("/", i + 1)) {
      const link = links.get(f.slice(0, i));
      if (link !== undefined) throw new UnsafeTreeError(path, `a path below the symbolic link ${JSON.stringify(link)} on a case-insensitive file system`);
    }
  }
}
