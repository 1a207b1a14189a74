// Moving an existing work tree from one commit to another by touching only
// what differs between the two trees (a one-commit update rewrites a handful
// of files, not the whole checkout), with a journal so that an interrupted
// move is recognised and finished later instead of looking like the user's
// own edits.
//
// Order of work, each step safe to interrupt:
//   1. check: every path the move changes must be as the index and the old
//      commit say (else: "would overwrite local changes", nothing touched);
//   2. journal <gitdir>/grex-checkout.json {from, to, branch} (temp + rename);
//   3. files: removals, then writes, each to a temp name renamed into place,
//      so a file is always wholly the old or wholly the new version;
//   4. the index (index-manager.ts): through index.lock, fsync'd and renamed
//      over the index, and only if it is still the index step 1 read (under
//      the same lock: a git command at work there stops the move before it
//      starts);
//   5. refs (the caller, moveTo), then the journal is removed.
// While a journal exists, a changed path showing either its old or its new
// version is the move's own work, never a local change; the next update
// (resumeCheckout) finishes the move. Paths outside the diff are never touched.
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { packOpError } from "../../base/errors.ts";
import { readConfigValueSync } from "../refs/config.ts";
import { ASSUME_VALID, entryFor, type IndexEntry, SKIP_WORKTREE, sharedIndexIn } from "../objects/index-file.ts";
import { EditedIndex, IndexView } from "../objects/index-view.ts";
import { diffTrees } from "../objects/tree-changes.ts";
import { commitIndex, indexChecksum, readIndexLocked } from "../objects/index-manager.ts";
import { CANONICAL_INDEX_MODES } from "../objects/path-verify.ts";
import { indexPath } from "../layout/layout.ts";
import { SparseCheckout } from "./sparse-checkout.ts";
import { isNotFound, missingObject } from "../transport/git-errors.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { writeRefSync } from "../refs/refs.ts";
import { type CheckoutJournal, clearJournal, onDisk, parseModeOid as parse, sameVersion, tempNameOf, writeJournal } from "./checkout-journal.ts";
import { cacheTreeOf, flatTree, readBlobBytes, UnsafeTreeError, verifiedFlatTree } from "../objects/tree-read.ts";
import { fileChanged, statDataMatches } from "./worktree.ts";
import { beyondLink, makeParents, parentsOf, RealDirs, removeEmptyParents, removeEntry, writeEntry } from "./worktree-guard.ts";
import { Conversion, attributePaths } from "./convert.ts";
import { Collector, collectAfter, PER_OBJECT_GARBAGE } from "../objects/garbage.ts";

const GITLINK = 0o160000;

function withStore<T>(gitdir: string, use: (s: ObjectStore) => T): T {
  const store = new ObjectStore(gitdir);
  try {
    return use(store);
  } finally {
    store.close();
  }
}

interface Plan {
  dir: string;
  gitdir: string;
  /** The changed paths' versions in the old commit (absent: added by the move); unchanged paths are not in it. */
  from: Map<string, string>;
  to: Map<string, string>;
  changed: string[];
  index: EditedIndex;
  /** The old commit's tree, when the index was exactly that tree (its cache-tree said so): then the new index is exactly the new commit. */
  exactFrom: boolean;
  /** The checksum of the index the plan was made from: the new one replaces only that one. */
  indexSum: string | null;
  /** That index file's mtime: entries not older are racy (smudgeRacy). */
  indexMtime: number;
  toOid: string;
  /** The directories this move found real, from its first check to its last write (worktree-guard.ts). */
  dirs: RealDirs;
}

async function makePlan(dir: string, gitdir: string, fromOid: string, toOid: string, verified?: Map<string, string>): Promise<Plan | null> {
  const buf = await readIndexLocked(gitdir, dir);
  if (buf === null) return null;
  // Viewed in its bytes (index-view.ts): only the entries the move touches become objects.
  const view = IndexView.of(buf, sharedIndexIn(gitdir), true);
  if (!view) return null;
  // A conflict, or a sparse index's directory entries: the full checkout handles those.
  for (let i = 0; i < view.count; i++) if (view.stage(i) !== 0 || view.mode(i) === 0o040000 || !CANONICAL_INDEX_MODES.has(view.mode(i))) return null;
  const store = new ObjectStore(gitdir);
  let diff: { from: Map<string, string>; changed: string[] };
  let to: Map<string, string>;
  let fromTree: string | null;
  try {
    to = verified ?? (await verifiedFlatTree(gitdir, toOid, store));
    fromTree = store.readCommit(fromOid)?.tree ?? null;
    const toTree = store.readCommit(toOid)?.tree ?? null;
    // Only the subtrees whose ids differ are read; flat trees compared when the native reader cannot read one.
    const gc = new Collector(); // each tree read leaves its inflated (and delta-applied) bytes behind
    const read = (oid: string) => {
      const o = store.read(oid);
      gc.add(PER_OBJECT_GARBAGE + 2 * (o?.data.length ?? 0));
      return o?.type === "tree" ? Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength) : null;
    };
    diff = (fromTree && toTree && diffTrees(read, fromTree, toTree)) || flatDiff(await flatTree(gitdir, fromOid, store), to);
  } finally {
    store.close();
  }
  collectAfter(view.count); // the trees read on the way are dead (as many as the index is large)
  const indexMtime = statMtime(indexPath(gitdir)); // if the index changed since it was read, commitIndex refuses anyway
  const exactFrom = fromTree !== null && view.rootTree === fromTree;
  return { dir, gitdir, from: diff.from, to, changed: diff.changed, index: new EditedIndex(view), exactFrom, indexSum: indexChecksum(buf), indexMtime, toOid, dirs: new RealDirs() };
}

/** The changed paths of two flat trees, with their old versions (diffTrees's answer, the slow way). */
function flatDiff(from: Map<string, string>, to: Map<string, string>): { from: Map<string, string>; changed: string[] } {
  const out = { from: new Map<string, string>(), changed: [] as string[] };
  for (const [p, v] of to) if (from.get(p) !== v) out.changed.push(p);
  for (const p of from.keys()) if (!to.has(p)) out.changed.push(p);
  for (const p of out.changed) {
    const was = from.get(p);
    if (was !== undefined) out.from.set(p, was);
  }
  return out;
}

/** A directory where the move puts a file: fine if everything in it is a file the move removes. */
function holdsOnlyRemovals(plan: Plan, rel: string): boolean {
  if (!parentsOf(plan.dir, rel, plan.dirs).ok) return false;
  const walk = (sub: string): boolean => {
    for (const d of fs.readdirSync(join(plan.dir, sub), { withFileTypes: true })) {
      const p = `${sub}/${d.name}`;
      if (d.isDirectory() ? !walk(p) : !plan.from.has(p) || plan.to.has(p)) return false;
    }
    return true;
  };
  try {
    return walk(rel);
  } catch {
    return false;
  }
}

function statMtime(path: string): number {
  try {
    return fs.statSync(path).mtimeMs;
  } catch {
    return 0; // no index: every entry counts as racy (an entry's mtime is never before the epoch)
  }
}

/**
 * As git's write_index (ce_smudge_racily_clean_entry): an entry carried over
 * from the old index (not written by this move) that was racy against it,
 * and whose file no longer holds its content, gets size 0. The new index is
 * written later, so the entry would stop being racy there, and an edit its
 * stat data hides (a same-size change in the tick the stat was taken in)
 * would be clean for good; with size 0, git and grex hash the file again.
 */
function smudgeRacy(plan: Plan, filemode: boolean): void {
  const second = Math.floor(plan.indexMtime / 1000);
  // Entries the move wrote or removed are edits; every other is one of the old index's, untouched.
  const view = plan.index.view;
  const gc = new Collector(); // a racy entry's file may be read and hashed: its content is garbage after
  for (const i of plan.index.untouched()) {
    if (view.field(i, 8) < second || view.field(i, 36) === 0 || view.mode(i) === GITLINK) continue; // not racy, or nothing to smudge
    gc.add(PER_OBJECT_GARBAGE + view.field(i, 36));
    const e = view.entry(i);
    const p = e.path;
    if (e.flags && e.flags & (SKIP_WORKTREE | ASSUME_VALID)) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(join(plan.dir, p));
    } catch {
      continue; // gone: a deletion shows without hashing
    }
    // Other stat data is a change without hashing: git smudges only entries whose stat data still matches (ce_match_stat_basic).
    if (statDataMatches(e, st) && fileChanged(plan.dir, e, filemode, plan.indexMtime)) plan.index.set(p, { ...copyEntry(e), size: 0 });
  }
}

/** The `.gitattributes` files of a flat tree, as attributePaths takes them (no array per entry for the rest). */
function* gitattributesOf(tree: Map<string, string>): Generator<[string, number, string]> {
  for (const [p, v] of tree) {
    if (p !== ".gitattributes" && !p.endsWith("/.gitattributes")) continue;
    const { mode, oid } = parse(v);
    yield [p, mode, oid];
  }
}

/** Paths whose local state the move would destroy (git's "would be overwritten"). */
function conflicts(plan: Plan, resuming: boolean): string[] {
  const filemode = readConfigValueSync(plan.dir, "core", null, "filemode") !== "false";
  const indexMtime = plan.indexMtime;
  const sparse = resuming ? SparseCheckout.of(plan.gitdir) : null;
  const out: string[] = [];
  for (const p of plan.changed) {
    const was = plan.from.get(p);
    const will = plan.to.get(p);
    if (resuming) {
      // Either version is the move's own work; anything else is someone's edit.
      const now = onDisk(plan.dir, p);
      if (now === null && sparse && !sparse.includes(p)) continue; // outside a sparse checkout: absent by design
      if (now === "dir" && was === undefined && holdsOnlyRemovals(plan, p)) continue;
      if (!sameVersion(now, was, filemode) && !sameVersion(now, will, filemode)) out.push(p);
      continue;
    }
    const e = plan.index.get(p);
    if (was === undefined) {
      // Added by the move: nothing may be in the way (an identical file is fine).
      if (e !== undefined) out.push(p);
      else {
        const now = onDisk(plan.dir, p);
        if (now === "dir" ? !holdsOnlyRemovals(plan, p) : now !== null && !sameVersion(now, will, filemode)) out.push(p);
      }
      continue;
    }
    if (e === undefined || `${e.mode} ${e.oid}` !== was) out.push(p); // staged change
    else if (e.flags && e.flags & SKIP_WORKTREE && onDisk(plan.dir, p) === null) continue; // sparse: absent by design
    else if (e.mode !== GITLINK && fileChanged(plan.dir, e, filemode, indexMtime)) out.push(p);
  }
  // A file (untracked, or tracked and kept) where the move needs a directory.
  for (const p of plan.changed) {
    if (!plan.to.has(p)) continue;
    for (let d = dirname(p); d !== "."; d = dirname(d)) {
      if (plan.dirs.has(d)) break;
      let st: fs.Stats;
      try {
        st = fs.lstatSync(join(plan.dir, d));
      } catch {
        continue;
      }
      if (st.isDirectory()) break;
      if (plan.to.has(d) || !plan.from.has(d)) out.push(d);
      break;
    }
  }
  return [...new Set(out)];
}

/** An entry's fields as a plain object (a view's are getters, which a spread would not copy). */
function copyEntry(e: IndexEntry): IndexEntry {
  const { path, mode, oid, size, ctimeSeconds, ctimeNanoseconds, mtimeSeconds, mtimeNanoseconds, dev, ino, uid, gid, stage, flags } = e;
  return { path, mode, oid, size, ctimeSeconds, ctimeNanoseconds, mtimeSeconds, mtimeNanoseconds, dev, ino, uid, gid, stage, flags };
}

async function readBlob(store: ObjectStore, gitdir: string, oid: string): Promise<Buffer> {
  return Buffer.from(await readBlobBytes(store, gitdir, oid));
}

/**
 * A path the move writes whose leading directory is a symbolic link on disk
 * that the move itself does not remove first: writing it would go through the
 * link (out of the work tree, or into .git). Null when every path is safe.
 */
function linkOnTheWay(plan: Plan): { path: string; link: string } | null {
  for (const p of plan.changed) {
    if (!plan.to.has(p)) continue;
    const at = parentsOf(plan.dir, p, plan.dirs);
    if (!("link" in at)) continue;
    const was = plan.from.get(at.link);
    const removed = was !== undefined && !plan.to.has(at.link) && parse(was).mode === 0o120000;
    if (!removed) return { path: p, link: at.link };
  }
  return null;
}

async function apply(plan: Plan, filemode: boolean, resuming: boolean): Promise<void> {
  const { dir, gitdir, dirs } = plan;
  const removals = plan.changed.filter((p) => !plan.to.has(p));
  const writes = plan.changed.filter((p) => plan.to.has(p));
  for (const p of removals) {
    const was = parse(plan.from.get(p) as string);
    if (was.mode === GITLINK) {
      // An empty submodule directory goes; a populated one (someone's clone) stays.
      if (parentsOf(dir, p, dirs).ok) {
        try {
          fs.rmdirSync(join(dir, p));
          dirs.forget(p);
        } catch {
          // not empty, or already gone
        }
      }
    } else removeEntry(dir, p, dirs);
    removeEmptyParents(dir, p, dirs);
  }
  // A sparse checkout: paths outside its patterns stay out of the work tree (skip-worktree in the index).
  const sparse = SparseCheckout.of(gitdir);
  const outside = new Set(sparse ? writes.filter((p) => !sparse.includes(p)) : []);
  const madeLinks = new Set<string>(); // gitlinks whose directory this update creates
  const store = new ObjectStore(gitdir);
  let conv: Conversion | null = null;
  try {
    // gitattributes of the target tree: line endings and filters for each written file (convert.ts).
    const attrFiles = attributePaths(gitattributesOf(plan.to));
    for (const [p, o] of attrFiles) attrFiles.set(p, (await readBlob(store, gitdir, o)).toString("utf8"));
    conv = Conversion.forTree(dir, gitdir, attrFiles);
    for (const p of writes) {
      if (outside.has(p)) {
        removeEntry(dir, p, dirs); // was in the work tree; local changes were ruled out above
        removeEmptyParents(dir, p, dirs);
        continue;
      }
      const { mode, oid } = parse(plan.to.get(p) as string);
      if (mode === GITLINK) {
        if (!fs.existsSync(join(dir, p))) madeLinks.add(p);
        makeParents(dir, `${p}/x`, dirs); // the empty directory where the submodule would go
        continue;
      }
      if (resuming && sameVersion(onDisk(dir, p), plan.to.get(p), filemode)) continue; // written before the interruption
      let blob: Buffer;
      try {
        blob = await readBlob(store, gitdir, oid);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        throw missingObject(`the file '${p}' of commit ${plan.toOid.slice(0, 12)}`, readConfigValueSync(dir, "remote", "origin", "url"));
      }
      // A directory where the file goes (it held only removed files): gone by now, or the rename fails.
      writeEntry(dir, p, tempNameOf(p), mode, mode === 0o120000 ? blob : await conv.smudge(p, blob), dirs); // gitattributes conversion
    }
  } finally {
    conv?.close(); // a long-running filter process serves the whole checkout, then exits
    store.close();
  }
  // The index: untouched entries keep their stat data; changed ones get fresh stats.
  for (const p of removals) plan.index.delete(p);
  for (const p of writes) {
    const { mode, oid } = parse(plan.to.get(p) as string);
    if (outside.has(p)) {
      plan.index.set(p, { ...entryFor(p, mode, oid, null), flags: SKIP_WORKTREE });
      continue;
    }
    // As git's checkout: a gitlink whose directory it made records that directory's stat data (size 4096 on ext4, …);
    // one whose directory was already there (a moved submodule) is left with none, as git leaves it.
    const st = mode !== GITLINK || madeLinks.has(p) ? fs.lstatSync(join(dir, p)) : null;
    plan.index.set(p, entryFor(p, mode, oid, st));
  }
  smudgeRacy(plan, filemode);
  const entries = plan.index.entries();
  // When the index is now exactly the target commit, say so (cache-tree): later dirty checks skip reading its trees.
  // An index that was exactly the old commit is, after the move, exactly the new one; any other is compared entry by entry.
  const exact = entries.length === plan.to.size && (plan.exactFrom || entries.every((e) => plan.to.get(e.path) === `${e.mode} ${e.oid}`));
  const cacheTree = exact ? withStore(gitdir, (s) => cacheTreeOf(s, plan.toOid)) : null;
  collectAfter(plan.index.view.count); // what the writes and the trees read left goes before the index is built
  await commitIndex(gitdir, dir, plan.indexSum, entries, cacheTree ?? undefined);
}

/**
 * Move the work tree and index of `dir` from commit `from` (HEAD) to `to`,
 * journaled; refs are the caller's (then `clearJournal`). Returns false, having
 * touched nothing, when the index is one we do not handle (the caller falls
 * back to a full checkout).
 */
export async function checkoutDiff(dir: string, gitdir: string, from: string, to: string, branch: string | null, verified?: Map<string, string>): Promise<boolean> {
  const plan = await makePlan(dir, gitdir, from, to, verified);
  if (!plan) return false;
  const link = linkOnTheWay(plan);
  if (link) throw beyondLink(dir, link.path, link.link);
  const bad = conflicts(plan, false);
  if (bad.length > 0) {
    throw packOpError(
      `moving ${dir} to ${to.slice(0, 7)} would overwrite local changes (${bad.slice(0, 3).join(", ")}); commit or stash them, then sync again.`,
      { dir },
    );
  }
  writeJournal(gitdir, { from, to, branch });
  await apply(plan, readConfigValueSync(dir, "core", null, "filemode") !== "false", false);
  return true;
}

/**
 * Finish a move an interrupted process left journaled: files, index, refs,
 * then the journal goes. A path that shows neither version was edited by
 * someone since: nothing is overwritten, and the error says which.
 */
export async function resumeCheckout(dir: string, gitdir: string, j: CheckoutJournal): Promise<void> {
  let plan: Plan | null;
  try {
    plan = await makePlan(dir, gitdir, j.from, j.to);
  } catch (err) {
    if (!(err instanceof UnsafeTreeError)) throw err;
    // A move toward a tree grex now refuses (journaled by an older version): back to HEAD's tree, then the refusal.
    await rollBack(dir, gitdir, j);
    throw err;
  }
  if (!plan) throw packOpError(`${dir} has an interrupted update whose index cannot be read; check it with git status.`, { dir });
  for (const p of plan.changed) if (parentsOf(dir, p, plan.dirs).ok) fs.rmSync(join(dir, tempNameOf(p)), { recursive: true, force: true });
  const link = linkOnTheWay(plan);
  if (link) throw beyondLink(dir, link.path, link.link);
  const bad = conflicts(plan, true);
  if (bad.length > 0) {
    throw packOpError(
      `${dir} has an interrupted update, and ${bad.slice(0, 3).join(", ")} changed since; commit or stash those changes, then sync again.`,
      { dir },
    );
  }
  await apply(plan, readConfigValueSync(dir, "core", null, "filemode") !== "false", true);
  if (j.branch !== null) {
    writeRefSync(gitdir, `refs/heads/${j.branch}`, j.to);
    writeRefSync(gitdir, "HEAD", `ref: refs/heads/${j.branch}`);
  } else writeRefSync(gitdir, "HEAD", j.to);
  clearJournal(gitdir);
}

/** Undo a journaled move: every path it changed shows HEAD's (`from`) version again; refs never moved. */
async function rollBack(dir: string, gitdir: string, j: CheckoutJournal): Promise<void> {
  const plan = await makePlan(dir, gitdir, j.to, j.from);
  if (!plan) throw packOpError(`${dir} has an interrupted update whose index cannot be read; check it with git status.`, { dir });
  for (const p of plan.changed) if (parentsOf(dir, p, plan.dirs).ok) fs.rmSync(join(dir, tempNameOf(p)), { recursive: true, force: true });
  const bad = conflicts(plan, true);
  if (bad.length > 0) {
    throw packOpError(`${dir} has an interrupted update, and ${bad.slice(0, 3).join(", ")} changed since; commit or stash those changes, then sync again.`, { dir });
  }
  await apply(plan, readConfigValueSync(dir, "core", null, "filemode") !== "false", true);
  clearJournal(gitdir);
}
