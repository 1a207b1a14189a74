// The one git interface every backend implements (in process or through the
// system git). A leaf apart from its types, so the backends import it without
// importing the picker in backend.ts that loads them.
import type { HeadInfo } from "./refs/head.ts";
import type { DirtyCheckOptions } from "./worktree/worktree.ts";

export interface CloneOptions {
  ref: string | null;
  signal: AbortSignal;
  /** A partial clone's filter (`blob:none`, `blob:limit=<n>`, normalised by core/base/clone-filter.ts); absent: a full clone. */
  filter?: string;
  /** Told when the server cannot filter (the clone is then a full one, as git's). */
  warn?: (message: string) => void;
}

export interface GitBackend {
  /** All-or-nothing clone into `dir` (absent or empty), then move to `ref` (null = the remote's HEAD branch). */
  clone(url: string, dir: string, opts: CloneOptions): Promise<HeadInfo>;
  /**
   * Fetch, then move to `ref`: a branch is tracked and fast-forwarded only
   * (diverged → pack_op error, HEAD and work tree untouched); a tag or sha
   * gives a detached HEAD; null = the remote's HEAD branch.
   */
  update(dir: string, url: string, opts: { ref: string | null; signal: AbortSignal }): Promise<{ before: HeadInfo; after: HeadInfo }>;
  /** Fetch only: refresh origin's remote-tracking refs; HEAD and the work tree stay as they are. */
  fetch(dir: string, url: string, opts: { signal: AbortSignal }): Promise<void>;
  head(dir: string): Promise<HeadInfo>;
  /** Uncommitted changes to tracked files, or untracked files git would not ignore. */
  isDirty(dir: string, opts?: DirtyCheckOptions): Promise<boolean>;
  /** origin's URL, or null. */
  remoteUrl(dir: string): Promise<string | null>;
}
