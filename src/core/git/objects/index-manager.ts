// The one writer of a work tree's index, with git's `index.lock`
// (lockfile.ts): created exclusively, the new index written into it and
// fsync'd, then renamed over `index`. A git command in the same repository
// holding the lock is waited for briefly, then reported in one sentence; its
// lock is never overwritten.
//
// A checkout does not hold the lock while it writes files (a kill then would
// leave a lock that stops the user's next git command). It reads the index
// under the lock (`readIndexLocked`: a git command at work is reported before
// anything changes), and at the end writes the new index under the lock only
// if the index is still the one it read (`commitIndex` compares git's own
// checksum of it); a git command that changed it in between is reported and
// its index kept, and the checkout journal (checkout-journal.ts) lets the next
// sync finish the move.
//
// isomorphic-git writes the index in one place still: `git.checkout`, the
// full checkout checkout.ts falls back to for an index the diff-based move
// does not handle (conflict stages, a sparse index's directory entries). It
// writes `index` directly, knowing nothing of `index.lock`, so checkout.ts
// holds the lock around that call (`withIndexLock`): git is kept out, and
// reported, while it runs.
import { closeSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { GrexError } from "../../base/errors.ts";
import { type LockWait, LockFile } from "../layout/lockfile.ts";
import { indexPath, type Repo } from "../layout/layout.ts";
import { type CacheTreeNode, type IndexEntry, indexVersionOf, serializeIndex } from "./index-file.ts";

/** The index file's bytes, or null when there is none (or it cannot be read). For reading; never for an update. */
export function readIndexBytes(repo: Repo): Buffer | null {
  try {
    return readFileSync(indexPath(repo));
  } catch {
    return null;
  }
}

/** How many entries the index of `repo` holds (its header's count), or 0 when there is none or it cannot be read. Reads 12 bytes. */
export function indexEntryCount(repo: Repo): number {
  let fd: number;
  try {
    fd = openSync(indexPath(repo), "r");
  } catch {
    return 0;
  }
  try {
    const head = Buffer.alloc(12);
    return readSync(fd, head, 0, 12, 0) === 12 && head.toString("latin1", 0, 4) === "DIRC" ? head.readUInt32BE(8) : 0;
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}

/** git's checksum at the end of an index file (what identifies one version of it), or null for no index. */
export function indexChecksum(buf: Buffer | null): string | null {
  return buf === null || buf.length < 20 ? null : buf.toString("hex", buf.length - 20);
}

/** A held `index.lock`: the index cannot change under its holder until `commit` or `rollback`. */
export class IndexLock {
  private constructor(
    private readonly lock: LockFile,
    /** The index file it guards. */
    readonly path: string,
  ) {}

  /**
   * Take `index.lock` of `repo` (waiting briefly for another holder, then a
   * `lock` error naming the file). `what` names the work tree for people.
   */
  static async acquire(repo: Repo, what: string, wait?: LockWait): Promise<IndexLock> {
    const path = indexPath(repo);
    return new IndexLock(await LockFile.acquire(path, `the index of ${what}`, wait), path);
  }

  /** The index as it is now (the lock keeps it so): its bytes, or null when there is none. */
  read(): Buffer | null {
    try {
      return readFileSync(this.path);
    } catch {
      return null;
    }
  }

  /**
   * Replace the index with these entries (and cache-tree): serialised as
   * index-file.ts writes it, into the lock, fsync'd, renamed over the index.
   * `version` 4 keeps a v4 index v4; by default the current file's version decides.
   * `durable` false: no fsync, as git writes the index (core.fsync leaves it out by default).
   */
  commit(entries: IndexEntry[], cacheTree?: CacheTreeNode, version: number | undefined = indexVersionOf(this.path), durable = true): void {
    try {
      this.lock.write(serializeIndex(entries, cacheTree, version), durable);
    } catch (err) {
      this.lock.rollback();
      throw err;
    }
    this.lock.commit();
  }

  /** `commit` with its fsyncs on the I/O thread pool: other packs of a sync go on meanwhile. */
  async commitAsync(entries: IndexEntry[], cacheTree?: CacheTreeNode, version: number | undefined = indexVersionOf(this.path), durable = true): Promise<void> {
    try {
      await this.lock.writeAsync(serializeIndex(entries, cacheTree, version), durable);
    } catch (err) {
      this.lock.rollback();
      throw err;
    }
    await this.lock.commitAsync();
  }

  /** The checksum of the index as it is now (indexChecksum of its bytes), read from its last 20 bytes alone; null when there is none. */
  checksum(): string | null {
    let fd: number;
    try {
      fd = openSync(this.path, "r");
    } catch {
      return null;
    }
    try {
      const size = fstatSync(fd).size;
      if (size < 20) return null;
      const tail = Buffer.alloc(20);
      return readSync(fd, tail, 0, 20, size - 20) === 20 ? tail.toString("hex") : null;
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Let go, leaving the index as it was. Does nothing after `commit`. */
  rollback(): void {
    this.lock.rollback();
  }
}

/** Run `use` holding the index lock of `repo`; the lock is let go after, committed or not. */
export async function withIndexLock<T>(repo: Repo, what: string, use: (lock: IndexLock) => Promise<T> | T, wait?: LockWait): Promise<T> {
  const lock = await IndexLock.acquire(repo, what, wait);
  try {
    return await use(lock);
  } finally {
    lock.rollback();
  }
}

/** The index read under its lock (so a git command writing it now is waited for, or reported); null when there is none. */
export function readIndexLocked(repo: Repo, what: string, wait?: LockWait): Promise<Buffer | null> {
  return withIndexLock(repo, what, (lock) => lock.read(), wait);
}

/**
 * Write the index of `repo` under its lock, provided it is still the one read
 * earlier (`expected`: its checksum, null for no index); otherwise nothing is
 * written and a `lock` error says so. `durable` false: written without fsync (IndexLock.commit).
 */
export function commitIndex(repo: Repo, what: string, expected: string | null, entries: IndexEntry[], cacheTree?: CacheTreeNode, wait?: LockWait, durable = true): Promise<void> {
  return withIndexLock(
    repo,
    what,
    async (lock) => {
      if (lock.checksum() !== expected) {
        throw new GrexError(
          "lock",
          `the index of ${what} was changed by another process (a git command?) while grex updated the work tree, and grex kept that index; run grex sync again to finish the update.`,
          { path: lock.path },
        );
      }
      await lock.commitAsync(entries, cacheTree, undefined, durable);
    },
    wait,
  );
}
