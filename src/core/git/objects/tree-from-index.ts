// A commit's flat tree read from an index that holds exactly that tree, not
// from the pack: a task workspace's worktree usually starts at the commit its
// source pack has checked out, and that checkout's index lists every entry of
// it. The index is not trusted: its trees are rebuilt from the entries and
// hashed as git's write-tree hashes them, and only when the root equals the
// commit's tree are the entries taken, then checked by the rules a tree walk
// applies (path-verify.ts, tree-read.ts). What it saves is resolving the
// commit's trees from the pack, where a long history can keep the tip's trees
// at the end of long delta chains. Anything else answers null: read the tree.
import { readFileSync } from "node:fs";
import { INTENT_TO_ADD, readIndex } from "./index-file.ts";
import { type CacheTreeNode, sha1 } from "./index-write.ts";
import { CANONICAL_INDEX_MODES, entryProblem } from "./path-verify.ts";
import { refuseLinkCollisions, UnsafeTreeError } from "./tree-read.ts";

interface Dir {
  /** Entries in index order: a file's mode ("100644", …) and id, or a subdirectory. */
  items: Array<{ name: string; mode: string; oid: Buffer | null; dir: Dir | null }>;
  names: Set<string>;
}

/** The commit's tree as `verifiedFlatTree` gives it (path → "mode oid"), and its cache-tree, or null when the index does not hold exactly `treeOid`. */
export function flatTreeFromIndex(indexFile: string, treeOid: string): { tree: Map<string, string>; cacheTree: CacheTreeNode } | null {
  let buf: Buffer;
  try {
    buf = readFileSync(indexFile);
  } catch {
    return null;
  }
  const read = readIndex(buf);
  // Git's own claim first (the cache-tree's root): an index with staged changes is passed over before anything is built.
  if (read === null || read.sparseDirs || read.rootTree !== treeOid) return null;
  const root: Dir = { items: [], names: new Set() };
  const dirs = new Map<string, Dir>([["", root]]);
  for (const e of read.entries) {
    if (e.stage !== 0 || ((e.flags ?? 0) & INTENT_TO_ADD) !== 0 || !CANONICAL_INDEX_MODES.has(e.mode)) return null;
    const parts = e.path.split("/");
    let at = root;
    let prefix = "";
    for (let i = 0; i < parts.length - 1; i++) {
      const name = parts[i] as string;
      const key = prefix + name;
      let d = dirs.get(key);
      if (d === undefined) {
        if (at.names.has(name)) return null; // a file and a directory of one name
        d = { items: [], names: new Set() };
        dirs.set(key, d);
        at.items.push({ name, mode: "40000", oid: null, dir: d });
        at.names.add(name);
      }
      at = d;
      prefix = `${key}/`;
    }
    const name = parts[parts.length - 1] as string;
    if (at.names.has(name)) return null;
    at.names.add(name);
    at.items.push({ name, mode: e.mode.toString(8), oid: Buffer.from(e.oid, "hex"), dir: null });
  }
  const cacheTree = hashTree("", root);
  if (cacheTree.oid !== treeOid) return null;
  // The entries are the tree's: the same checks a walk of it makes, then the same flat tree.
  for (const [key, d] of dirs) {
    for (const item of d.items) {
      const why = entryProblem(item.name, item.dir !== null ? "040000" : item.mode, key === "");
      if (why) throw new UnsafeTreeError(key === "" ? item.name : `${key}/${item.name}`, why);
    }
  }
  const tree = new Map<string, string>();
  const symlinks: string[] = [];
  for (const e of read.entries) {
    tree.set(e.path, `${e.mode} ${e.oid}`);
    if (e.mode === 0o120000) symlinks.push(e.path);
  }
  refuseLinkCollisions(tree.keys(), symlinks);
  return { tree, cacheTree };
}

/** git's order of a tree's entries: by name, a directory's name read with a trailing "/". */
const treeOrder = (a: Dir["items"][number], b: Dir["items"][number]): number =>
  Buffer.compare(Buffer.from(a.dir !== null ? `${a.name}/` : a.name, "utf8"), Buffer.from(b.dir !== null ? `${b.name}/` : b.name, "utf8"));

/** The tree object of `d` hashed as git writes it, subtrees first; its cache-tree node (entries counted below it, subtrees in order). */
function hashTree(name: string, d: Dir): CacheTreeNode {
  const node: CacheTreeNode = { name, oid: "", entries: 0, children: [] };
  const parts: Buffer[] = [];
  for (const item of [...d.items].sort(treeOrder)) {
    let oid = item.oid as Buffer;
    if (item.dir !== null) {
      const child = hashTree(item.name, item.dir);
      node.children.push(child);
      node.entries += child.entries;
      oid = Buffer.from(child.oid, "hex");
    } else node.entries++;
    parts.push(Buffer.from(`${item.mode} ${item.name}\0`, "utf8"), oid);
  }
  const body = Buffer.concat(parts);
  node.oid = sha1(Buffer.concat([Buffer.from(`tree ${body.length}\0`, "latin1"), body])).toString("hex");
  return node;
}
