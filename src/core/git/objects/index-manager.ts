// The one writer of a work tree's index. As git does (read-cache.c with
// lockfile.h): `index.lock` is created exclusively before the index is read
// for an update and held while the work tree changes, the new index is
// written into it and fsync'd, and the lock is renamed over `index`. A git
// command in the same repository holding the lock is waited for briefly,
// then reported in one sentence; its lock is never overwritten, and a
// checkout that cannot take the lock changes nothing.
//
// grex writes the index after a checkout only (checkout-fresh.ts and
// checkout-diff.ts, both through here). isomorphic-git writes it in one place
// still: `git.checkout`, the full checkout checkout.ts falls back to for an
// index the diff-based move does not handle (conflict stages, a sparse
// index's directory entries). It writes `index` directly, knowing nothing
// of `index.lock`; checkout.ts holds this lock around that call, so a git
// command is still kept out (and reported) while it runs.
import { readFileSync } from "node:fs";
import { type LockWait, LockFile } from "../layout/lockfile.ts";
import { indexPath, type Repo } from "../layout/layout.ts";
import { type CacheTreeNode, type IndexEntry, indexVersionOf, serializeIndex } from "./index-file.ts";

/** The index file's bytes, or null when there is none (or it cannot be read). */
export function readIndexBytes(repo: Repo): Buffer | null {
  try {
    return readFileSync(indexPath(repo));
  } catch {
    return null;
  }
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

  /**
   * Replace the index with these entries (and cache-tree): serialised as
   * index-file.ts writes it, into the lock, fsync'd, renamed over the index.
   * `version` 4 keeps a v4 index v4; by default the current file's version decides.
   */
  commit(entries: IndexEntry[], cacheTree?: CacheTreeNode, version: number | undefined = indexVersionOf(this.path)): void {
    try {
      this.lock.write(serializeIndex(entries, cacheTree, version));
    } catch (err) {
      this.lock.rollback();
      throw err;
    }
    this.lock.commit();
  }

  /** Let go, leaving the index as it was. Does nothing after `commit`. */
  rollback(): void {
    this.lock.rollback();
  }
}

/** Run `use` holding the index lock of `repo`; the lock is let go after, committed or not. */
export async function withIndexLock<T>(repo: Repo, what: string, use: (lock: IndexLock) => Promise<T>, wait?: LockWait): Promise<T> {
  const lock = await IndexLock.acquire(repo, what, wait);
  try {
    return await use(lock);
  } finally {
    lock.rollback();
  }
}
