// Differential testing against the git CLI: run one operation with grex and
// the same operation with git on identical copies of a repository, then
// compare what git itself sees in each: HEAD, the tree with its modes, every
// index entry (stage, mode, id, flags) and `git status --porcelain`.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { isDirtyFast } from "../../src/core/git/worktree/worktree.ts";
import { git } from "./git-fixtures.ts";

export interface RepoState {
  head: string;
  /** `git ls-tree -r HEAD`: mode, type, id and path of every entry. */
  tree: string;
  /** `git ls-files --stage` with `-v`'s flag tags (skip-worktree, assume-unchanged). */
  index: string;
  /** `git status --porcelain` (untracked files included, ignored ones not). */
  status: string;
}

/** What git reports about the repository at `dir`, without refreshing its index. */
export function repoState(dir: string): RepoState {
  const g = (...args: string[]) => git(dir, "--no-optional-locks", "-c", "core.quotepath=off", ...args);
  const tags = g("ls-files", "-v").split("\n");
  const stage = g("ls-files", "--stage").split("\n");
  return {
    head: g("rev-parse", "HEAD"),
    tree: g("ls-tree", "-r", "HEAD"),
    index: stage.map((l, i) => `${(tags[i] ?? "").slice(0, 1)} ${l}`).join("\n"),
    status: g("status", "--porcelain"),
  };
}

/**
 * Copy `source` twice, run `ours` on one copy and `theirs` (git) on the
 * other, and return both states for the caller to compare.
 */
export async function runBoth(source: string, work: string, ours: (dir: string) => Promise<void> | void, theirs: (dir: string) => void): Promise<{ grex: RepoState; git: RepoState }> {
  const a = join(work, "grex");
  const b = join(work, "git");
  cpSync(source, a, { recursive: true, verbatimSymlinks: true });
  cpSync(source, b, { recursive: true, verbatimSymlinks: true });
  await ours(a);
  theirs(b);
  return { grex: repoState(a), git: repoState(b) };
}

/** grex's dirty verdicts (the fast path, the backend's answer, the report with a status cache) beside git's. */
export async function dirtyVerdicts(dir: string, statusCache?: string): Promise<{ fast: boolean | null; backend: boolean; report: boolean; git: boolean; porcelain: string }> {
  const porcelain = git(dir, "--no-optional-locks", "status", "--porcelain");
  const gitdir = join(dir, ".git");
  return {
    fast: await isDirtyFast(dir, gitdir),
    backend: await backendFor(dir).isDirty(dir),
    report: await backendFor(dir).isDirty(dir, statusCache ? { statusCache, gitdir } : undefined),
    git: porcelain !== "",
    porcelain,
  };
}

/** Every grex verdict equals git's (the fast path answered too), for `expect(...).toEqual(agreeing(v))`. */
export function agreeing(v: { git: boolean; porcelain: string }): { fast: boolean; backend: boolean; report: boolean; git: boolean; porcelain: string } {
  return { fast: v.git, backend: v.git, report: v.git, git: v.git, porcelain: v.porcelain };
}
