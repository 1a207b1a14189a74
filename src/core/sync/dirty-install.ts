// An adopted clone (`import --scan`) with uncommitted changes is both dirty
// and not installed. Sync never moves it, but it may install its setup when
// installing writes nothing inside the pack's work tree: a plain pack, links,
// directories and env blocks placed outside it, requirements checked. Anything
// that could write inside (a scripted pack's hooks, an exec, children cloned
// into it, a path resolving inside it) blocks the install, and is named.
import { isAbsolute, relative, resolve, sep } from "node:path";
import { expandVars, homeOf } from "../base/vars.ts";
import type { LockEntry } from "../workspace/lockfile.ts";
import { effectiveType, type TreeNode } from "./tree.ts";

/** Where each action kind writes: the argument naming a path it creates, moves or deletes. */
const WRITES: Record<string, string | null> = { symlink: "dst", mkdir: "path", rmdir: "path", env: null, require: null };

const inside = (root: string, p: string): boolean => {
  const rel = relative(root, p);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
};

/** Null when installing `node`'s setup writes nothing inside its work tree; else what would, in one clause. */
export function setupWritesInside(node: TreeNode, env: Record<string, string | undefined>): string | null {
  const type = effectiveType(node);
  if (type === "scripted") return "its setup is a script (a scripted pack), which may write inside it";
  const m = node.manifest;
  if (m === null) return null;
  if (m.children.length > 0) return "its children are cloned inside its work tree";
  for (const [idx, item] of m.actions.entries()) {
    const kind = Object.keys(item)[0] ?? "";
    if (!(kind in WRITES)) return `action ${idx} (${kind}) may write anywhere, the pack included`;
    const field = WRITES[kind];
    if (field === null || field === undefined) continue;
    const raw = (item[kind] as Record<string, unknown> | undefined)?.[field];
    if (typeof raw !== "string") return `action ${idx} (${kind}) has no ${field} to check`;
    let path: string;
    try {
      const expanded = expandVars(raw, env, `actions[${idx}].${kind}.${field}`);
      path = resolve(node.dir, expanded === "~" || expanded.startsWith("~/") ? homeOf(env) + expanded.slice(1) : expanded);
    } catch {
      return `action ${idx} (${kind}) names a ${field} that cannot be resolved yet`;
    }
    if (inside(node.dir, path)) return `action ${idx} (${kind}) writes ${raw}, inside the pack`;
  }
  return null;
}

/**
 * After the fetch phase: a dirty pack whose setup is not installed here gets
 * it installed when that writes nothing inside it (the row says so), or the
 * row names what blocks it. The pack's commit and work tree are never touched.
 */
export function installDirtyWhereSafe(
  nodes: readonly TreeNode[],
  previous: ReadonlyMap<string, LockEntry>,
  interrupted: ReadonlySet<string>,
  env: Record<string, string | undefined>,
): void {
  const notInstalled = (n: TreeNode) => {
    const prev = previous.get(n.id);
    return interrupted.has(n.id) || prev === undefined || prev.installed_at === "" || prev.install_error !== undefined;
  };
  for (const n of nodes) {
    if (n.outcome !== "dirty" || n.head === null || !notInstalled(n)) continue;
    const blocks = setupWritesInside(n, env);
    if (blocks === null) {
      n.outcome = "ok";
      n.message = "has uncommitted changes, left at its commit; its setup writes nothing inside the pack, so it was installed";
    } else {
      n.message = `has uncommitted changes and its setup is not installed: ${blocks}; left as is (commit or stash them, or pass --force)`;
    }
  }
}
