// Cross-process locks (SPEC §7) on flock(2). The kernel drops a flock when the
// last descriptor of its holder closes — on exit, crash or SIGKILL — so no lock
// can stay stuck. Lock files live in <workspace>/.grex/.state/locks/ and, while
// held, record the holder's pid, start time and purpose for `grex doctor`.
//
// Acquisition order is fixed — workspace → scheduler permit → pack → backend →
// manifest — and checked at run time per async call chain (AsyncLocalStorage),
// so an inversion fails loudly in tests instead of deadlocking in production.
import type { AsyncLocalStorage } from "node:async_hooks";
import {
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CancelledError, GrexError, errnoCode, lockError, throwIfAborted } from "../base/errors.ts";
import { fsError } from "../base/fs-errors.ts";
import type { Workspace } from "../base/workspace.ts";
import { EINTR, flockNb, holderAlive, loadLibc, LOCK_EX, LOCK_SH, readHolder, sameFile, selfStartTime, unlockFd } from "./flock.ts";

// ---------------------------------------------------------------------------
// Lock order

export const LOCK_LEVELS = { workspace: 1, permit: 2, pack: 3, backend: 4, repo: 4.5, manifest: 5 } as const;
export type LockLevel = keyof typeof LOCK_LEVELS;

const LEVEL_LABEL: Record<LockLevel, string> = {
  workspace: "workspace lock",
  permit: "scheduler permit",
  pack: "pack lock",
  backend: "git backend lock",
  repo: "shared repository lock",
  manifest: "manifest lock",
};

interface HeldLevel {
  level: LockLevel;
  what: string;
  /** The workspace lock only: how it is held (a held exclusive lock covers a later shared or exclusive request). */
  mode?: WorkspaceLockMode;
}

/** The locks held by the current async call chain, outermost first (node:async_hooks loads on first use, off the startup path). */
let heldChain: AsyncLocalStorage<readonly HeldLevel[]> | undefined;
const chain = {
  getStore: (): readonly HeldLevel[] | undefined => heldChain?.getStore(),
  run<T>(held: readonly HeldLevel[], fn: () => T): T {
    heldChain ??= new (import.meta.require("node:async_hooks") as typeof import("node:async_hooks")).AsyncLocalStorage();
    return heldChain.run(held, fn);
  },
};

/** Throw (a programming error, not a GrexError) if `level` may not be taken now. */
export function assertLockOrder(level: LockLevel, what = ""): void {
  const held = chain.getStore() ?? [];
  const deepest = held[held.length - 1];
  // A child pack's lock inside its parent's (teardown walks down the tree): ancestors first is an order too.
  const nestedPack = level === "pack" && deepest?.level === "pack" && what.startsWith(`${deepest.what}/`);
  if (deepest && !nestedPack && LOCK_LEVELS[level] <= LOCK_LEVELS[deepest.level]) {
    const want = `${LEVEL_LABEL[level]}${what ? ` (${what})` : ""}`;
    const have = `${LEVEL_LABEL[deepest.level]}${deepest.what ? ` (${deepest.what})` : ""}`;
    throw new Error(
      `Lock order violation: cannot take the ${want} while holding the ${have}; the order is workspace → scheduler permit → pack → backend → shared repository → manifest.`,
    );
  }
}

/** Check the order, then run `fn` with `level` recorded as held for everything it calls. */
export function atLevel<T>(level: LockLevel, fn: () => T, what = "", mode?: WorkspaceLockMode): T {
  assertLockOrder(level, what);
  return chain.run([...(chain.getStore() ?? []), mode ? { level, what, mode } : { level, what }], fn);
}

/** How this call chain holds the workspace lock of `root`, if it does. */
function heldWorkspaceMode(root: string): WorkspaceLockMode | undefined {
  return (chain.getStore() ?? []).find((h) => h.level === "workspace" && h.what === root)?.mode;
}

// ---------------------------------------------------------------------------
// Lock files

export interface HeldLock {
  path: string;
  release(): void;
}

const locksDir = (ws: Workspace) => join(ws.stateDir, "locks");
const sha1 = (s: string) => new Bun.CryptoHasher("sha1").update(s).digest("hex"); // native: node:crypto loads Node streams

export const workspaceLockPath = (ws: Workspace) => join(locksDir(ws), "workspace.lock");
export const manifestLockPath = (ws: Workspace) => join(locksDir(ws), "manifest.lock");
export const packLockPath = (ws: Workspace, packPath: string) => join(locksDir(ws), `pack-${sha1(resolve(packPath))}.lock`);
export const backendLockPath = (ws: Workspace, repoDir: string) =>
  join(locksDir(ws), `backend-${sha1(resolve(repoDir))}.lock`);

function openLockFile(path: string): number {
  try {
    return openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
  } catch (err) {
    if (errnoCode(err) !== "ENOENT") throw lockFileError(path, err);
    try {
      mkdirSync(join(path, ".."), { recursive: true });
      return openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
    } catch (err2) {
      throw lockFileError(path, err2);
    }
  }
}

/** Not contention: the lock file cannot be opened at all (permissions, a file where a directory should be). */
function lockFileError(path: string, err: unknown): GrexError {
  return fsError(err, path) ?? lockError(`Could not open lock file ${path} (${errnoCode(err) ?? String(err)}); check that the workspace's .grex/.state directory is writable.`);
}

/** One non-blocking attempt; null when someone else holds the lock (`shared`: someone holds it exclusively). */
function tryLock(path: string, purpose: string, shared = false): HeldLock | null {
  for (;;) {
    const fd = openLockFile(path);
    let locked = false;
    try {
      locked = flockNb(fd, path, shared ? LOCK_SH : LOCK_EX);
    } finally {
      if (!locked) closeSync(fd);
    }
    if (!locked) return null;
    // doctor may have unlinked the file between our open and our flock: a lock on
    // an orphaned inode excludes nobody, so start over on the current file.
    if (!sameFile(fd, path)) {
      closeSync(fd);
      continue;
    }
    writeHolder(fd, purpose);
    return heldLock(path, fd, shared);
  }
}

function writeHolder(fd: number, purpose: string): void {
  try {
    const info = Buffer.from(`${JSON.stringify({ pid: process.pid, start: selfStartTime(), purpose })}\n`, "utf8");
    ftruncateSync(fd, 0);
    writeSync(fd, info, 0, info.length, 0);
  } catch {
    // Diagnostics only; the flock is what excludes.
  }
}

function heldLock(path: string, fd: number, shared = false): HeldLock {
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        // A released lock records no holder (other shared holders may still hold it: keep theirs).
        if (!shared) ftruncateSync(fd, 0);
      } catch {
        // diagnostics only
      }
      try {
        unlockFd(fd);
      } finally {
        closeSync(fd); // closing drops the flock anyway
      }
    },
  };
}

/** Sleep `ms`, rejecting with CancelledError as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((done, fail) => {
    if (signal?.aborted) return fail(new CancelledError());
    const onAbort = () => {
      clearTimeout(timer);
      fail(new CancelledError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      done();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Poll with LOCK_NB and a growing backoff (2 ms → 50 ms); cancellable. */
async function waitLock(path: string, purpose: string, signal: AbortSignal | undefined): Promise<HeldLock> {
  let delay = 2;
  for (;;) {
    throwIfAborted(signal);
    const lock = tryLock(path, purpose);
    if (lock) return lock;
    await pause(delay, signal);
    delay = Math.min(delay * 2, 50);
  }
}

function withLock<T>(
  level: LockLevel,
  what: string,
  path: string,
  signal: AbortSignal | undefined,
  fn: () => T | Promise<T>,
): Promise<T> {
  return atLevel(
    level,
    async () => {
      const lock = await waitLock(path, `${level} ${what}`.trim(), signal);
      try {
        return await fn();
      } finally {
        lock.release();
      }
    },
    what,
  );
}

// ---------------------------------------------------------------------------
// Public API

/** Shared: verbs that change packs' setup or the manifest alongside each other; exclusive: a mutation pass (sync, update, add, rm). */
export type WorkspaceLockMode = "shared" | "exclusive";

const NOT_HELD: HeldLock = { path: "", release() {} };

/**
 * Take the workspace lock or fail fast (exit 5) naming the holder. Exclusive
 * excludes every other holder; shared excludes only an exclusive one. When
 * this call chain already holds it (the verb's `invoke` took it, see
 * `withWorkspaceLock`), the request is covered and returns a no-op lock.
 */
export function tryAcquireWorkspaceLock(ws: Workspace, purpose: string, mode: WorkspaceLockMode = "exclusive"): HeldLock {
  const held = heldWorkspaceMode(ws.root);
  if (held === "exclusive" || (held === "shared" && mode === "shared")) return NOT_HELD;
  if (held === "shared") throw new Error(`Lock upgrade: ${purpose} asks for the exclusive workspace lock while its call holds it shared.`);
  assertLockOrder("workspace", ws.root);
  const path = workspaceLockPath(ws);
  const lock = tryLock(path, purpose, mode === "shared");
  if (lock) return lock;
  // The winner records itself just after its flock succeeds: give it a moment
  // (at most ~50 ms, once) so the message can name it.
  let h = readHolder(path);
  for (let i = 0; i < 25 && h.pid === null; i++) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    h = readHolder(path);
  }
  const what = `grex ${h.purpose ?? "command"}${h.pid !== null ? ` (pid ${h.pid})` : ""}`;
  throw lockError(`Another ${what} is running in ${ws.root}; wait for it to finish and try again.`, {
    pid: h.pid,
    purpose: h.purpose,
  });
}

/** Hold the workspace lock (fail fast) for everything `fn` calls; nested requests in the chain are covered by it. */
export async function withWorkspaceLock<T>(ws: Workspace, purpose: string, mode: WorkspaceLockMode, fn: () => Promise<T>): Promise<T> {
  const lock = tryAcquireWorkspaceLock(ws, purpose, mode);
  try {
    return await atLevel("workspace", fn, ws.root, mode);
  } finally {
    lock.release();
  }
}

/**
 * Code that may run only inside a mutation pass (the sync engine) checks that
 * its call chain holds the workspace lock: `invoke` takes it as the verb
 * declares (`effects`), and `init` takes it itself (see init.ts). Not held is
 * a bug in the caller, never a user error.
 */
export function assertWorkspaceLockHeld(ws: Workspace, purpose: string, mode: WorkspaceLockMode = "exclusive"): void {
  const held = heldWorkspaceMode(ws.root);
  if (held === "exclusive" || (held === "shared" && mode === "shared")) return;
  throw new Error(`${purpose} runs only under the ${mode} workspace lock of ${ws.root}, which its call does not hold; declare it in the verb's effects.`);
}

/**
 * One operation per pack directory, across tasks and processes. Under the
 * workspace lock held exclusively (a mutation pass: sync, update, add, rm,
 * init) nobody else can act in the workspace, so the pack's lock file is
 * neither taken nor made (a sync would take it twice per pack, and make a file per pack once).
 */
export function withPackLock<T>(ws: Workspace, packPath: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  // Already held by this call chain (e.g. `rm` holds it around teardown, which saves the pack's state): covered.
  if ((chain.getStore() ?? []).some((h) => h.level === "pack" && h.what === resolve(packPath))) return fn();
  if (heldWorkspaceMode(ws.root) === "exclusive") return atLevel("pack", fn, resolve(packPath));
  return withLock("pack", resolve(packPath), packLockPath(ws, packPath), signal, fn);
}

/** One clone/fetch/checkout per repository directory. */
export function withBackendLock<T>(ws: Workspace, repoDir: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  return withLock("backend", resolve(repoDir), backendLockPath(ws, repoDir), signal, fn);
}

/**
 * One fetch at a time into a repository several workspaces share (a source
 * pack and its linked worktrees in task workspaces): `lockPath` lies in the
 * repository's common directory (layout.ts `sharedFetchLockPath`), so every
 * workspace finds the same file. Taken inside the backend lock.
 */
export function withSharedRepoLock<T>(lockPath: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  return withLock("repo", lockPath, lockPath, signal, fn);
}

/** Short critical section around an append/rewrite of grex.jsonl / grex.lock.jsonl. */
export function withManifestLock<T>(ws: Workspace, signal: AbortSignal | undefined, fn: () => T | Promise<T>): Promise<T> {
  return withLock("manifest", "", manifestLockPath(ws), signal, fn);
}

/**
 * Run the synchronous `fn` holding an exclusive flock on the file at `path`
 * itself (created empty if missing), for read-modify-write of files other
 * processes also rewrite, such as .gitignore. A leaf lock outside the order
 * above: `fn` is synchronous, so nothing else is taken or awaited while it is
 * held, and the wait is short. The file is replaced by rename, so after
 * locking we check that we hold the inode now at `path`, else start over.
 */
export function withFileLockSync<T>(path: string, fn: () => T): T {
  const c = loadLibc();
  for (;;) {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_CREAT, 0o644);
    } catch (err) {
      if (errnoCode(err) !== "ENOENT") throw err;
      mkdirSync(dirname(path), { recursive: true });
      fd = openSync(path, constants.O_RDONLY | constants.O_CREAT, 0o644);
    }
    try {
      for (;;) {
        if (c.flock(fd, LOCK_EX) === 0) break;
        const e = c.errno();
        if (e !== EINTR) throw lockError(`Could not lock ${path} (flock errno ${e}); check that the file system supports locks.`);
      }
      if (sameFile(fd, path)) return fn();
    } finally {
      closeSync(fd); // also drops the flock
    }
  }
}

export interface LockInfo {
  path: string;
  pid: number | null;
  startTime: string | null;
  purpose: string | null;
  /** Some process holds the flock right now. */
  held: boolean;
  /** Not held, yet it names a holder that is gone (a crash leftover; harmless, worth cleaning). */
  stale: boolean;
}

function lockFiles(ws: Workspace): string[] {
  try {
    return readdirSync(locksDir(ws))
      .filter((n) => n.endsWith(".lock"))
      .sort()
      .map((n) => join(locksDir(ws), n));
  } catch {
    return [];
  }
}

/**
 * Probe one lock file. If we can take the flock nobody holds it, and the
 * recorded holder cannot change while we hold it, so the verdict is stable.
 * With `removeIfStale` a stale file is unlinked while still locked (lockers
 * re-check the inode after flock, so that cannot split the lock).
 */
function probe(path: string, removeIfStale: boolean): LockInfo | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch {
    return null; // vanished meanwhile
  }
  try {
    const held = !flockNb(fd, path);
    const h = readHolder(path);
    const stale = !held && h.pid !== null && !holderAlive(h);
    if (stale && removeIfStale) {
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
    }
    return { path, pid: h.pid, startTime: h.startTime, purpose: h.purpose, held, stale };
  } finally {
    closeSync(fd);
  }
}

/** Every lock file of the workspace with its recorded holder (for `grex doctor`). */
export function inspectLocks(ws: Workspace): LockInfo[] {
  return lockFiles(ws)
    .map((p) => probe(p, false))
    .filter((l): l is LockInfo => l !== null);
}

/** Delete stale lock files (see LockInfo.stale); returns their paths. */
export function removeStaleLocks(ws: Workspace): string[] {
  return lockFiles(ws)
    .map((p) => probe(p, true))
    .filter((l): l is LockInfo => l !== null && l.stale)
    .map((l) => l.path);
}
