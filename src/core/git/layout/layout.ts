// Where a repository's files live: the one place that turns a work tree into
// its git directories and a name such as "index" or "objects" into a path.
//
// A work tree's `.git` is a directory, or a file `gitdir: <path>` (a linked
// worktree, an absorbed submodule), the path absolute or relative to the
// directory holding the file. That git directory may name, in `commondir`,
// the directory it shares with the other work trees of the same repository.
// As git's path.c (`common_list`) decides, a path under the git directory is
// either the work tree's own (HEAD, index, logs/HEAD, ORIG_HEAD,
// info/sparse-checkout, config.worktree, modules/, refs/bisect/…) or common
// (objects, refs, packed-refs, config, info/, shallow, hooks, logs/refs/…,
// worktrees). `git rev-parse --git-path <name>` prints the same answer.
//
// The environment (GIT_DIR, GIT_COMMON_DIR, GIT_INDEX_FILE,
// GIT_OBJECT_DIRECTORY) is deliberately not read: grex works on the packs of a
// workspace, never on "the repository of the current directory", and a grex
// started from a git hook inherits those variables for another repository.
//
// Every other module asks here; test/unit/layering.test.ts refuses a path
// joined off a git directory anywhere else.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** A repository as git finds it from a work tree (or a bare repository's directory). */
export interface RepoLayout {
  /** The work tree, or null for a bare repository. */
  readonly workTree: string | null;
  /** This work tree's own git directory (`git rev-parse --git-dir`): HEAD, index, logs/HEAD. */
  readonly gitdir: string;
  /** The directory every work tree of the repository shares (`git rev-parse --git-common-dir`): objects, refs, config. */
  readonly commonDir: string;
}

/** A repository given by its layout, or by its git directory alone (its `commondir` is read then). */
export type Repo = RepoLayout | string;

/** The path a `.git` file names (`gitdir: <path>`, relative to the file's directory), or null when the file says no such thing. */
export function readGitFile(dotgit: string): string | null {
  let text: string;
  try {
    text = readFileSync(dotgit, "utf8");
  } catch {
    return null;
  }
  // git's read_gitfile: the file starts with "gitdir: "; the line ends at the first newline.
  const m = /^gitdir:[ \t]*([^\r\n]*?)[ \t]*(?:\r?\n|$)/.exec(text);
  if (!m?.[1]) return null;
  return isAbsolute(m[1]) ? m[1] : resolve(dirname(dotgit), m[1]);
}

/**
 * The git directory of the work tree `dir` — its `.git` directory, or the one
 * its `.git` file names — or null when `dir` has no `.git` (or an unreadable
 * `.git` file). Cheap and synchronous; does not check the directory is whole.
 */
export function dotGitOf(dir: string): string | null {
  const dotgit = join(dir, ".git");
  try {
    const st = statSync(dotgit);
    if (st.isDirectory()) return dotgit;
    if (st.isFile()) return readGitFile(dotgit);
  } catch {
    // no .git at all
  }
  return null;
}

/** Whether `dir` itself looks like a git directory (HEAD, objects and refs, the latter two where `commondir` says). */
export function isGitDirectory(dir: string): boolean {
  const repo = layoutOfGitdir(dir, null);
  return existsSync(join(dir, "HEAD")) && existsSync(objectsDir(repo)) && existsSync(gitPath(repo, "refs"));
}

/**
 * The git directory of `dir`: its `.git` (directory or file), else `dir`
 * itself when it is a bare repository; null if neither.
 */
export function gitdirOf(dir: string): string | null {
  return dotGitOf(dir) ?? (isGitDirectory(dir) ? dir : null);
}

/** The repository of work tree `dir` (or of the bare repository `dir`); null when there is none. */
export function findLayout(dir: string): RepoLayout | null {
  const dotgit = dotGitOf(dir);
  if (dotgit !== null) return layoutOfGitdir(dotgit, dir);
  return isGitDirectory(dir) ? layoutOfGitdir(dir, null) : null;
}

/** The common directory `gitdir/commondir` names (relative to `gitdir`), or `gitdir` itself when it has none. */
export function commonDirOf(gitdir: string): string {
  const file = join(gitdir, "commondir");
  // Checked first: a thrown ENOENT costs more than the look (ref reads ask for every ref).
  if (!existsSync(file)) return gitdir;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return gitdir;
  }
  const common = text.replace(/[\r\n]+$/, "");
  if (common === "") return gitdir;
  return isAbsolute(common) ? common : resolve(gitdir, common);
}

/** The layout of the repository whose (per-work-tree) git directory is `gitdir`. */
export function layoutOfGitdir(gitdir: string, workTree: string | null = null): RepoLayout {
  return { workTree, gitdir, commonDir: commonDirOf(gitdir) };
}

/** The layout of a repository about to be created at `workTree/.git` (no `commondir`). */
export function newLayout(workTree: string): RepoLayout {
  const gitdir = join(workTree, ".git");
  return { workTree, gitdir, commonDir: gitdir };
}

const layoutOf = (repo: Repo): RepoLayout => (typeof repo === "string" ? layoutOfGitdir(repo) : repo);

/**
 * git's common_list (path.c): a name and everything below it is common, or the
 * work tree's own; the longest entry that matches decides. `file` entries match
 * only the name itself. Anything not listed (HEAD, index, ORIG_HEAD,
 * config.worktree, modules/, sharedindex.*, grex's own files) is the work tree's.
 */
const COMMON_LIST: ReadonlyArray<readonly [name: string, dir: boolean, common: boolean]> = [
  ["branches", true, true],
  ["common", true, true],
  ["hooks", true, true],
  ["info", true, true],
  ["info/sparse-checkout", false, false],
  ["logs", true, true],
  ["logs/HEAD", false, false],
  ["logs/refs/bisect", true, false],
  ["logs/refs/rewritten", true, false],
  ["logs/refs/worktree", true, false],
  ["lost-found", true, true],
  ["objects", true, true],
  ["refs", true, true],
  ["refs/bisect", true, false],
  ["refs/rewritten", true, false],
  ["refs/worktree", true, false],
  ["remotes", true, true],
  ["worktrees", true, true],
  ["rr-cache", true, true],
  ["svn", true, true],
  ["config", false, true],
  ["gc.pid", false, true],
  ["packed-refs", false, true],
  ["shallow", false, true],
];

/** Whether `name` (a path relative to a git directory, `/`-separated) lives in the common directory. */
export function isCommonPath(name: string): boolean {
  const path = name.replace(/^\/+|\/+$/g, "");
  let best = -1;
  let common = false;
  for (const [entry, dir, isCommon] of COMMON_LIST) {
    const hit = path === entry || (dir && path.startsWith(`${entry}/`));
    if (hit && entry.length > best) {
      best = entry.length;
      common = isCommon;
    }
  }
  return common;
}

/** The path of `name` in the repository (`git rev-parse --git-path <name>`): in the common directory or the work tree's own. */
export function gitPath(repo: Repo, name: string): string {
  const r = layoutOf(repo);
  return join(r.commonDir !== r.gitdir && isCommonPath(name) ? r.commonDir : r.gitdir, name);
}

/** Where the objects live (common). */
export const objectsDir = (repo: Repo): string => gitPath(repo, "objects");
/** The repository's config file, `config` (common); `config.worktree` is `gitPath(repo, "config.worktree")`. */
export const configPath = (repo: Repo): string => gitPath(repo, "config");
/** The work tree's index (its own). */
export const indexPath = (repo: Repo): string => gitPath(repo, "index");
/** The list of shallow commits (common). */
export const shallowPath = (repo: Repo): string => gitPath(repo, "shallow");
/** The exclude file beside every `.gitignore`, `info/exclude` (common). */
export const infoExcludePath = (repo: Repo): string => gitPath(repo, "info/exclude");
/** `packed-refs` (common). */
export const packedRefsPath = (repo: Repo): string => gitPath(repo, "packed-refs");
/** A loose ref or HEAD (`HEAD`, `refs/heads/main`, `ORIG_HEAD`), wherever git keeps it. */
export const refPath = (repo: Repo, ref: string): string => gitPath(repo, ref);
/** The reflog of `ref` (`logs/HEAD` the work tree's own, `logs/refs/…` common). */
export const reflogPath = (repo: Repo, ref: string): string => gitPath(repo, `logs/${ref}`);

/** The `info/exclude` of the repository whose work tree is `dir` (wherever its `.git` points), or null when `dir` has no repository. */
export function excludeFileOf(dir: string): string | null {
  const gitdir = dotGitOf(dir);
  return gitdir === null ? null : infoExcludePath(gitdir);
}

/**
 * The git directory of submodule `name` absorbed into its superproject,
 * `modules/<name>` under the superproject's own git directory (git's
 * submodule_name_to_gitdir; `git rev-parse --git-path modules/<name>`). The
 * name must already be one git's check_submodule_name accepts.
 */
export const submoduleGitdir = (superproject: Repo, name: string): string => gitPath(superproject, `modules/${name}`);

/** Whether the repository is shallow (has a `shallow` file). */
export function isShallow(repo: Repo): boolean {
  return existsSync(shallowPath(repo));
}

/** The shallow boundary: the commits whose parents the repository does not have (empty when it is not shallow). */
export function readShallow(repo: Repo): Set<string> {
  const path = shallowPath(repo);
  if (!existsSync(path)) return new Set();
  try {
    return new Set(readFileSync(path, "latin1").split("\n").filter((l) => l.length === 40));
  } catch {
    return new Set();
  }
}

/** The file an object directory names the object directories it borrows from in (`objects/info/alternates`). */
export const alternatesFileOf = (objects: string): string => join(objects, "info", "alternates");

/** How deep git follows alternates of alternates (sha1-file.c's link_alt_odb_entries). */
const ALTERNATE_DEPTH = 5;

/**
 * The object directories `objects` borrows from, as git reads them: each line
 * of its `info/alternates` (blank lines and `#` comments skipped, a relative
 * path taken from `objects` itself), then those directories' own alternates,
 * up to five levels down, each directory once and never `objects` itself; one
 * that does not exist is skipped, as git skips it with a warning.
 */
export function alternateDirs(objects: string): string[] {
  const seen = new Set<string>([resolve(objects)]);
  const out: string[] = [];
  const visit = (dir: string, depth: number) => {
    if (depth > ALTERNATE_DEPTH) return;
    for (const alt of alternateLines(dir)) {
      if (seen.has(alt) || !existsSync(alt)) continue;
      seen.add(alt);
      out.push(alt);
      visit(alt, depth + 1);
    }
  };
  visit(objects, 0);
  return out;
}

/** The directories `objects/info/alternates` of `objects` names itself, made absolute (a relative line is taken from `objects`); none without the file. */
export function alternateLines(objects: string): string[] {
  let text: string;
  try {
    text = readFileSync(alternatesFileOf(objects), "utf8");
  } catch {
    return []; // no alternates (the usual case)
  }
  const out: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    out.push(isAbsolute(line) ? resolve(line) : resolve(objects, line));
  }
  return out;
}

/** Where the linked worktrees of a repository are registered, `worktrees/` (common). */
export const worktreesDir = (repo: Repo): string => gitPath(repo, "worktrees");

/** The `.git` file (or directory) of work tree `workTree`. */
export const dotGitPathOf = (workTree: string): string => join(workTree, ".git");

/**
 * The files of a linked worktree's own git directory
 * (`<common>/worktrees/<name>/`), as `git worktree add` writes them: `HEAD`,
 * `commondir` (the common directory, relative: `../..`), `gitdir` (the
 * absolute path of the worktree's `.git` file, the back-pointer `git worktree
 * prune` checks), `index`, `logs/HEAD`, and `locked` (present while the
 * worktree is locked or being made).
 */
export function linkedAdminFiles(admin: string) {
  return {
    head: join(admin, "HEAD"),
    commondir: join(admin, "commondir"),
    gitdir: join(admin, "gitdir"),
    index: join(admin, "index"),
    locked: join(admin, "locked"),
    logsHead: join(admin, "logs", "HEAD"),
  };
}

/**
 * The lock every workspace sharing one repository takes around a fetch into
 * it (`grex-fetch.lock` in the common directory, beside `worktrees/`): the
 * source workspace and each task workspace's linked worktree find the same file.
 */
export const sharedFetchLockPath = (repo: Repo): string => join(layoutOf(repo).commonDir, "grex-fetch.lock");
