// What exists only in this clone: the work a deletion of its directory would
// lose. Every path that deletes a pack's work tree (rm, children dropped by
// their parent) asks this first and refuses unless forced.
import * as fs from "node:fs";
import { join } from "node:path";
import { readGitdirConfigValue } from "./refs/config.ts";
import { countLeftRight } from "./refs/ahead-behind.ts";
import { type Git, loadGit } from "./objects/iso.ts";
import { gitdirOf, listRefsSync, readHeadSync, resolveRefSync } from "./refs/refs.ts";
import { populatedSubmodules } from "./worktree/submodule-status.ts";
import { isDirtyFast } from "./worktree/worktree.ts";
import { reflogPath } from "./layout/layout.ts";

const SHOWN = 5;

const listed = (paths: string[]) =>
  paths.slice(0, SHOWN).join(", ") + (paths.length > SHOWN ? ` and ${paths.length - SHOWN} more` : "");

/**
 * A human-readable list of what deleting `dir` would lose: uncommitted or
 * untracked (not ignored) files, commits on no remote-tracking branch (nor a
 * fetched tag), stashes, local branches without an upstream. Empty when
 * everything here also exists upstream, or when `dir` is not a git repository.
 */
export async function localWork(dir: string): Promise<string[]> {
  const gitdir = gitdirOf(dir);
  if (!gitdir) return [];
  const out: string[] = [];
  const changed = await changedFiles(dir, gitdir);
  if (changed.length > 0) out.push(`uncommitted or untracked files: ${listed(changed)}`);

  const stashes = stashCount(gitdir);
  if (stashes > 0) out.push(`${stashes} stash${stashes > 1 ? "es" : ""}`);

  const upstream = [...listRefsSync(gitdir, "refs/remotes/").entries()]
    .filter(([name]) => !name.endsWith("/HEAD"))
    .map(([, sha]) => sha);
  const tags = [...listRefsSync(gitdir, "refs/tags/").values()];
  const known = [...new Set([...upstream, ...tags])];
  const branches = listRefsSync(gitdir, "refs/heads/");
  const noUpstream: string[] = [];
  for (const [ref, sha] of branches) {
    const name = ref.slice("refs/heads/".length);
    if (readGitdirConfigValue(gitdir, "branch", name, "merge") === null) noUpstream.push(name);
    if (!(await containedIn(dir, gitdir, sha, known))) {
      out.push(`commits on branch '${name}' that are on no remote-tracking branch (tip ${sha.slice(0, 7)})`);
    }
  }
  const head = readHeadSync(dir);
  if (head && head.branch === null && !(await containedIn(dir, gitdir, head.sha, known))) {
    out.push(`commits at the detached HEAD that are on no remote-tracking branch (${head.sha.slice(0, 7)})`);
  }
  if (noUpstream.length > 0) out.push(`local branch${noUpstream.length > 1 ? "es" : ""} without an upstream: ${listed(noUpstream)}`);
  // Initialised submodules live inside the directory: their own work goes with it.
  for (const sub of populatedSubmodules(dir, gitdir)) for (const w of await localWork(join(dir, sub))) out.push(`submodule ${sub}: ${w}`);
  return out;
}

/** Paths with changes (staged or not) and untracked paths git would not ignore. */
async function changedFiles(dir: string, gitdir: string): Promise<string[]> {
  if ((await isDirtyFast(dir, gitdir)) === false) return [];
  const git = await loadGit();
  let rows: Awaited<ReturnType<Git["statusMatrix"]>>;
  try {
    rows = await git.statusMatrix({ fs, dir, gitdir });
  } catch {
    // isomorphic-git cannot list this index (a v4 or split index, say): the changes are certain, their names are not.
    return ["(changes git status would list)"];
  }
  // [path, HEAD, workdir, stage]: 1,1,1 is the only "unchanged" state.
  return rows.filter(([, h, w, s]) => h !== 1 || w !== 1 || s !== 1).map(([path]) => path);
}

/** Entries in the stash reflog (refs/stash alone means one). */
function stashCount(gitdir: string): number {
  if (resolveRefSync(gitdir, "refs/stash") === null) return 0;
  try {
    return Math.max(1, fs.readFileSync(reflogPath(gitdir, "refs/stash"), "utf8").split("\n").filter(Boolean).length);
  } catch {
    return 1;
  }
}

/** Whether `sha` is one of `tips` or an ancestor of one; unreadable history counts as not contained. */
async function containedIn(_dir: string, gitdir: string, sha: string, tips: string[]): Promise<boolean> {
  if (tips.includes(sha)) return true;
  for (const tip of tips) {
    // Nothing reachable from sha that the tip lacks: the walk of ahead-behind.ts, bounded by what differs.
    // A missing object (shallow or damaged clone) gives null: cannot prove it, keep looking.
    if (countLeftRight(gitdir, sha, tip)?.ahead === 0) return true;
  }
  return false;
}

export interface LocalWorkFinding {
  id: string;
  dir: string;
  lost: string[];
}

/** localWork() of each repository in `targets`, for those where it finds something. */
export async function findLocalWork(targets: Array<{ id: string; dir: string }>): Promise<LocalWorkFinding[]> {
  const out: LocalWorkFinding[] = [];
  for (const t of targets) {
    const lost = await localWork(t.dir);
    if (lost.length > 0) out.push({ ...t, lost });
  }
  return out;
}

/** One sentence per repository: "'tools' (/ws/tools): 2 stashes; ...". */
export function describeLocalWork(found: LocalWorkFinding[]): string {
  return found.map((f) => `'${f.id}' (${f.dir}): ${f.lost.join("; ")}`).join(" | ");
}
