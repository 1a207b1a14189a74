// git's lock files (lockfile.h): to replace a file of a repository, create
// `<file>.lock` exclusively (O_CREAT|O_EXCL), write the new content into it,
// fsync, and rename it over the file. A second writer — another grex, or a
// git command in the same repository — fails to create the lock and so never
// overwrites the first one's work; a lock someone else holds is never removed.
//
// A lock grex holds is removed when the process exits (normally, or on an
// uncaught error). So that a kill cannot leave one stuck either, grex notes
// beside it, in `<file>.lock.grex` (`.grex.lock` under refs/), its pid and start time and the lock
// file's inode: a later grex finding a lock whose note names a process that
// is gone, and that very file, removes it (a lock git holds has no such note
// and is only ever waited for). Two grex processes never lock the same
// repository's file at once (the pack lock, core/locks), so the note is not
// contended. Inside a directory being made that a crash discards as a whole
// (`startNoteless`: a new linked worktree's registration, which stays locked
// "initializing" until it is complete and which the next run replaces), a
// lock is only created exclusively, as git does: nothing to note there.
import { closeSync, constants, existsSync, fstatSync, fsyncSync, linkSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { GrexError } from "../../base/errors.ts";
import { fsyncAsync, fsyncDir, fsyncDirAsync } from "../../fs/fsutil.ts";
import { deferFsync } from "./unpublished.ts";
import { holderAlive, selfStartTime } from "../../locks/flock.ts";

/** Locks this process holds, removed at exit so none outlives it. */
const held = new Set<string>();
let exitHook = false;

export interface LockWait {
  /** How long to wait for another holder to let go (ms); 0: fail at once. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** How long a lock held by someone else is waited for, by default: a git command's index or ref update takes milliseconds. */
export const DEFAULT_LOCK_WAIT_MS = 1000;

export class LockFile {
  private fd: number | null;
  /** Written without fsync (`write(data, false)`): committed without the directory's either. */
  private lazy = false;
  private constructor(
    /** The file the lock replaces. */
    readonly path: string,
    /** `<path>.lock`. */
    readonly lockPath: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** The lock on `path`, or null when another process holds it now. Other errors (no directory, no permission) are thrown. */
  static tryAcquire(path: string): LockFile | null {
    const lockPath = `${path}.lock`;
    const fd = createLock(lockPath);
    return fd === null ? null : new LockFile(path, lockPath, fd);
  }

  /**
   * The lock on `path`, waiting up to `timeoutMs` (with backoff) while another
   * process holds it; then a `lock` error naming the lock file. `what` names
   * the file for people ("the index of pack 'tools'").
   */
  static async acquire(path: string, what: string, wait: LockWait = {}): Promise<LockFile> {
    const timeout = wait.timeoutMs ?? DEFAULT_LOCK_WAIT_MS;
    const start = Date.now();
    let pause = 5;
    for (;;) {
      const lock = LockFile.tryAcquire(path);
      if (lock) return lock;
      wait.signal?.throwIfAborted();
      if (Date.now() - start >= timeout) throw lockHeld(`${path}.lock`, what, timeout);
      await Bun.sleep(Math.min(pause, Math.max(1, timeout - (Date.now() - start))));
      pause = Math.min(pause * 2, 100);
    }
  }

  /**
   * Write `data` as the file's new content and fsync it (not yet visible:
   * `commit` makes it so). `durable` false leaves out the fsync here and of
   * the directory at `commit`, as git writes a file core.fsync does not name
   * (the index, by default): a kill still leaves the old content or the new.
   */
  write(data: Uint8Array, durable = true): void {
    const fd = this.put(data, durable);
    if (durable && !deferFsync(this.path)) fsyncSync(fd);
  }

  /** `write`, its fsync on the I/O thread pool (the event loop goes on meanwhile). */
  async writeAsync(data: Uint8Array, durable = true): Promise<void> {
    const fd = this.put(data, durable);
    if (durable && !deferFsync(this.path)) await fsyncAsync(fd);
  }

  private put(data: Uint8Array, durable: boolean): number {
    if (this.fd === null) throw new Error(`lock ${this.lockPath} is no longer held`);
    let off = 0;
    while (off < data.length) off += writeSync(this.fd, data, off, data.length - off);
    if (!durable) this.lazy = true;
    return this.fd;
  }

  /** Rename the lock over the file: readers see the old content or the new, never a part. */
  commit(): void {
    this.publish();
    if (!this.lazy && !deferFsync(this.path)) fsyncDir(dirname(this.path));
  }

  /** `commit`, the directory's fsync on the I/O thread pool. */
  async commitAsync(): Promise<void> {
    this.publish();
    if (!this.lazy && !deferFsync(this.path)) await fsyncDirAsync(dirname(this.path));
  }

  private publish(): void {
    if (this.fd === null) throw new Error(`lock ${this.lockPath} is no longer held`);
    closeSync(this.fd);
    this.fd = null;
    try {
      renameSync(this.lockPath, this.path);
    } catch (err) {
      dropLock(this.lockPath);
      throw err;
    }
    forgetLock(this.lockPath);
  }

  /** Let go without changing the file. Safe to call after `commit` (then it does nothing). */
  rollback(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    dropLock(this.lockPath);
  }
}

/**
 * Create `lockPath` exclusively and note it as grex's: the one way every git
 * lock file grex takes is made (LockFile here, and git-lock.ts's sync helpers
 * for refs, HEAD, packed-refs and config). Returns its fd, or null when
 * another process holds it; a lock a dead grex left is removed first. Other
 * errors (no directory, no permission) are thrown.
 *
 * With a note there is no moment at which a kill leaves a lock without it:
 * the lock's inode is made first under a name of grex's own, the note naming
 * that inode is written, and only then does `link` give it the lock's name
 * (link fails when the name exists, as O_EXCL does). Beside a loose ref
 * (under refs/) both side files' names end in `.lock` too (sideName), which
 * git's reading of loose refs passes over, so a ref's lock a kill leaves is
 * removed by the next grex like every other one.
 */
export function createLock(lockPath: string): number | null {
  if (inNoteless(lockPath)) return createNoteless(lockPath);
  removeDeadStarts(lockPath);
  const start = sideName(lockPath, `${START}${process.pid}`);
  const fd = openSync(start, constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC, 0o666);
  const giveUp = () => {
    closeSync(fd);
    unlinkQuiet(start);
  };
  try {
    // Before our note replaces its: a lock a dead grex left is removed.
    if (existsSync(lockPath) && !removeIfStale(lockPath)) {
      giveUp();
      return null;
    }
    const st = fstatSync(fd);
    writeNote(sideName(lockPath, NOTE), JSON.stringify({ pid: process.pid, start: selfStartTime(), ino: st.ino, dev: st.dev }));
    linkSync(start, lockPath);
  } catch (err) {
    giveUp();
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    unlinkQuiet(sideName(lockPath, NOTE)); // ours, naming an inode that never became the lock
    return null;
  }
  unlinkQuiet(start);
  held.add(lockPath);
  watchExit();
  return fd;
}

/** Write a lock's note: one open (O_TRUNC), one write, one close (writeFileSync adds an ftruncate). */
function writeNote(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o666);
  try {
    const bytes = Buffer.from(text, "utf8");
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
  } finally {
    closeSync(fd);
  }
}

/** Remove `path`; one that is not there is no error (one unlink, where rmSync's force looks first). */
function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** Directories (ending in a separator) whose locks need no note: see startNoteless. */
const noteless = new Set<string>();
/** The locks taken in them that this process holds (no note to remove). */
const notelessHeld = new Set<string>();

/**
 * Locks taken under `dir` from now on are only created exclusively, with no
 * note and no start name: `dir` is being made, and a crash leaves it to be
 * discarded as a whole (a new linked worktree's registration, locked
 * "initializing" until complete, which the next run replaces), so a lock left
 * in it never stops anyone. `endNoteless` when it is complete or given up.
 */
export function startNoteless(dir: string): void {
  noteless.add(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/** Locks under `dir` carry their note again (startNoteless). */
export function endNoteless(dir: string): void {
  noteless.delete(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

function inNoteless(lockPath: string): boolean {
  if (noteless.size === 0) return false;
  for (const dir of noteless) if (lockPath.startsWith(dir)) return true;
  return false;
}

function createNoteless(lockPath: string): number | null {
  let fd: number;
  try {
    fd = openSync(lockPath, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return null;
    throw err;
  }
  held.add(lockPath);
  notelessHeld.add(lockPath);
  watchExit();
  return fd;
}

/** The name a lock's inode has before it becomes the lock: `<lock>.grex-start-<pid>`. */
const START = ".grex-start-";
/** The note naming a lock's holder: `<lock>.grex`. */
const NOTE = ".grex";

/**
 * A side file of `lockPath` (its note, its start name). Under refs/ the name
 * ends in `.lock` as well: git takes every other file there for a loose ref,
 * and passes over names ending in `.lock`.
 */
function sideName(lockPath: string, suffix: string): string {
  return /[\\/]refs[\\/]/.test(lockPath) ? `${lockPath}${suffix}.lock` : `${lockPath}${suffix}`;
}

/** Directories this process has cleared of dead start names already. */
const clearedDirs = new Set<string>();

/**
 * Start names a killed grex left (its pid gone) in the directory of
 * `lockPath`: removed, so they never pile up. Once per directory and process:
 * listing a directory for every lock taken in it would make writing n refs
 * into one directory (a clone's 20,000 tags) cost n² entries read; a kill
 * leaves at most one name, which the next process to lock there removes.
 */
function removeDeadStarts(lockPath: string): void {
  const dir = dirname(lockPath);
  if (clearedDirs.has(dir)) return;
  if (clearedDirs.size >= 4096) clearedDirs.clear(); // a long-running server locks in many directories over its life
  clearedDirs.add(dir);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.includes(START));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(n.slice(n.lastIndexOf(START) + START.length).replace(/\.lock$/, ""));
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !holderAlive({ pid, startTime: null, purpose: null })) unlinkQuiet(join(dir, n));
  }
}

/** Locks this process holds are removed when it exits, so none outlives it. */
function watchExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const p of held) {
      unlinkQuiet(p);
      if (!notelessHeld.has(p)) unlinkQuiet(sideName(p, NOTE));
    }
  });
}

/** The lock was renamed over its file: forget it and its note. */
export function forgetLock(lockPath: string): void {
  held.delete(lockPath);
  if (notelessHeld.delete(lockPath)) return;
  unlinkQuiet(sideName(lockPath, NOTE));
}

/** Let go of a lock grex created without renaming it: the lock and its note go. */
export function dropLock(lockPath: string): void {
  unlinkQuiet(lockPath);
  forgetLock(lockPath);
}

/** Remove `lockPath` if a grex that is gone left it (its note names a dead process and this very file); true when removed. */
function removeIfStale(lockPath: string): boolean {
  let note: { pid?: unknown; start?: unknown; ino?: unknown; dev?: unknown };
  try {
    note = JSON.parse(readFileSync(sideName(lockPath, NOTE), "utf8"));
    const st = statSync(lockPath);
    if (note.ino !== st.ino || note.dev !== st.dev) return false; // the note is of another lock: this one is not grex's
  } catch {
    return false; // no note (a git command's lock) or no lock any more (tryAcquire again decides)
  }
  const pid = typeof note.pid === "number" && Number.isInteger(note.pid) && note.pid > 0 ? note.pid : null;
  if (pid === null || pid === process.pid || holderAlive({ pid, startTime: typeof note.start === "string" ? note.start : null, purpose: null })) return false;
  unlinkQuiet(lockPath);
  unlinkQuiet(sideName(lockPath, NOTE));
  return true;
}

/**
 * The one sentence for a lock file another process holds, for every family
 * of git's locks grex takes (a ref, `HEAD`, `packed-refs`, the config, the
 * index, `shallow`): which lock, where, what to do. `what` names the locked
 * file for people ("the index of pack 'tools'"; by default its path in
 * `where`), `where` the repository directory the other process works in (by
 * default the lock's directory), `waitedMs` how long grex waited for it.
 */
export function lockHeld(lockPath: string, what: string | null, waitedMs: number, where: string = dirname(lockPath)): GrexError {
  const file = lockPath.replace(/\.lock$/, "");
  const inside = relative(where, file);
  const subject = what ?? (inside.startsWith("..") ? file : inside);
  const waited = waitedMs > 0 ? `, waited for ${waitedMs >= 1000 ? `${(waitedMs / 1000).toFixed(1)} s` : `${waitedMs} ms`}` : "";
  return new GrexError(
    "lock",
    `'${lockPath}' exists: another git or grex process is working in '${where}' on ${subject}${waited}; wait for it to finish, or remove '${lockPath}' if no git or grex process is running, then run grex again.`,
    { lock: lockPath, path: lockPath },
  );
}
