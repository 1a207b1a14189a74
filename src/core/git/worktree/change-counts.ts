// How many paths `git status` would list for a work tree, by kind: staged
// (index against HEAD), unstaged (work tree against the index) and untracked
// (not ignored), as `git -c status.renames=false status --porcelain -uall`
// counts them: a path changed in both the index and the work tree counts in
// both; an unresolved conflict and a `git add -N` path count as unstaged; an
// untracked directory counts each file in it (an untracked repository inside
// counts once, as git lists it). Only asked for packs the dirty check already
// found dirty, so a clean pack costs nothing more.
import * as fs from "node:fs";
import { join } from "node:path";
import { readGitdirConfigValue } from "../refs/config.ts";
import { resolveRefSync } from "../refs/refs.ts";
import { ASSUME_VALID, INTENT_TO_ADD, readIndexForStatus, SKIP_WORKTREE, sharedIndexIn } from "../objects/index-file.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { flatTree } from "../objects/tree-read.ts";
import { IgnoreRules } from "./ignore-rules.ts";
import { submoduleState } from "./submodule-status.ts";
import { expandSparse, fileChanged, isRepository, listUntracked, readIndexFile, trackedOf } from "./worktree.ts";

export interface ChangeCounts {
  staged: number;
  unstaged: number;
  untracked: number;
}

const GITLINK = 0o160000;

/** The counts for the work tree at `dir`; null when they cannot be read (no index, unborn HEAD, a damaged index). */
export async function countChanges(dir: string, gitdir: string): Promise<ChangeCounts | null> {
  const file = readIndexFile(gitdir);
  const head = resolveRefSync(gitdir, "HEAD");
  if (!file || !head) return null;
  const index = readIndexForStatus(file.buf, sharedIndexIn(gitdir), false);
  if (!index) return null;
  const entries = expandSparse(index, gitdir);
  if (!entries) return null;
  let filemodeValue: boolean | undefined;
  const filemode = () => (filemodeValue ??= readGitdirConfigValue(gitdir, "core", null, "filemode") !== "false");

  // Unstaged: each path once (a conflict's stages are one path).
  const unstaged = new Set<string>();
  for (const e of entries) {
    if (e.stage !== 0 || (e.flags && e.flags & INTENT_TO_ADD)) unstaged.add(e.path);
    else if (e.mode === GITLINK) {
      const state = submoduleState(dir, e.path, e.oid);
      if (state === "moved" || state === "gone") unstaged.add(e.path);
    } else if (!(e.flags && e.flags & (SKIP_WORKTREE | ASSUME_VALID)) && fileChanged(dir, e, filemode, file.mtimeMs)) unstaged.add(e.path);
  }

  // Staged: the index's resolved entries against HEAD's tree (added, changed, deleted).
  const store = new ObjectStore(gitdir);
  let tree: Map<string, string>;
  try {
    tree = await flatTree(gitdir, head, store);
  } finally {
    store.close();
  }
  let staged = 0;
  const indexed = new Set<string>();
  for (const e of entries) {
    indexed.add(e.path);
    if (e.stage !== 0 || (e.flags && e.flags & INTENT_TO_ADD)) continue;
    if (tree.get(e.path) !== `${e.mode} ${e.oid}`) staged++; // flatTree's form: the mode as a number, then the oid
  }
  for (const p of tree.keys()) if (!indexed.has(p)) staged++;

  // Untracked: every file not ignored, looked for inside directories that are not ignored.
  let untracked = 0;
  const listed = listUntracked(dir, trackedOf(entries), {}, null).untracked;
  if (listed.length > 0) {
    const rules = new IgnoreRules(dir, gitdir);
    const pending = [...listed];
    while (pending.length > 0) {
      const c = pending.pop() as { rel: string; isDir: boolean };
      if (!c.isDir) {
        if (!rules.isIgnored(c.rel, false)) untracked++;
        continue;
      }
      if (rules.isIgnored(c.rel, true)) continue;
      if (isRepository(join(dir, c.rel))) {
        untracked++;
        continue;
      }
      for (const d of fs.readdirSync(join(dir, c.rel), { withFileTypes: true })) {
        if (d.name !== ".git") pending.push({ rel: `${c.rel}/${d.name}`, isDir: d.isDirectory() });
      }
    }
  }
  return { staged, unstaged: unstaged.size, untracked };
}
