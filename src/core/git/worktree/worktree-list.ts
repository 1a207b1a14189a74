// Which work trees a repository has and what each holds, read as `git
// worktree list --porcelain` reads them (builtin/worktree.c, worktree.c): the
// main one, then each registration under `worktrees/` (its `gitdir`
// back-pointer, HEAD, `locked`), and which of them git would prune. Read-only
// and light: status, doctor, sync and the checkout ask here; making and
// removing worktrees is linked-worktrees.ts.
import * as fs from "node:fs";
import { dirname, resolve } from "node:path";
import { dotGitOf, layoutOfGitdir, linkedAdminFiles, type RepoLayout, worktreesDir } from "../layout/layout.ts";
import { configBool, readGitdirConfigValue } from "../refs/config.ts";
import { RefFiles } from "../refs/refs.ts";
import { isDirtyFast } from "./worktree.ts";

export const trimNl = (s: string) => s.replace(/\r?\n$/, "");
export const readText = (path: string): string | null => {
  try {
    return fs.readFileSync(path, "utf8");
  } catch {
    return null;
  }
};

/** One work tree of a repository, as `git worktree list --porcelain` describes it. */
export interface WorktreeEntry {
  /** The work tree's directory. */
  path: string;
  /** Its registration name under `worktrees/`, or null for the main work tree. */
  name: string | null;
  /** Its own git directory (the main one's is the common directory). */
  gitdir: string;
  head: string | null;
  /** The checked-out branch (short name), or null when detached. */
  branch: string | null;
  bare: boolean;
  /** Why it is locked (the `locked` file's text), or null when it is not. */
  locked: string | null;
  /** Why `git worktree prune` would remove its registration, or null. */
  prunable: string | null;
}


function headOf(gitdir: string): { head: string | null; branch: string | null } {
  const refs = new RefFiles(gitdir);
  const text = refs.loose("HEAD");
  const branch = text?.startsWith("ref: refs/heads/") ? text.slice("ref: refs/heads/".length).trim() : null;
  return { head: refs.resolve("HEAD"), branch };
}

/** Why a registration is stale (git's should_prune_worktree), or null. */
export function pruneReason(admin: string): string | null {
  const files = linkedAdminFiles(admin);
  const gitdir = readText(files.gitdir);
  if (gitdir === null) return "gitdir file does not exist";
  const target = trimNl(gitdir).trim();
  if (target === "") return "invalid gitdir file";
  if (!fs.existsSync(target)) return "gitdir file points to non-existent location";
  return null;
}

/** The names registered under `worktrees/`, sorted (git reads them in directory order; sorted is stable across file systems). */
function registeredNames(common: RepoLayout): string[] {
  try {
    return fs.readdirSync(worktreesDir(common)).filter((n) => fs.statSync(resolve(worktreesDir(common), n)).isDirectory()).sort();
  } catch {
    return [];
  }
}

/** The repository's work trees: the main one first (unless bare), then each registered linked worktree. */
export function listWorktrees(anyGitdir: string): WorktreeEntry[] {
  const common = layoutOfGitdir(layoutOfGitdir(anyGitdir).commonDir);
  const bare = configBool(readGitdirConfigValue(common.gitdir, "core", null, "bare")) === true;
  const out: WorktreeEntry[] = [];
  const main = headOf(common.gitdir);
  out.push({ path: bare ? common.gitdir : dirname(common.gitdir), name: null, gitdir: common.gitdir, ...main, bare, locked: null, prunable: null });
  for (const name of registeredNames(common)) {
    const admin = resolve(worktreesDir(common), name);
    const files = linkedAdminFiles(admin);
    const gitdirText = readText(files.gitdir);
    const path = gitdirText === null ? admin : dirname(trimNl(gitdirText).trim());
    const locked = readText(files.locked);
    out.push({ path, name, gitdir: admin, ...headOf(admin), bare: false, locked: locked === null ? null : trimNl(locked), prunable: pruneReason(admin) });
  }
  return out;
}

/** The work tree that has `branch` checked out, or null (git's find_shared_symref over every work tree). */
export function checkedOutAt(anyGitdir: string, branch: string): WorktreeEntry | null {
  return listWorktrees(anyGitdir).find((w) => !w.bare && w.branch === branch) ?? null;
}

/** The registration of linked worktree `path` (its own git directory under `worktrees/`), or null when `path` is not one. */
export function linkedGitdirOf(path: string): string | null {
  const gitdir = dotGitOf(path);
  if (gitdir === null) return null;
  const layout = layoutOfGitdir(gitdir, path);
  return layout.commonDir === layout.gitdir ? null : gitdir;
}

/** The live linked worktrees of the repository (registrations whose work tree still exists): what keeps a source pack from being removed. */
export function otherWorktrees(anyGitdir: string): WorktreeEntry[] {
  return listWorktrees(anyGitdir).filter((w) => w.name !== null && w.prunable === null);
}

/** What `status` shows of one linked worktree of a source pack. */
export interface LinkedWorktreeStatus {
  path: string;
  branch: string | null;
  /** Uncommitted or untracked changes (null when its directory is gone). */
  dirty: boolean | null;
  /** Why git would prune its registration (its directory is gone), or null. */
  prunable: string | null;
}

/** The linked worktrees of the repository whose main work tree is `dir`, or null when it has none (or `dir` is itself a linked worktree). */
export async function linkedWorktreesOf(dir: string): Promise<LinkedWorktreeStatus[] | null> {
  const gitdir = dotGitOf(dir);
  if (gitdir === null) return null;
  const layout = layoutOfGitdir(gitdir, dir);
  if (layout.commonDir !== layout.gitdir || !fs.existsSync(worktreesDir(layout))) return null;
  const linked = listWorktrees(gitdir).filter((w) => w.name !== null);
  if (linked.length === 0) return null;
  return Promise.all(
    linked.map(async (w) => ({
      path: w.path,
      branch: w.branch,
      dirty: w.prunable === null ? (await isDirtyFast(w.path, w.gitdir)) !== false : null,
      prunable: w.prunable,
    })),
  );
}
