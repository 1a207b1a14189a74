// A pack the user switched to another branch (or detached) than the one sync
// last put it on is `off-branch`: status reports it and sync leaves it alone,
// like a dirty pack, unless --force or a new pin (`update --ref`).
import type { HeadInfo } from "../git/backend.ts";
import type { LockEntry } from "../workspace/lockfile.ts";

/** Why `head` is off its pin (one clause), or null when it is where sync left it. */
export function offBranch(head: HeadInfo | null, lock: LockEntry | undefined): string | null {
  if (!head || !lock || lock.sha === "") return null;
  if (lock.branch === null) return head.branch === null ? null : `on branch '${head.branch}' but pinned to a detached commit`;
  if (head.branch === lock.branch) return null;
  // Detached exactly at the locked commit: where `sync --locked` puts a pack.
  if (head.branch === null && head.sha === lock.sha) return null;
  return head.branch === null
    ? `detached at ${head.sha.slice(0, 7)} but pinned to branch '${lock.branch}'`
    : `on branch '${head.branch}' but pinned to '${lock.branch}'`;
}
