// The directories above a top-level pack (`libs/` of `libs/core`) are plain
// directories inside the workspace: grex creates them when it clones, and
// removes them again when a removal leaves them empty. One that exists must
// be a real directory: a symbolic link there would put the clone (and what
// its setup does) somewhere else entirely.
import { lstatSync, readdirSync, rmdirSync } from "node:fs";
import { dirname, join, sep } from "node:path";

/** Why the existing leading directories of `rel` under `root` cannot hold a pack, or null. */
export function plainParentsProblem(root: string, rel: string): string | null {
  const segs = rel.split("/");
  let cur = root;
  for (let i = 0; i < segs.length - 1; i++) {
    cur = join(cur, segs[i] as string);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(cur);
    } catch {
      return null; // from here down grex creates them
    }
    const shown = segs.slice(0, i + 1).join("/");
    if (st.isSymbolicLink()) return `'${shown}' is a symbolic link, and the directories above a pack must be plain directories inside the workspace; replace the link with a directory or choose another path`;
    if (!st.isDirectory()) return `'${shown}' is a file, not a directory; choose another path`;
  }
  return null;
}

/**
 * After a pack's directory left (`rm`), remove the directories above it that
 * are now empty, up to (never including) the workspace root. A directory
 * holding anything else (another pack, a file of the user's) stays, and so do
 * the ones above it. Returns the directories removed.
 */
export function removeEmptyParents(root: string, rel: string): string[] {
  const removed: string[] = [];
  let cur = dirname(join(root, rel));
  const top = join(root);
  while (cur !== top && cur.startsWith(top.endsWith(sep) ? top : top + sep)) {
    try {
      if (readdirSync(cur).length > 0) break;
      rmdirSync(cur);
    } catch {
      break;
    }
    removed.push(cur);
    cur = dirname(cur);
  }
  return removed;
}
