// What one object names, for the walks that copy history object by object (a
// fetch by path that repairs a gap, `update --dissociate`): a commit's tree and
// parents (no parents past the shallow boundary), a tree's entries (never a
// submodule's commit, which lives in the submodule), a tag's target.
import type { GitObject, ObjectStore } from "./object-store.ts";

export function namedBy(store: ObjectStore, oid: string, obj: GitObject, shallow: ReadonlySet<string>, keepEntry: (mode: string) => boolean = () => true): string[] {
  if (obj.type === "commit") {
    const c = store.readCommit(oid);
    if (!c) return [];
    return shallow.has(oid) ? [c.tree] : [c.tree, ...c.parents];
  }
  if (obj.type === "tree") return (store.readTree(oid) ?? []).filter((e) => e.mode !== "160000" && keepEntry(e.mode)).map((e) => e.oid);
  if (obj.type === "tag") {
    const m = /^object ([0-9a-f]{40})$/m.exec(obj.data.toString("latin1", 0, Math.min(obj.data.length, 200)));
    return m ? [m[1] as string] : [];
  }
  return [];
}
