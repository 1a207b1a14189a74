// Submodules a work tree shows at another commit than its index records
// (git status: ` M path`), or whose directory is gone (` D path`), for the
// dirty check and `status`. Small on purpose:
// the dirty check loads it on every report.
import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { parseIndex } from "../objects/index-file.ts";
import { readHeadSync } from "../refs/refs.ts";
import { readIndexBytes } from "../objects/index-manager.ts";

export interface MovedSubmodule {
  path: string;
  recorded: string;
  /** null: the submodule's HEAD cannot be read. */
  head: string | null;
}

/**
 * "gone": nothing at the path, or no directory there (a file, a symbolic link): git status lists it
 * (` D path`, ` T path`), the empty directory of an uninitialised submodule included; "absent": not
 * initialised (its `.git` missing: git says nothing either); "moved": HEAD is not `oid`; "same".
 */
export function submoduleState(dir: string, path: string, oid: string): "gone" | "absent" | "moved" | "same" {
  const sub = join(dir, path);
  // git's check_removed: lstat, a missing path (ENOENT, ENOTDIR) is a deletion; not a directory, a type change.
  let isDir = false;
  try {
    isDir = lstatSync(sub).isDirectory();
  } catch {
    return "gone";
  }
  if (!isDir) return "gone";
  if (!existsSync(join(sub, ".git"))) return "absent";
  return readHeadSync(sub)?.sha === oid ? "same" : "moved";
}

/** A populated submodule (its `.git` present) whose HEAD is not `oid`; an uninitialised one is never moved, as in git. */
export function submoduleMoved(dir: string, path: string, oid: string): MovedSubmodule | null {
  const sub = join(dir, path);
  if (!existsSync(join(sub, ".git"))) return null;
  const head = readHeadSync(sub)?.sha ?? null;
  return head === oid ? null : { path, recorded: oid, head };
}

export function movedSubmodules(dir: string, gitlinks: Array<{ path: string; oid: string }>): MovedSubmodule[] {
  const out: MovedSubmodule[] = [];
  for (const g of gitlinks) {
    const m = submoduleMoved(dir, g.path, g.oid);
    if (m) out.push(m);
  }
  return out;
}

/** Initialised submodules of `dir` at another commit than its index records (for `status`). */
export function movedSubmodulesOf(dir: string, gitdir: string): MovedSubmodule[] {
  const buf = readIndexBytes(gitdir);
  if (buf === null) return [];
  const links = (parseIndex(buf) ?? []).filter((e) => e.mode === 0o160000).map((e) => ({ path: e.path, oid: e.oid }));
  return movedSubmodules(dir, links);
}

/** The paths of the initialised submodules the index of `dir` records (a deletion of `dir` deletes their work too). */
export function populatedSubmodules(dir: string, gitdir: string): string[] {
  const buf = readIndexBytes(gitdir);
  if (buf === null) return [];
  return (parseIndex(buf) ?? []).filter((e) => e.mode === 0o160000 && existsSync(join(dir, e.path, ".git"))).map((e) => e.path);
}
