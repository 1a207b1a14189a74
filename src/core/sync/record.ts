// The record step of a sync: journal markers, type corrections, the lock
// entries (shared lines, this machine's install facts beside them) and the
// ignore blocks, for what the run did.
import { excludeFileOf } from "../git/layout/layout.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { toGrexError } from "../base/errors.ts";
import type { Workspace } from "../base/workspace.ts";
import type { HeadInfo } from "../git/refs/head.ts";
import type { ConvergeReason } from "../packtypes/index.ts";
import { GENERATED_BLOCK, generatedExcludeLines, packIgnoreLines } from "../pack/x-gitignore.ts";
import { updateIgnoreBlocks } from "../workspace/gitignore.ts";
import { installedHash, type LockEntry, writeLockfile } from "../workspace/lockfile.ts";
import { appendEvents, makeEvent, type ManifestEvent } from "../workspace/manifest.ts";
import { notInstalled } from "./install-state.ts";
import type { Pruned } from "./prune.ts";
import { effectiveType, type TreeNode } from "./tree.ts";

/** The lock entry a synced pack leaves: shared fields for the line, this machine's facts beside them (lockfile.ts). */
function syncedEntry(n: TreeNode & { head: HeadInfo }, prev: LockEntry | undefined, r: { reinstalled: boolean; hash: string | null } | undefined, now: string): LockEntry {
  const type = effectiveType(n);
  const hash = r?.hash ?? (prev ? installedHash(prev) : "");
  const installed = {
    installed_at: r?.reinstalled || !prev || prev.installed_at === "" ? now : prev.installed_at,
    installed_sha: r?.reinstalled || !prev || prev.installed_at === "" ? n.head.sha : (prev.installed_sha ?? prev.sha),
    installed_hash: hash,
  };
  const origin = n.depth > 0 ? { url: n.url, ref: n.ref } : {};
  if (n.topic !== undefined) {
    // On a topic branch: the line keeps the tracked branch (advanced under it), the work tree's commit is this machine's.
    const sha = n.topic.baseSha ?? prev?.sha ?? n.head.sha;
    const sameLine = prev !== undefined && prev.sha === sha;
    return { id: n.id, sha, branch: n.topic.base ?? prev?.branch ?? null, actions_hash: sameLine ? prev.actions_hash : (prev?.actions_hash ?? hash), type, ...origin, ...installed };
  }
  return {
    id: n.id,
    sha: n.head.sha,
    branch: n.head.branch,
    actions_hash: hash,
    type,
    ...(n.depth > 0 ? { url: n.url, ref: n.declaredRef !== undefined ? n.declaredRef : n.ref } : {}),
    ...installed,
    checkout: { sha: n.head.sha, branch: n.head.branch },
  };
}

/** Markers, type corrections, lockfile and ignore blocks for what this run did. */
export async function recordResults(
  ws: Workspace,
  nodes: TreeNode[],
  previous: Map<string, LockEntry>,
  reasons: Map<string, { reinstalled: boolean; reason: ConvergeReason; hash: string | null }>,
  warn: (m: string) => void,
  signal: AbortSignal,
  installErrors: ReadonlyMap<string, string>,
  pruned: readonly Pruned[],
  locked: boolean,
): Promise<void> {
  const events: ManifestEvent[] = [];
  const lock = new Map(previous);
  for (const p of pruned) for (const id of p.dropped) lock.delete(id);
  const now = new Date().toISOString();
  for (const n of nodes) {
    const error = installErrors.get(n.id);
    const prev = previous.get(n.id);
    if (error !== undefined && n.head !== null) {
      const origin = n.depth > 0 ? { url: n.url, ref: n.declaredRef !== undefined ? n.declaredRef : n.ref } : {};
      const line = { id: n.id, sha: n.topic?.baseSha ?? n.head.sha, branch: n.topic ? n.topic.base : n.head.branch, type: effectiveType(n), ...origin };
      lock.set(n.id, { ...notInstalled(line, error), actions_hash: prev?.actions_hash ?? "" });
      continue;
    }
    if (n.outcome !== "ok" || n.head === null) continue;
    events.push(makeEvent("sync", n.id, {})); // runtime: to the journal (journal.ts)
    const type = effectiveType(n);
    if (n.depth === 0 && type !== n.recordedType && !locked) events.push(makeEvent("update", n.id, { type }));
    const entry = syncedEntry(n as TreeNode & { head: HeadInfo }, prev, reasons.get(n.id), now);
    // --locked: the line stays what the lockfile says; only this machine's facts are new.
    lock.set(n.id, locked && prev ? { ...prev, ...pickLocal(entry) } : entry);
  }
  if (events.length > 0) await appendEvents(ws, events, signal);
  try {
    // The committed file is written only when what it says changes (lockfile.ts); never with --locked.
    await writeLockfile(ws, lock.values(), signal, { shared: !locked });
  } catch (err) {
    warn(`could not rewrite ${ws.lockPath} (${toGrexError(err).message}); the work itself is done, run sync again to record it`);
  }
  updateIgnoreFiles(ws, nodes, warn);
}

const pickLocal = (e: LockEntry): Partial<LockEntry> => {
  const { installed_at, installed_sha, installed_hash, checkout } = e;
  return { installed_at, installed_sha, installed_hash, checkout, install_error: undefined };
};

/** One pass per ignore file, whatever the number of packs in it. */
function updateIgnoreFiles(ws: Workspace, nodes: readonly TreeNode[], warn: (m: string) => void): void {
  const ignoreUpdates = new Map<string, Array<[string, string[] | null]>>();
  for (const n of nodes) {
    if (n.outcome === "failed" && !n.head) continue;
    // x-generated: what the pack's own setup writes into it, excluded in its own repository so it stays clean.
    const own = excludeFileOf(n.dir);
    if (own !== null && (n.manifest !== null || existsSync(own))) {
      ignoreUpdates.set(own, [...(ignoreUpdates.get(own) ?? []), [GENERATED_BLOCK, generatedExcludeLines(n.manifest)]]);
    }
    const [file, rel] =
      n.parent === null ? [join(ws.root, ".gitignore"), n.path] : [excludeFileOf(n.parent.dir), n.path.slice(n.parent.path.length + 1)];
    if (file === null) continue; // a parent without a repository has nothing to exclude a child from
    const list = ignoreUpdates.get(file) ?? [];
    list.push([n.id, packIgnoreLines(rel, n.manifest)]);
    ignoreUpdates.set(file, list);
  }
  for (const [file, updates] of ignoreUpdates) {
    try {
      updateIgnoreBlocks(file, updates);
    } catch (err) {
      warn(toGrexError(err).message);
    }
  }
}

