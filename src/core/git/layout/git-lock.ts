// git's lock files (lockfile.h): to change `<file>`, create `<file>.lock`
// exclusively (O_CREAT|O_EXCL), write the new content into it, then rename it
// over `<file>`. A second writer — grex or a git command running in the same
// repository — finds the lock already there and backs off instead of
// overwriting it. Like git, a lock that exists is waited for a short, bounded
// time (git's quadratic backoff with jitter), then reported in one sentence;
// grex never removes a lock it did not create (nor one a live grex holds; a
// dead grex's is recognised by its note: lockfile.ts `createLock`).
import { chmodSync, closeSync, existsSync, fsyncSync, renameSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { fsyncDir } from "../../fs/fsutil.ts";
import { deferFsync } from "./unpublished.ts";
import { createLock, dropLock, forgetLock, lockHeld } from "./lockfile.ts";

/** git's default waits: `core.filesRefLockTimeout` (100 ms) and `core.packedRefsTimeout` (1000 ms). */
export const REF_LOCK_TIMEOUT_MS = 100;
export const PACKED_REFS_LOCK_TIMEOUT_MS = 1000;

export interface GitLockOptions {
  /** How long to wait for a lock someone else holds (0: fail at once, as git does by default for config and index). */
  timeoutMs: number;
  /** fsync the new content and its directory before and after the rename. */
  fsync?: boolean;
  /** Keep the file mode of the file being replaced (git does for config files). */
  keepMode?: boolean;
  /** Where the user should look, named in the error (the repository's directory); the lock's own path otherwise. */
  where?: string;
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepMs(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

/**
 * Try `attempt` until it gives a result, waiting between tries as git's
 * lock_file_timeout does (backoff of about n² ms, ±25 %) for up to
 * `timeoutMs`; then the lock error.
 */
function withBackoff<T>(lockPath: string, opts: GitLockOptions, attempt: () => T | undefined): T {
  let remaining = opts.timeoutMs;
  let n = 1;
  let multiplier = 1;
  for (;;) {
    const got = attempt();
    if (got !== undefined) return got;
    if (remaining <= 0) throw lockHeld(lockPath, null, opts.timeoutMs, opts.where);
    const wait = Math.max(1, Math.floor(((750 + Math.floor(Math.random() * 500)) * multiplier) / 1000));
    sleepMs(Math.min(wait, remaining));
    remaining -= wait;
    multiplier += 2 * n + 1;
    if (multiplier > 1000) multiplier = 1000;
    else n++;
  }
}

/** Create `<path>.lock` exclusively (lockfile.ts `createLock`), waiting as git waits; returns its fd. */
function acquire(lockPath: string, opts: GitLockOptions): number {
  return withBackoff(lockPath, opts, () => createLock(lockPath) ?? undefined);
}

/**
 * Wait, as taking the lock would, until nobody holds `<path>.lock`; the lock
 * error when someone still does. For work that must not start when its final
 * write would find the file locked (a checkout before its branch moves); the
 * write itself still takes the lock exclusively.
 */
export function awaitUnlocked(path: string, opts: GitLockOptions): void {
  const lockPath = `${path}.lock`;
  withBackoff(lockPath, opts, () => (existsSync(lockPath) ? undefined : true));
}

/**
 * Hold `<path>.lock` while `decide` reads the current file and returns the new
 * content (or null to leave the file as it is), then rename the lock over
 * `path`. Deciding under the lock means a concurrent writer's change is never
 * lost. On any failure the lock grex created is removed (never one it found);
 * a lock held by someone else throws a `lock` GrexError.
 */
export function updateThroughLock(path: string, decide: () => string | Uint8Array | null, opts: GitLockOptions): boolean {
  const lockPath = `${path}.lock`;
  const fd = acquire(lockPath, opts);
  let renamed = false;
  // In a clone still being built, its fsyncs wait for the clone's publish (unpublished.ts).
  const fsync = opts.fsync === true && !deferFsync(path);
  try {
    let data: string | Uint8Array | null;
    try {
      data = decide();
      if (data !== null) {
        const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
        let off = 0;
        while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
        if (fsync) fsyncSync(fd);
      }
    } finally {
      closeSync(fd);
    }
    if (data === null) return false;
    if (opts.keepMode) {
      try {
        chmodSync(lockPath, statSync(path).mode & 0o7777);
      } catch {
        // no file to take the mode from: the new one keeps the umask's
      }
    }
    renameSync(lockPath, path);
    renamed = true;
    forgetLock(lockPath);
    if (fsync) fsyncDir(dirname(path));
    return true;
  } finally {
    if (!renamed) dropLock(lockPath);
  }
}

/** Replace `path` with `data` through `<path>.lock` (see `updateThroughLock`). */
export function writeThroughLock(path: string, data: string | Uint8Array, opts: GitLockOptions): void {
  updateThroughLock(path, () => data, opts);
}

/** Take `<path>.lock` (created exclusively, waited for as git waits) for a change that renames nothing over `path` (deleting a ref); `release` removes it. */
export function acquireGitLock(path: string, opts: GitLockOptions): { release(): void } {
  const lockPath = `${path}.lock`;
  closeSync(acquire(lockPath, opts));
  return { release: () => dropLock(lockPath) };
}
