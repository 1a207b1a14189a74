// Where a submodule's repository lives, as git lays it out: under the
// superproject's own git directory at `modules/<name>` (nested ones at
// `modules/<a>/modules/<b>`), the submodule's work tree holding a `.git` file
// (`gitdir: ../../.git/modules/<name>`, relative, as git writes it) and the
// module's config `core.worktree` pointing back (relative too).
//
// `absorbSubmodule` brings one submodule there from whatever state it finds,
// as `git submodule absorbgitdirs` does, and is what every pass runs, so a
// pass killed at any point is completed by the next:
//   1. `<path>/.git` is a directory (grex's old layout, or a clone just made):
//      renamed to `modules/<name>` (one rename(2): the repository is in one
//      place or the other, never in neither);
//   2. `<path>` has no `.git` but `modules/<name>` is a repository (killed
//      after the rename, or a `git submodule deinit`): the `.git` file is
//      written (temp + rename);
//   3. `core.worktree` of the module's config is set when it is not what git
//      would write (under git's config lock, temp + rename).
// A `.git` file naming anything else (the user's own arrangement) is left as it is.
//
// The name comes from an untrusted `.gitmodules`: besides git's
// check_submodule_name (`validSubmoduleName`), the place is confined under
// `modules/`, and, as git's validate_submodule_git_dir, no directory between
// `modules/` and it may itself be a module's repository (a name `a/modules/b`
// must not land inside submodule `a`'s).
import * as fs from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { packOpError } from "../base/errors.ts";
import { atomicWriteFile, fsyncDir } from "../fs/fsutil.ts";
import { isGitDirectory, readGitFile, submoduleGitdir } from "./layout/layout.ts";
import { readGitdirConfigValue, setRepoConfig } from "./refs/config.ts";
import { readSymref, resolveRefSync, writeRefSync } from "./refs/refs.ts";

/**
 * The git directory submodule `name` gets under the superproject's git
 * directory `superGitdir`, or why it may not have one; `siblings` are the
 * other names declared beside it (none may hold its place inside theirs).
 */
export function moduleGitdir(superGitdir: string, name: string, siblings: readonly string[] = []): { gitdir: string } | { refused: string } {
  const target = resolve(submoduleGitdir(superGitdir, name));
  const root = resolve(submoduleGitdir(superGitdir, "x"), "..");
  if (!target.startsWith(root + sep)) return { refused: `its name '${name}' does not name a directory inside ${root}` };
  for (const other of siblings) {
    if (other !== name && target.startsWith(resolve(submoduleGitdir(superGitdir, other)) + sep)) {
      return { refused: `its name '${name}' would put its repository inside that of submodule '${other}'` };
    }
  }
  const parts = relative(root, target).split(sep);
  for (let i = 1; i < parts.length; i++) {
    const up = join(root, ...parts.slice(0, i));
    if (isGitDirectory(up)) return { refused: `its name '${name}' would put its repository inside that of another submodule (${up})` };
  }
  return { gitdir: target };
}

/**
 * What state the submodule at `subDir` is in: "absorbed" (a `.git` file to
 * `target`, a repository), "broken" (a `.git` file to `target`, which holds no
 * repository), "own" (a `.git` directory), "unlinked" (no `.git`, `target` a
 * repository), "other" (a `.git` naming something else), "none".
 */
export function layoutState(subDir: string, target: string): "absorbed" | "broken" | "own" | "unlinked" | "other" | "none" {
  const dotgit = join(subDir, ".git");
  let st: fs.Stats | null = null;
  try {
    st = fs.lstatSync(dotgit);
  } catch {
    st = null;
  }
  if (st === null) return isGitDirectory(target) ? "unlinked" : "none";
  if (st.isDirectory()) return "own";
  if (st.isFile()) {
    const named = readGitFile(dotgit);
    if (named === null || !samePath(named, target)) return "other";
    return isGitDirectory(target) ? "absorbed" : "broken";
  }
  return "other";
}

function samePath(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}

/**
 * Bring the submodule whose work tree is `subDir` into git's layout, its
 * repository at `target` (from `moduleGitdir`); `where` starts the sentence
 * of an error. Returns false when there is no repository for it at all
 * (not initialised), true once it is laid out as git lays it out.
 */
export function absorbSubmodule(subDir: string, target: string, where: string): boolean {
  let state = layoutState(subDir, target);
  if (state === "none") return false;
  if (state === "other") return true; // the user's own `.git` file: theirs to keep
  if (state === "broken") {
    throw packOpError(`${where} has a .git file naming ${target}, which holds no repository; move the submodule's directory away, then run the command again to clone it afresh.`, { dir: subDir });
  }
  const dotgit = join(subDir, ".git");
  if (state === "own") {
    if (fs.existsSync(target)) {
      throw packOpError(
        `${where} has its repository in ${dotgit}, and ${target} exists too; move one of them away (git submodule absorbgitdirs refuses the same), then run the command again.`,
        { dir: subDir },
      );
    }
    fs.mkdirSync(dirname(target), { recursive: true });
    try {
      fs.renameSync(dotgit, target);
    } catch (err) {
      const code = (err as { code?: string }).code ?? "rename failed";
      throw packOpError(`${where}: could not move its repository from ${dotgit} to ${target} (${code}); move it there by hand with \`git submodule absorbgitdirs\`, then run the command again.`, { dir: subDir });
    }
    fsyncDir(dirname(target));
    fsyncDir(subDir);
    state = "unlinked";
  }
  const real = (p: string) => fs.realpathSync(p);
  if (state === "unlinked") atomicWriteFile(dotgit, `gitdir: ${relative(real(subDir), real(target))}\n`);
  const worktree = relative(real(target), real(subDir));
  if (readGitdirConfigValue(target, "core", null, "worktree") !== worktree) {
    setRepoConfig(target, [{ section: "core", sub: null, key: "worktree", value: worktree }]);
  }
  return true;
}

/**
 * The local branch `git clone` leaves in a submodule it checks out detached:
 * the remote's default branch (`refs/remotes/origin/HEAD`'s target) as
 * `refs/heads/<branch>` with its upstream config, when the repository has no
 * such branch yet. HEAD is not touched (it stays at the recorded commit).
 */
export function addDefaultBranch(gitdir: string): void {
  const target = readSymref(gitdir, "refs/remotes/origin/HEAD");
  const branch = target?.startsWith("refs/remotes/origin/") ? target.slice("refs/remotes/origin/".length) : null;
  if (branch === null || branch === "" || branch === "HEAD") return;
  const oid = resolveRefSync(gitdir, target as string);
  if (oid === null || resolveRefSync(gitdir, `refs/heads/${branch}`) !== null) return;
  // The config first: a kill between the two leaves the branch to make, which the next pass makes.
  setRepoConfig(
    gitdir,
    [
      { section: "branch", sub: branch, key: "remote", value: "origin" },
      { section: "branch", sub: branch, key: "merge", value: `refs/heads/${branch}` },
    ],
    "if-absent",
  );
  writeRefSync(gitdir, `refs/heads/${branch}`, oid);
}
