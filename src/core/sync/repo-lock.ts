// The locks around a fetch into an existing clone: the workspace's backend
// lock on the pack directory, and, when the repository is shared with other
// workspaces (the source of task workspaces, or a linked worktree in one),
// the shared repository lock in its common directory, so that two workspaces
// never fetch into one repository at once. A repository without linked
// worktrees takes only the first (no file is added to its .git).
import { existsSync } from "node:fs";
import { findLayout, sharedFetchLockPath, worktreesDir } from "../git/layout/layout.ts";
import { withBackendLock, withSharedRepoLock } from "../locks/locks.ts";
import type { Workspace } from "../base/workspace.ts";

/** The shared lock's file for the repository of work tree `dir`, or null when no other work tree shares it. */
export function sharedLockOf(dir: string): string | null {
  const layout = findLayout(dir);
  if (layout === null) return null;
  const shared = layout.commonDir !== layout.gitdir || existsSync(worktreesDir(layout));
  return shared ? sharedFetchLockPath(layout) : null;
}

export function withRepoLocks<T>(ws: Workspace, dir: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  return withBackendLock(ws, dir, signal, () => {
    const lock = sharedLockOf(dir);
    return lock === null ? fn() : withSharedRepoLock(lock, signal, fn);
  });
}
