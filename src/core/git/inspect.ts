// Read-only questions every backend answers the same way, whatever cloned the
// repository: where HEAD is, whether the work tree has changes, origin's URL.
import * as fs from "node:fs";
import { packOpError } from "../base/errors.ts";
import type { HeadInfo } from "./refs/head.ts";
import { originUrlSync } from "./refs/config.ts";
import { loadGit } from "./objects/iso.ts";
import { gitdirOf, readHeadSync } from "./refs/refs.ts";
import { type DirtyCheckOptions, isDirtyFast } from "./worktree/worktree.ts";

export function requireGitdir(dir: string): string {
  const gitdir = gitdirOf(dir);
  if (!gitdir) throw packOpError(`${dir} is not a git repository; re-clone it with grex sync or remove it.`, { dir });
  return gitdir;
}

export async function head(dir: string): Promise<HeadInfo> {
  requireGitdir(dir);
  const h = readHeadSync(dir);
  if (!h) throw packOpError(`${dir} has no commit checked out; check the repository with git status.`, { dir });
  return h;
}

/** Changes to tracked files (staged or not), or untracked files that are not ignored. */
export async function isDirty(dir: string, opts?: DirtyCheckOptions): Promise<boolean> {
  const gitdir = opts?.gitdir ?? requireGitdir(dir);
  const fast = await isDirtyFast(dir, gitdir, opts);
  if (fast !== null) return fast;
  const git = await loadGit();
  const rows = await git.statusMatrix({ fs, dir, gitdir });
  // [path, HEAD, workdir, stage]: 1,1,1 is the only "unchanged" state.
  return rows.some(([, h, w, s]) => h !== 1 || w !== 1 || s !== 1);
}

export async function remoteUrl(dir: string): Promise<string | null> {
  requireGitdir(dir);
  return originUrlSync(dir);
}
