// Linked worktrees made, listed, removed and pruned in-process, file for file
// as `git worktree add/list/remove/prune` (builtin/worktree.c) do it, so the
// git CLI and grex agree at every step:
//   <work tree>/.git                  "gitdir: <common>/worktrees/<name>"
//   <common>/worktrees/<name>/HEAD    "ref: refs/heads/<branch>"
//   …/commondir                       "../.."
//   …/gitdir                          "<work tree>/.git" (absolute, the back-pointer prune checks)
//   …/index, …/logs/HEAD              the work tree's own
//   …/locked                          while the worktree is being made (git writes "initializing")
// <name> is the work tree's base name, with 1, 2, … appended while taken (git's
// counter). Branches and objects stay in the common directory: layout.ts
// resolves every path through `commondir`, so status, checkout, refs, the
// index and its lock work the same in a linked worktree.
import * as fs from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { packOpError } from "../../base/errors.ts";
import { dotGitOf, dotGitPathOf, indexPath, layoutOfGitdir, linkedAdminFiles, type RepoLayout, worktreesDir } from "../layout/layout.ts";
import { endNoteless, startNoteless } from "../layout/lockfile.ts";
import { LayeredConfig } from "../refs/config.ts";
import { deleteRefSync, RefFiles, writeRefSync } from "../refs/refs.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { verifiedFlatTree } from "../objects/tree-read.ts";
import { flatTreeFromIndex } from "../objects/tree-from-index.ts";
import { checkoutFresh } from "./checkout-fresh.ts";
import { FileWriter, writesThroughThread } from "./file-writer.ts";
import { KIND_DATA } from "./write-now.ts";
import { phaseEnd, phaseStart, timePhase } from "../../base/profile.ts";
import { inheritWorktreeState } from "./worktree-inherit.ts";
import { ensureBlobs } from "../transport/promised-fetch.ts";
import { isDirtyFast } from "./worktree.ts";
import { checkedOutAt, linkedGitdirOf, listWorktrees, pruneReason, readText, trimNl } from "./worktree-list.ts";

export { checkedOutAt, linkedGitdirOf, listWorktrees, linkedWorktreesOf, otherWorktrees, type WorktreeEntry } from "./worktree-list.ts";

/** git's worktree name: the base name made a valid ref component (sanitize_refname_component). */
function worktreeName(path: string): string {
  let name = basename(path).replace(/[\x00-\x20\x7f~^:?*[\\]/g, "-").replace(/\.{2,}/g, ".").replace(/^\.+/, "");
  if (name.endsWith(".lock")) name = `${name.slice(0, -5)}-lock`;
  return name === "" ? "worktree" : name;
}

/** Make `worktrees/<name>` (then `<name>1`, `<name>2`, … while taken), exclusively, as git's counter does. */
function makeAdminDir(common: RepoLayout, name: string): string {
  const parent = worktreesDir(common);
  fs.mkdirSync(parent, { recursive: true });
  for (let counter = 0; ; counter++) {
    const admin = resolve(parent, counter === 0 ? name : `${name}${counter}`);
    try {
      fs.mkdirSync(admin);
      return admin;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}

/** Write a small file of the registration: one open (O_TRUNC), one write, one close (writeFileSync adds an ftruncate). */
function writeSmall(path: string, text: string): void {
  const fd = fs.openSync(path, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o666);
  try {
    const bytes = Buffer.from(text, "utf8");
    for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off);
  } finally {
    fs.closeSync(fd);
  }
}

/** The identity a reflog line carries (the committer's, as git takes it; grex's own when none is set). */
function reflogIdent(gitdir: string, env: Record<string, string | undefined>): string {
  // The environment's identity wins over the config's, as in git: the config is read only for what it leaves out.
  const config = env.GIT_COMMITTER_NAME !== undefined && env.GIT_COMMITTER_EMAIL !== undefined ? null : LayeredConfig.load(gitdir, env);
  const name = env.GIT_COMMITTER_NAME ?? config?.get("user", null, "name") ?? "grex";
  const email = env.GIT_COMMITTER_EMAIL ?? config?.get("user", null, "email") ?? "grex@localhost";
  const now = Math.floor(Date.now() / 1000);
  return `${name} <${email}> ${now} +0000`;
}

export interface AddWorktreeOptions {
  /** Any git directory of the repository (the source pack's). */
  repoGitdir: string;
  /** The new work tree: must not exist, or be an empty directory. */
  path: string;
  branch: string;
  /** The commit a missing branch is created at. */
  start: string | null;
  env?: Record<string, string | undefined>;
}

export interface AddedWorktree {
  name: string;
  gitdir: string;
  head: string;
  /** Whether the branch was created (false: it existed and was checked out). */
  createdBranch: boolean;
}

/** `git worktree add <path> <branch>` (or `-b <branch> <path> <start>` when the branch is missing). */
export async function addWorktree(o: AddWorktreeOptions): Promise<AddedWorktree> {
  const common = layoutOfGitdir(layoutOfGitdir(o.repoGitdir).commonDir);
  const path = resolve(o.path);
  if (fs.existsSync(path) && (!fs.statSync(path).isDirectory() || fs.readdirSync(path).length > 0)) {
    throw packOpError(`cannot make a worktree at ${path}: it already exists and is not an empty directory; remove it or pick another place.`, { path });
  }
  const refs = new RefFiles(common.gitdir);
  const existing = refs.resolve(`refs/heads/${o.branch}`);
  if (existing !== null) {
    const other = checkedOutAt(common.gitdir, o.branch);
    if (other !== null) {
      throw packOpError(`branch '${o.branch}' is already checked out at '${other.path}', and git lets a branch be checked out in one worktree only; pick another branch name or remove that worktree.`, {
        branch: o.branch,
        worktree: other.path,
      });
    }
  } else if (o.start === null) {
    throw packOpError(`cannot make a worktree at ${path} on branch '${o.branch}': the branch does not exist and there is no commit to start it at; fetch the pack first.`, { path });
  }
  const head = existing ?? (o.start as string);
  // One object store for the worktree: the trees are read (and cached) once, the packs opened once.
  const store = new ObjectStore(common.gitdir);
  try {
    return await makeWorktree(o, common, path, head, existing === null, store);
  } finally {
    store.close();
  }
}

async function makeWorktree(o: AddWorktreeOptions, common: RepoLayout, path: string, head: string, newBranch: boolean, store: ObjectStore): Promise<AddedWorktree> {
  // Mostly the commit the source has checked out: its index, once its trees hash to the commit's, spares reading them.
  const commitTree = store.readCommit(head)?.tree;
  const fromIndex = commitTree === undefined ? null : flatTreeFromIndex(indexPath(o.repoGitdir), commitTree);
  const tree = fromIndex?.tree ?? (await timePhase("worktree.tree", () => verifiedFlatTree(common.gitdir, head, store)));
  // A partial clone: the blobs of the tree its filter left out come over first, in one batch, before anything is written.
  await timePhase("worktree.promised", () => ensureBlobs(common.gitdir, path, "", tree, new AbortController().signal));
  const t0 = phaseStart();
  const admin = makeAdminDir(common, worktreeName(path));
  startNoteless(admin); // its index.lock: a kill leaves the registration locked, replaced as a whole by the next run
  const files = linkedAdminFiles(admin);
  const madeDir = !fs.existsSync(path);
  let createdBranch = false;
  // Many worktrees at once (a task workspace holds the writer thread): the registration's files are created
  // there too, in the same order, while this thread reads the next pack's objects (file-writer.ts).
  const writer = writesThroughThread(0) ? new FileWriter("") : null;
  const small = (file: string, text: string) => {
    if (writer === null) writeSmall(file, text);
    else writer.add(file, KIND_DATA, Buffer.from(text, "utf8"), () => {});
  };
  try {
    fs.mkdirSync(path, { recursive: true });
    const real = fs.realpathSync(path);
    const realAdmin = resolve(fs.realpathSync(worktreesDir(common)), basename(admin));
    small(files.locked, "initializing\n");
    // The back-pointer first, as git's add_worktree writes it: killed at any point after it, the registration
    // names this path, so a re-run finds and replaces what was left (even a `.git` file created but never written).
    small(files.gitdir, `${dotGitPathOf(real)}\n`);
    small(dotGitPathOf(path), `gitdir: ${realAdmin}\n`);
    small(files.commondir, "../..\n");
    await writer?.finish(); // on disk before the branch is made and anything reads the registration
    if (newBranch) {
      writeRefSync(common.gitdir, `refs/heads/${o.branch}`, head);
      createdBranch = true;
    }
    writeSmall(files.head, `ref: refs/heads/${o.branch}\n`);
    inheritWorktreeState(o.repoGitdir, admin); // a sparse source gives a sparse worktree, as git's worktree add copies it
    phaseEnd("worktree.register", t0);
    await timePhase("worktree.checkout", () => checkoutFresh(path, admin, head, tree, path, false, store, fromIndex?.cacheTree)); // the index as git writes it: no fsync
    const reflog = `${"0".repeat(40)} ${head} ${reflogIdent(common.gitdir, o.env ?? process.env)}\tcheckout: moving to ${o.branch}\n`;
    if (writer === null) {
      fs.mkdirSync(dirname(files.logsHead), { recursive: true });
      writeSmall(files.logsHead, reflog);
    } else {
      writer.makeDirs([dirname(files.logsHead)]);
      small(files.logsHead, reflog);
      await writer.finish(); // before the registration is unlocked
    }
    try {
      fs.unlinkSync(files.locked);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err; // unlocked meanwhile (git worktree unlock)
    }
    return { name: basename(admin), gitdir: admin, head, createdBranch };
  } catch (err) {
    await writer?.close(); // nothing is still being written into what is removed now
    // Nothing half-made stays: the registration, the directory if it was ours, a branch made for it.
    fs.rmSync(admin, { recursive: true, force: true });
    if (madeDir) fs.rmSync(path, { recursive: true, force: true });
    else fs.rmSync(dotGitPathOf(path), { force: true });
    if (createdBranch) deleteRefSync(common.gitdir, `refs/heads/${o.branch}`);
    throw err;
  } finally {
    await writer?.close();
    endNoteless(admin);
  }
}

/** Whether the linked worktree at `path` has changes `git worktree remove` refuses (modified, staged or untracked files); an unreadable state counts as changes. */
export async function worktreeHasChanges(path: string): Promise<boolean> {
  const gitdir = dotGitOf(path);
  if (gitdir === null) return false;
  return (await isDirtyFast(path, gitdir)) !== false;
}

/** `git worktree remove [--force] <path>`: the work tree and its registration; the branch and its commits stay. */
export async function removeWorktree(path: string, opts: { force?: boolean } = {}): Promise<void> {
  const abs = resolve(path);
  const admin = linkedGitdirOf(abs);
  if (admin === null) throw packOpError(`'${abs}' is not a linked worktree, so there is no worktree to remove there.`, { path: abs });
  const locked = readText(linkedAdminFiles(admin).locked);
  if (locked !== null && !opts.force) throw packOpError(`cannot remove the worktree '${abs}': it is locked (${trimNl(locked) || "no reason given"}); unlock it with git worktree unlock, or pass --force.`, { path: abs });
  if (!opts.force && (await worktreeHasChanges(abs))) {
    throw packOpError(`'${abs}' contains modified or untracked files; commit or remove them, or pass --force to delete them.`, { path: abs });
  }
  fs.rmSync(abs, { recursive: true, force: true });
  removeRegistration(admin);
}

function removeRegistration(admin: string): void {
  fs.rmSync(admin, { recursive: true, force: true });
  try {
    fs.rmdirSync(dirname(admin)); // `worktrees/` once empty, as git leaves no empty one behind
  } catch {
    // others remain
  }
}

/** Forget the registration `admin` (a linked worktree's own git directory) once its work tree is gone; true when it was removed. */
export function forgetRegistration(admin: string): boolean {
  if (pruneReason(admin) === null) return false;
  removeRegistration(admin);
  return true;
}

/** `git worktree prune`: remove the registrations whose work tree is gone (locked ones stay). Returns what was (or would be) pruned. */
export function pruneWorktrees(anyGitdir: string, opts: { dryRun?: boolean } = {}): Array<{ name: string; path: string; reason: string }> {
  const out: Array<{ name: string; path: string; reason: string }> = [];
  for (const w of listWorktrees(anyGitdir)) {
    if (w.name === null || w.prunable === null || w.locked !== null) continue;
    out.push({ name: w.name, path: w.path, reason: w.prunable });
    if (!opts.dryRun) removeRegistration(w.gitdir);
  }
  return out;
}

