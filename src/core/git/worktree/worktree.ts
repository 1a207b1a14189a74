// Work-tree fast paths that isomorphic-git's generic walker makes slow:
//  - checkoutFresh: write a commit's files into an empty work tree and the
//    matching index in one pass (every clone does this);
//  - isDirtyFast: "is anything uncommitted?" from the index stats, one
//    readdir per tracked directory and HEAD's trees, hashing a file only when
//    its stat changed, untracked files judged by git's ignore rules
//    (ignore-rules.ts). It reads every index form git writes (index-file.ts)
//    and answers null only when it cannot (a damaged index, unborn HEAD);
//    the caller then asks isomorphic-git's statusMatrix instead.
//    For reports it may use the status cache (status-cache.ts): a stat
//    instead of a readdir for a directory known to hold only tracked
//    entries, and HEAD's tree without opening the object store.
import * as fs from "node:fs";
import { join } from "node:path";
import { readGitdirConfigValue } from "../refs/config.ts";
import { ASSUME_VALID, entryFor, INTENT_TO_ADD, type IndexEntry, type IndexRead, readIndexForStatus, type SharedIndexReader, SKIP_WORKTREE, sharedIndexIn } from "../objects/index-file.ts";
import { IndexView } from "../objects/index-view.ts";
import { IgnoreRules } from "./ignore-rules.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { flatTree } from "../objects/tree-read.ts";
import { Collector, PER_OBJECT_GARBAGE } from "../objects/garbage.ts";
import { hashWorktreeFile } from "./convert.ts";
import { submoduleState } from "./submodule-status.ts";
import { journaledPathsFor, onDisk, readJournal, sameVersion, tempNameOf } from "./checkout-journal.ts";
import { gitdirOf, resolveRefSync } from "../refs/refs.ts";
import { type DirStamp, type FileStamp, fileStampOf, indexKey, readStatusCache, sameFileStamp, sameStamp, settled, stampOf, type StatusCache, writeStatusCache } from "./status-cache.ts";
import { indexPath, isGitDirectory } from "../layout/layout.ts";

const GITLINK = 0o160000;
const SYMLINK = 0o120000;

function sameTime(s1: number, n1: number, ms: number): boolean {
  // statTimes(ms) inline: this runs for every tracked file of every status.
  const s2 = Math.floor(ms / 1000);
  // git records true nanoseconds, isomorphic-git whole microseconds of a float: allow for both.
  return s1 === s2 && Math.abs(n1 - Math.floor((ms - s2 * 1000) * 1000000)) < 1000;
}

/** The file's stat data is what the index recorded (git's ce_match_stat_basic: size, inode, mtime, ctime). */
export function statDataMatches(e: IndexEntry, st: fs.Stats): boolean {
  return (
    st.size % 2 ** 32 === e.size &&
    st.ino % 2 ** 32 === e.ino &&
    sameTime(e.mtimeSeconds, e.mtimeNanoseconds, st.mtimeMs) &&
    sameTime(e.ctimeSeconds, e.ctimeNanoseconds, st.ctimeMs)
  );
}

/**
 * Files hashed before (status-cache.ts): `known` is what the cache holds,
 * `proven` collects this check's files shown to hold their entry's content
 * (for the next cache), `now` decides which are settled enough to remember.
 */
export interface HashProofs {
  known: Record<string, FileStamp>;
  proven: Map<string, FileStamp>;
  now: number;
}

/**
 * Does the work tree file differ from its index entry? `filemode` may be asked
 * lazily: only a mode change needs it. With `proofs`, a file whose stat data
 * no longer vouches for it is hashed only if the cache has not seen it, with
 * this very stat data, hold the entry's content.
 */
export function fileChanged(dir: string, e: IndexEntry, filemode: boolean | (() => boolean), racyAfterMs: number, proofs?: HashProofs): boolean {
  const abs = `${dir}/${e.path}`;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(abs); // without options: measurably cheaper per call on this hot path
  } catch {
    return true; // deleted, or a parent is no longer a directory
  }
  // The type bits straight from st.mode: cheaper than isSymbolicLink()/isFile() on this hot path.
  const stMode = st.mode;
  const type = stMode & 0o170000;
  let mode: number;
  if (type === SYMLINK) mode = SYMLINK;
  else if (type === 0o100000) mode = stMode & 0o111 ? 0o100755 : 0o100644;
  else return true; // replaced by a directory or something else
  const want = e.mode;
  if (mode !== want && (mode === SYMLINK || want === SYMLINK || (typeof filemode === "boolean" ? filemode : filemode()))) return true;
  const mtimeSeconds = e.mtimeSeconds;
  // An entry not older than the index itself may hide a same-size edit made in the same tick. As
  // git built for Linux decides it (is_racy_stat without USE_NSEC): by whole seconds, so an entry
  // whose mtime falls in the index's second is hashed even when the index was written after it.
  const racy = mtimeSeconds >= Math.floor(racyAfterMs / 1000);
  if (!racy && statDataMatches(e, st)) return false;
  // Another size than checkout wrote is a change without hashing, as in git (ie_modified): with
  // line-ending conversion, content that cleans to the same blob still reads as modified there.
  if (e.size !== 0 && st.size % 2 ** 32 !== e.size) return true;
  // The hash git computes: after the clean conversion the file's attributes ask for (convert.ts).
  const hashed = () => hashWorktreeFile(dir, gitdirOf(dir), e.path, abs, st, e.oid);
  if (!proofs) return hashed() !== e.oid;
  const stamp = fileStampOf(st);
  if (!(Object.hasOwn(proofs.known, e.path) && sameFileStamp(proofs.known[e.path], stamp))) {
    if (hashed() !== e.oid) return true;
    if (!settled(st, proofs.now)) return false; // an edit in the same tick could still keep this stat data
  }
  proofs.proven.set(e.path, stamp);
  return false;
}

export function isRepository(path: string): boolean {
  const gitdir = gitdirOf(path);
  return gitdir !== null && isGitDirectory(gitdir);
}

/** The index file's bytes and mtime, read through one descriptor so both describe the same file; null if absent. */
export function readIndexFile(gitdir: string): { buf: Buffer; mtimeMs: number } | null {
  let fd: number;
  try {
    fd = fs.openSync(indexPath(gitdir), "r");
  } catch {
    return null;
  }
  try {
    return { mtimeMs: fs.fstatSync(fd).mtimeMs, buf: fs.readFileSync(fd) };
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

const parentOf = (rel: string): string => rel.slice(0, Math.max(0, rel.lastIndexOf("/")));

/** The tracked paths a listing compares a directory's entries with: an index view, or entries already read. */
export interface TrackedPaths {
  readonly count: number;
  path(i: number): string;
  /** Whether `path` is tracked (any stage). */
  has(path: string): boolean;
}

/** Entries already read (in index order) as TrackedPaths. */
export function trackedOf(entries: IndexEntry[]): TrackedPaths {
  let set: Set<string> | null = null;
  return {
    count: entries.length,
    path: (i) => (entries[i] as IndexEntry).path,
    has: (p) => (set ??= new Set(entries.map((e) => e.path))).has(p),
  };
}

/** Every directory holding a tracked path, as parent → its tracked subdirectories ("" is the root). */
function trackedDirTree(entries: TrackedPaths): Map<string, string[]> {
  const tree = new Map<string, string[]>([["", []]]);
  let last = "";
  for (let i = 0; i < entries.count; i++) {
    const d = parentOf(entries.path(i));
    if (d === last) continue; // entries are sorted: a directory's files come together
    last = d;
    const missing: string[] = [];
    for (let c = d; c !== "" && !tree.has(c); c = parentOf(c)) missing.push(c);
    for (const c of missing.reverse()) {
      tree.set(c, []);
      (tree.get(parentOf(c)) as string[]).push(c);
    }
  }
  return tree;
}

interface Listing {
  untracked: Array<{ rel: string; isDir: boolean }>;
  /** The directories that held only tracked entries and are old enough to be remembered (status-cache.ts). */
  stamps: Map<string, DirStamp>;
  /** How many directories hold a tracked path. */
  dirCount: number;
}

/**
 * Entries the index does not know, in every directory holding a tracked path
 * (and reached through directories): a directory is listed unless `known`
 * holds its current stamp, meaning it held only tracked entries when last
 * listed and has gained or lost none since.
 */
export function listUntracked(dir: string, tracked: TrackedPaths, known: Record<string, DirStamp>, moveOwns: ((rel: string) => boolean) | null): Listing {
  const dirTree = trackedDirTree(tracked);
  const out: Listing = { untracked: [], stamps: new Map(), dirCount: dirTree.size };
  const now = Date.now();
  // A listing leaves its directory entries and their paths behind: collected as they pile up (garbage.ts).
  const gc = new Collector();
  const scan = (rel: string) => {
    const abs = rel ? `${dir}/${rel}` : dir;
    let st: fs.Stats;
    try {
      st = rel ? fs.lstatSync(abs) : fs.statSync(abs);
    } catch (err) {
      if (!rel) throw err; // the work tree itself is gone: not a question of untracked files
      return; // gone since its parent was listed (its files already counted as changed)
    }
    if (!st.isDirectory()) return;
    const stamp = stampOf(st);
    const subdirs = dirTree.get(rel) as string[];
    if (Object.hasOwn(known, rel) && sameStamp(known[rel], stamp)) {
      out.stamps.set(rel, stamp);
      for (const d of subdirs) scan(d);
      return;
    }
    const before = out.untracked.length;
    const into: string[] = [];
    for (const d of fs.readdirSync(abs, { withFileTypes: true })) {
      gc.add(PER_OBJECT_GARBAGE); // the entry, its name, its path, the path's bytes looked up
      if (d.name === ".git") continue;
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (tracked.has(p) || (!d.isDirectory() && moveOwns?.(p))) continue;
      if (d.isDirectory() && dirTree.has(p)) into.push(p);
      else out.untracked.push({ rel: p, isDir: d.isDirectory() });
    }
    if (out.untracked.length === before && settled(st, now)) out.stamps.set(rel, stamp);
    for (const d of into) scan(d);
  };
  scan("");
  return out;
}

/** Every remembered directory is still a directory with the same stamp. */
function unchangedDirs(dir: string, known: Record<string, DirStamp>): boolean {
  for (const rel of Object.keys(known)) {
    let st: fs.Stats;
    try {
      st = rel ? fs.lstatSync(`${dir}/${rel}`) : fs.statSync(dir);
    } catch {
      return false;
    }
    if (!st.isDirectory() || !sameStamp(known[rel], stampOf(st))) return false;
  }
  return true;
}

/** The cache's record (`a`) holds exactly this check's stamps (`b`). */
function sameStamps<S>(a: Record<string, S>, b: Map<string, S>, same: (x: unknown, y: S) => boolean): boolean {
  if (Object.keys(a).length !== b.size) return false;
  for (const [k, v] of b) if (!Object.hasOwn(a, k) || !same(a[k], v)) return false;
  return true;
}

export interface DirtyCheckOptions {
  /**
   * The status cache file to read and update (status-cache.ts); with it the
   * index checksum is not verified either. For reports: checks that guard
   * work from being overwritten or deleted leave it out and prove everything.
   */
  statusCache?: string;
  /** HEAD's commit, when the caller has just read it (saves reading it again). */
  head?: string;
  /** The git dir, when the caller has just resolved it (saves looking again). */
  gitdir?: string;
}

const DIRECTORY = 0o040000;

/**
 * A sparse index names whole directories outside the sparse cone (one entry,
 * the directory's tree, skip-worktree); the checks below want files, so those
 * entries are replaced by the files of their trees, as git expands the index
 * when it must. null when a tree cannot be read.
 */
export function expandSparse(index: IndexRead, gitdir: string): IndexEntry[] | null {
  if (!index.sparseDirs) return index.entries;
  const store = new ObjectStore(gitdir);
  try {
    const out: IndexEntry[] = [];
    const walk = (oid: string, prefix: string): boolean => {
      const tree = store.readTree(oid);
      if (!tree) return false;
      for (const t of tree) {
        const rel = prefix + t.name;
        if (t.mode === "040000") {
          if (!walk(t.oid, `${rel}/`)) return false;
        } else out.push({ ...entryFor(rel, Number.parseInt(t.mode, 8), t.oid, null), flags: SKIP_WORKTREE });
      }
      return true;
    };
    for (const e of index.entries) {
      if (e.mode !== DIRECTORY) out.push(e);
      else if (!walk(e.oid, e.path.endsWith("/") ? e.path : `${e.path}/`)) return null;
    }
    // Tree order puts "a/" where "a" would sort; the index sorts by the full path.
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.stage - b.stage));
  } finally {
    store.close();
  }
}

/** A sparse index with its directory entries expanded (expandSparse), viewed; null when a tree cannot be read. */
function expandedView(buf: Buffer, shared: SharedIndexReader, gitdir: string): IndexView | null {
  const read = readIndexForStatus(buf, shared, false);
  const entries = read && expandSparse(read, gitdir);
  return read && entries ? IndexView.fromRead({ entries, rootTree: read.rootTree, sparseDirs: false }) : null;
}

/** true = dirty, false = clean, null = could not tell (use statusMatrix). */
export async function isDirtyFast(dir: string, gitdir: string, opts: DirtyCheckOptions = {}): Promise<boolean | null> {
  const file = readIndexFile(gitdir);
  if (!file) return null;
  const shared = sharedIndexIn(gitdir);
  // Entries are only read here: viewed in the index's bytes (index-view.ts); the checksum is verified unless this is a report.
  const view = IndexView.of(file.buf, shared, !opts.statusCache);
  const head = opts.head ?? resolveRefSync(gitdir, "HEAD");
  if (!view || !head) return null;
  const index = view.sparseDirs ? expandedView(file.buf, shared, gitdir) : view;
  if (!index) return null;
  // An unresolved merge conflict, or a `git add -N` entry (git status lists it as added): changes either way.
  for (let i = 0; i < index.count; i++) if (index.stage(i) !== 0 || index.flags(i) & INTENT_TO_ADD) return true;

  let filemodeValue: boolean | undefined;
  const filemode = () => (filemodeValue ??= readGitdirConfigValue(gitdir, "core", null, "filemode") !== "false");
  // An interrupted update (checkout-diff.ts): its paths may show either version, and its temp files are its own.
  // readJournal first: the usual answer (none) costs one existsSync and no await.
  const journal = readJournal(gitdir) === null ? null : await journaledPathsFor(gitdir);
  const temps = new Set(journal ? [...journal.keys()].map(tempNameOf) : []);
  const moveOwns = (rel: string) =>
    temps.has(rel) || (journal?.get(rel)?.some((v) => sameVersion(onDisk(dir, rel), v, filemode())) ?? false);
  // Mid-move the cache is neither read nor written: the move's own files make every answer provisional.
  const cacheFile = journal ? undefined : opts.statusCache;
  const key = cacheFile ? indexKey(file.buf) : null;
  const cache = cacheFile && key ? readStatusCache(cacheFile) : null;

  // 1. Tracked files against their index entries (hashes the cache already proved are not repeated).
  const proofs: HashProofs | undefined = cacheFile && key ? { known: cache?.index === key ? cache.hashed : {}, proven: new Map(), now: Date.now() } : undefined;
  const populated: string[] = []; // initialised submodules at the recorded commit: their own work is looked at below
  const racySecond = Math.floor(file.mtimeMs / 1000);
  // Each entry leaves garbage once compared: its view, its path twice (relative and absolute), its stat, and, when hashed, its content.
  const gc = new Collector();
  for (let i = 0; i < index.count; i++) {
    gc.add(PER_OBJECT_GARBAGE);
    const e = index.entry(i);
    if (e.mode === GITLINK) {
      // An initialised submodule at another commit than recorded is a change, as git status shows it; so is
      // a gitlink's directory deleted or replaced, even the empty one of an uninitialised submodule.
      const state = submoduleState(dir, e.path, e.oid);
      if (state === "moved" || state === "gone") return true;
      if (state === "same") populated.push(e.path);
      continue;
    }
    // Sparse checkout's skip-worktree and assume-unchanged entries: git does not look at the file, nor do we.
    if (e.flags && e.flags & (SKIP_WORKTREE | ASSUME_VALID)) continue;
    if (journal?.has(e.path)) {
      if (!moveOwns(e.path)) return true;
    } else if (fileChanged(dir, e, filemode, file.mtimeMs, proofs)) return true;
    else if (e.mtimeSeconds >= racySecond) gc.add(e.size); // racy: its content may have been read and hashed
  }

  // A submodule with changes of its own is modified content for git status (` m path`).
  for (const rel of populated) {
    const sub = join(dir, rel);
    const subGitdir = gitdirOf(sub);
    if (subGitdir && (await isDirtyFast(sub, subGitdir)) === true) return true;
  }

  // 2. Files the index does not know: collected now, judged against .gitignore below.
  // A directory is listed unless the cache shows it unchanged since it held only tracked entries.
  const known = cache?.index === key ? cache.dirs : {};
  // null: every directory with a tracked path is remembered and as it was, so nothing new is anywhere.
  const listed = cache?.complete && cache.index === key && unchangedDirs(dir, known) ? null : listUntracked(dir, index, known, journal ? moveOwns : null);
  const untracked = listed?.untracked ?? [];

  // 3. The index against HEAD's commit: staged changes. A valid cache-tree
  // names the tree the index amounts to: one commit read instead of every tree.
  let store: ObjectStore | null = null;
  let headTree: string | null = null;
  let tree: Map<string, string> | null = null; // null: the cache-tree already showed the index is HEAD's tree
  try {
    if (!journal && index.rootTree) {
      headTree = cache?.commit === head ? cache.tree : (store ??= new ObjectStore(gitdir)).readCommit(head)?.tree ?? null;
    }
    if (headTree !== null) {
      if (headTree !== index.rootTree) return true;
    } else tree = await flatTree(gitdir, head, (store ??= new ObjectStore(gitdir)));
  } finally {
    store?.close();
  }
  if (journal && tree) {
    // Mid-move, the index may hold either version of the move's paths; every other path must match HEAD.
    for (const e of index.entries()) if (!journal.has(e.path) && tree.get(e.path) !== `${e.mode} ${e.oid}`) return true;
    for (const p of tree.keys()) if (!journal.has(p) && !index.has(p)) return true;
  } else if (tree) {
    if (tree.size !== index.count) return true;
    for (const e of index.entries()) if (tree.get(e.path) !== `${e.mode} ${e.oid}`) return true;
  }
  if (cacheFile && key) rememberStatus(cacheFile, { key, cache, commit: headTree === null ? null : head, tree: headTree, listed, known, proven: (proofs as HashProofs).proven });

  // 4. Untracked files count unless ignored.
  return untracked.length > 0 && untrackedCounts(dir, gitdir, untracked, journal ? moveOwns : null);
}

/** Whether any untracked path is not ignored; a directory is looked into only if it is not ignored itself. */
function untrackedCounts(dir: string, gitdir: string, untracked: Listing["untracked"], moveOwns: ((rel: string) => boolean) | null): boolean {
  const rules = new IgnoreRules(dir, gitdir);
  const pending = [...untracked];
  while (pending.length > 0) {
    const c = pending.pop() as { rel: string; isDir: boolean };
    if (!c.isDir) {
      if (!moveOwns?.(c.rel) && !rules.isIgnored(c.rel, false)) return true;
      continue;
    }
    if (rules.isIgnored(c.rel, true)) continue;
    if (isRepository(join(dir, c.rel))) return true; // an untracked repository inside: git lists it
    for (const d of fs.readdirSync(join(dir, c.rel), { withFileTypes: true })) {
      if (d.name === ".git") continue;
      pending.push({ rel: `${c.rel}/${d.name}`, isDir: d.isDirectory() });
    }
  }
  return false;
}

/** The status cache after a dirty check, rewritten only when it would say something new. */
function rememberStatus(
  cacheFile: string,
  now: {
    key: string;
    cache: StatusCache | null;
    commit: string | null;
    tree: string | null;
    listed: Listing | null;
    known: Record<string, DirStamp>;
    proven: Map<string, FileStamp>;
  },
): void {
  const { key, cache, commit, tree, listed, known, proven } = now;
  const complete = listed ? listed.stamps.size === listed.dirCount : true;
  const same =
    cache?.index === key &&
    cache.commit === commit &&
    cache.tree === tree &&
    cache.complete === complete &&
    (!listed || sameStamps(cache.dirs, listed.stamps, sameStamp)) &&
    sameStamps(cache.hashed, proven, sameFileStamp);
  if (same) return;
  const dirs = listed ? Object.fromEntries(listed.stamps) : known;
  writeStatusCache(cacheFile, { index: key, commit, tree, dirs, complete, hashed: Object.fromEntries(proven) });
}
