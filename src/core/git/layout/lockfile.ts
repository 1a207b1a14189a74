// git's lock files (lockfile.h): to replace a file of a repository, create
// `<file>.lock` exclusively (O_CREAT|O_EXCL), write the new content into it,
// fsync, and rename it over the file. A second writer — another grex, or a
// git command in the same repository — fails to create the lock and so never
// overwrites the first one's work; a lock someone else holds is never removed.
//
// A lock grex holds is removed when the process exits (normally, or on an
// uncaught error); only a kill leaves one behind, and then, as with git's,
// the sentence that reports it says how to remove it.
import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { GrexError } from "../../base/errors.ts";
import { fsyncDir } from "../../fs/fsutil.ts";

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
    let fd: number;
    try {
      fd = openSync(lockPath, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o666);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return null;
      throw err;
    }
    held.add(lockPath);
    if (!exitHook) {
      exitHook = true;
      process.on("exit", () => {
        for (const p of held) rmSync(p, { force: true });
      });
    }
    return new LockFile(path, lockPath, fd);
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

  /** Write `data` as the file's new content and fsync it (not yet visible: `commit` makes it so). */
  write(data: Uint8Array): void {
    if (this.fd === null) throw new Error(`lock ${this.lockPath} is no longer held`);
    let off = 0;
    while (off < data.length) off += writeSync(this.fd, data, off, data.length - off);
    fsyncSync(this.fd);
  }

  /** Rename the lock over the file: readers see the old content or the new, never a part. */
  commit(): void {
    if (this.fd === null) throw new Error(`lock ${this.lockPath} is no longer held`);
    closeSync(this.fd);
    this.fd = null;
    try {
      renameSync(this.lockPath, this.path);
    } catch (err) {
      rmSync(this.lockPath, { force: true });
      held.delete(this.lockPath);
      throw err;
    }
    held.delete(this.lockPath);
    fsyncDir(dirname(this.path));
  }

  /** Let go without changing the file. Safe to call after `commit` (then it does nothing). */
  rollback(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    rmSync(this.lockPath, { force: true });
    held.delete(this.lockPath);
  }
}

/** One sentence for a lock file another process holds. */
export function lockHeld(lockPath: string, what: string, waitedMs: number): GrexError {
  const waited = waitedMs > 0 ? ` (waited ${waitedMs >= 1000 ? `${(waitedMs / 1000).toFixed(1)} s` : `${waitedMs} ms`})` : "";
  return new GrexError(
    "lock",
    `another process holds ${lockPath}, the lock on ${what}${waited}, and grex changed nothing there; let that git command finish, or if none is running remove the file, then run grex again.`,
    { path: lockPath },
  );
}
