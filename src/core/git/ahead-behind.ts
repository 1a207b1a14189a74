// Ahead/behind of HEAD against its remote-tracking ref (origin/<branch>), the
// way `git status` counts them. The refs are read from files; commits are only
// walked when the two differ, so an up-to-date pack costs two small reads.
import * as fs from "node:fs";
import { loadGit } from "./iso.ts";
import type { RefFiles } from "./refs.ts";

export interface Tracking {
  ahead: number;
  behind: number;
}

/** Past this many commits on one side a walk stops and counts what it saw. */
const WALK_LIMIT = 20_000;

/** Counts against origin/<branch>, or null when there is no such ref (or its commits are not here). `refs` reads the work tree `dir`'s repository. */
export async function aheadBehind(refs: RefFiles, dir: string, branch: string | null, headSha: string): Promise<Tracking | null> {
  if (branch === null) return null;
  const gitdir = refs.gitdir;
  const upstream = refs.resolve(`refs/remotes/origin/${branch}`);
  if (!upstream) return null;
  if (upstream === headSha) return { ahead: 0, behind: 0 };
  const git = await loadGit();
  const ancestors = async (start: string): Promise<Set<string>> => {
    const seen = new Set<string>();
    const todo = [start];
    while (todo.length > 0 && seen.size < WALK_LIMIT) {
      const oid = todo.pop() as string;
      if (seen.has(oid)) continue;
      seen.add(oid);
      const { commit } = await git.readCommit({ fs, dir, gitdir, oid });
      todo.push(...commit.parent);
    }
    return seen;
  };
  try {
    const mine = await ancestors(headSha);
    const theirs = await ancestors(upstream);
    let ahead = 0;
    let behind = 0;
    for (const c of mine) if (!theirs.has(c)) ahead++;
    for (const c of theirs) if (!mine.has(c)) behind++;
    return { ahead, behind };
  } catch {
    return null; // a commit is missing (shallow or damaged history): no counts rather than wrong ones
  }
}
