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
  /** A shallow clone of this many commits (`git clone --depth n`); absent: full history. */
  depth?: number;
  /**
   * A local repository of the same upstream to clone from instead (a linked
   * worktree's submodule from the main worktree's: objects hard-linked, no
   * network); its remote-tracking refs become the clone's, origin stays `url`.
   */
  from?: string;
}

export interface GitBackend {
  /**
   * All-or-nothing clone into `dir` (absent or empty), then move to `ref` (null = the remote's HEAD branch).
   * `depth` n: a shallow clone of the n latest commits of that one branch (`git clone --depth n`).
   */
  clone(url: string, dir: string, opts: CloneOptions): Promise<HeadInfo>;
  /**
   * Fetch, then move to `ref`: a branch is tracked and fast-forwarded only
   * (diverged → pack_op error, HEAD and work tree untouched); a tag or sha
   * gives a detached HEAD; null = the remote's HEAD branch.
   */
  update(dir: string, url: string, opts: { ref: string | null; signal: AbortSignal; depth?: number }): Promise<{ before: HeadInfo; after: HeadInfo }>;
  /**
   * Fetch only: refresh origin's remote-tracking refs; HEAD and the work tree stay as they are.
   * `depth` (here and in update): deepen a shallow repository to n commits below the tips, or
   * INFINITE_DEPTH (layout/shallow-file.ts) for its full history (`git fetch --unshallow`).
   */
  fetch(dir: string, url: string, opts: { signal: AbortSignal; depth?: number }): Promise<void>;
  head(dir: string): Promise<HeadInfo>;
  /** Uncommitted changes to tracked files, or untracked files git would not ignore. */
  isDirty(dir: string, opts?: DirtyCheckOptions): Promise<boolean>;
  /** origin's URL, or null. */
  remoteUrl(dir: string): Promise<string | null>;
}
