// Commits' trees flattened to path → "mode oid" (blobs, symlinks and gitlinks,
// as the index holds them): through the native object reader, falling back to
// isomorphic-git for anything it cannot read.
import * as fs from "node:fs";
import { loadGit } from "./iso.ts";
import type { CacheTreeNode } from "./index-file.ts";
import { ObjectStore } from "./object-store.ts";

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

/** The same through the native reader; null if any object is unreadable there. */
function flatTreeNative(store: ObjectStore, oid: string): Map<string, string> | null {
  const commit = store.readCommit(oid);
  if (!commit) return null;
  const out = new Map<string, string>();
  const walk = (treeOid: string, prefix: string): boolean => {
    const tree = store.readTree(treeOid);
    if (!tree) return false;
    for (const e of tree) {
      if (e.mode === "040000") {
        if (!walk(e.oid, `${prefix}${e.name}/`)) return false;
      } else out.set(prefix + e.name, `${Number.parseInt(e.mode, 8)} ${e.oid}`);
    }
    return true;
  };
  return walk(commit.tree, "") ? out : null;
}

/** The cache-tree of a commit (every directory's tree id and entry count), for an index that is exactly that commit; null if unreadable natively. */
export function cacheTreeOf(store: ObjectStore, commitOid: string): CacheTreeNode | null {
  const commit = store.readCommit(commitOid);
  if (!commit) return null;
  const build = (name: string, oid: string): CacheTreeNode | null => {
    const tree = store.readTree(oid);
    if (!tree) return null;
    const node: CacheTreeNode = { name, oid, entries: 0, children: [] };
    for (const e of tree) {
      if (e.mode !== "040000") {
        node.entries++;
        continue;
      }
      const child = build(e.name, e.oid);
      if (!child) return null;
      node.entries += child.entries;
      node.children.push(child);
    }
    return node;
  };
  return build("", commit.tree);
}
