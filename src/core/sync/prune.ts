// Children dropped from a parent's pack.yaml upstream: after the parent synced,
// tear down their setup (deepest first), delete their directory unless it holds
// work that exists only locally (then keep it and warn), and forget them: lock
// entries and the parent's exclude block go, so `status` and `ls` stop listing them.
import type { Confinement } from "../fs/confine.ts";
import { localWork } from "../git/local-work.ts";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Step } from "../actions/types.ts";
import { toGrexError } from "../base/errors.ts";
import { updateIgnoreFile } from "../workspace/gitignore.ts";
import { withPackLock } from "../locks/locks.ts";
import type { LockEntry } from "../workspace/lockfile.ts";
import type { Workspace } from "../base/workspace.ts";
import type { TreeNode } from "./tree.ts";
import { excludeFileOf } from "../git/layout/layout.ts";

/**
 * Whether `dir` holds work that deleting it would lose (the same guard as
 * `grex rm`: changes, unpushed commits, stashes, branches without upstream).
 */
export async function hasLocalWork(dir: string): Promise<boolean> {
  return (await localWork(dir)).length > 0;
}

export interface Pruned {
  id: string;
  ok: boolean;
  message: string;
  /** Lock entries to drop (the child and everything under it). */
  dropped: string[];
  steps: Step[];
}

const parentOf = (id: string) => id.slice(0, Math.max(0, id.lastIndexOf("/")));

/** Recorded children of synced parents that their pack.yaml no longer lists. */
export function removedChildren(nodes: readonly TreeNode[], previous: ReadonlyMap<string, LockEntry>): Array<{ id: string; parent: TreeNode }> {
  const out: Array<{ id: string; parent: TreeNode }> = [];
  for (const node of nodes) {
    // Only a parent whose pack.yaml was read this run can tell what it dropped.
    if (node.outcome !== "ok" || node.head === null) continue;
    const listed = new Set(node.children.map((c) => c.id));
    for (const id of previous.keys()) if (parentOf(id) === node.id && !listed.has(id)) out.push({ id, parent: node });
  }
  return out;
}

export interface PruneOptions {
  ws: Workspace;
  previous: ReadonlyMap<string, LockEntry>;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  dryRun: boolean;
  /** The run's confinement rule: teardown may touch only what it allows. */
  confine: Confinement;
  warn(message: string): void;
}

export async function pruneChild(id: string, parent: TreeNode, o: PruneOptions): Promise<Pruned> {
  const subtree = [id, ...[...o.previous.keys()].filter((k) => k.startsWith(`${id}/`))];
  const deepestFirst = [...subtree].sort((a, b) => b.split("/").length - a.split("/").length);
  const dir = join(o.ws.root, id);
  if (o.dryRun) {
    return { id, ok: true, message: `removed upstream: would tear down its setup and delete ${dir}`, dropped: [], steps: [] };
  }
  const steps: Step[] = [];
  const { packTypeFor } = await import("../packtypes/index.ts");
  const { loadPackYaml } = await import("../pack/load.ts");
  for (const sid of deepestFirst) {
    const sdir = join(o.ws.root, sid);
    if (!existsSync(sdir)) continue;
    try {
      const manifest = await loadPackYaml(sdir);
      const type = packTypeFor(manifest?.type ?? o.previous.get(sid)?.type ?? "meta");
      const r = await withPackLock(o.ws, sdir, o.signal, () =>
        type.teardown({ ws: o.ws, id: sid, dir: sdir, manifest, dryRun: false, env: o.env, signal: o.signal, confine: o.confine }),
      );
      steps.push(...r.steps);
      if (r.failed) throw new Error(`action ${r.failed.idx} (${r.failed.action}) failed: ${r.failed.reason}`);
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      // Keep it recorded so the next sync tries again.
      return { id, ok: false, message: `removed upstream, but tearing down '${sid}' failed: ${e.message}; fix it and run grex sync again`, dropped: [], steps };
    }
  }
  let message = "removed upstream: setup torn down, directory deleted";
  let kept = false;
  if (existsSync(dir)) {
    const local: string[] = [];
    for (const sid of subtree) if (await hasLocalWork(join(o.ws.root, sid))) local.push(sid);
    if (local.length > 0) {
      kept = true;
      message = `removed upstream: setup torn down; kept ${dir} because it holds local work (${local.join(", ")})`;
      o.warn(`'${id}' was removed upstream but ${dir} holds local work; it is no longer managed, delete it yourself when done`);
    } else {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    message = "removed upstream: setup torn down (its directory was already gone)";
  }
  // A kept directory stays excluded, so the parent neither turns dirty nor offers to commit it.
  if (!kept) {
    try {
      const exclude = excludeFileOf(parent.dir);
      if (exclude !== null) updateIgnoreFile(exclude, id, null);
    } catch (err) {
      o.warn(toGrexError(err).message);
    }
  }
  return { id, ok: true, message, dropped: subtree, steps };
}
