// `.git/shallow`, written as git writes it (shallow.c write_shallow_commits):
// the boundary commits, one 40-hex id and a newline per line, sorted (git
// keeps its grafts sorted by id), through `shallow.lock` (lockfile.h); a
// repository that no longer has a boundary has no file at all (git unlinks it
// when `git fetch --unshallow` leaves no shallow commit).
import { rmSync } from "node:fs";
import { readShallow, type Repo, shallowPath } from "./layout.ts";
import { LockFile, lockHeld } from "./lockfile.ts";

/** git's "infinite" depth (upload-pack's INFINITE_DEPTH): what `git fetch --unshallow` sends as `deepen`. */
export const INFINITE_DEPTH = 0x7fffffff;

/** The file's text for a set of boundary commits (empty for none). */
export function shallowText(commits: Iterable<string>): string {
  const sorted = [...new Set(commits)].sort();
  return sorted.length === 0 ? "" : `${sorted.join("\n")}\n`;
}

/**
 * Replace the boundary with `commits` under `shallow.lock` (never over another
 * writer's: a held lock fails at once, as git's does); an empty set removes
 * the file. Returns the boundary it replaced, so a caller can put it back.
 */
export function writeShallow(repo: Repo, commits: Iterable<string>): Set<string> {
  const path = shallowPath(repo);
  const before = readShallow(repo);
  const text = shallowText(commits);
  if (text === shallowText(before)) return before;
  const lock = LockFile.tryAcquire(path);
  if (lock === null) throw lockHeld(`${path}.lock`, "the shallow boundary of the repository", 0);
  try {
    if (text === "") {
      rmSync(path, { force: true });
    } else {
      lock.write(Buffer.from(text, "latin1"));
      lock.commit();
    }
  } finally {
    lock.rollback();
  }
  return before;
}

/** The boundary after a server's `shallow` (added) and `unshallow` (removed) lines. */
export function updateShallow(repo: Repo, added: Iterable<string>, removed: Iterable<string>): Set<string> {
  const next = readShallow(repo);
  for (const c of removed) next.delete(c);
  for (const c of added) next.add(c);
  return writeShallow(repo, next);
}
