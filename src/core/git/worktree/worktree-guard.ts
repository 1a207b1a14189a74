// The checkout's rule for the real file system: a path is written, renamed or
// deleted only when every leading component of it, as it is on disk at that
// moment, is a real directory inside the work tree — never a symbolic link
// (git's "beyond a symbolic link"), never a file. The tree was checked before
// (tree-read.ts verifiedFlatTree); this guards against what the disk holds:
// a link the previous commit left, one a case-insensitive file system merges
// with another name, one a user made.
import * as fs from "node:fs";
import { join } from "node:path";
import { packOpError } from "../../base/errors.ts";

/** What the leading components of `rel` are on disk: all real directories, one missing, or one a link/file. */
export type Parents = { ok: true } | { ok: false; missing: string } | { ok: false; link: string } | { ok: false; notDir: string };

/**
 * The directories of one work tree found to be real directories during one
 * pass of a checkout, so that each is checked once rather than once per file
 * below it (git keeps the same cache of its lstat calls). The pass forgets a
 * directory when it removes it, with everything below; nothing but the pass
 * itself changes the work tree meanwhile (the pack's lock is held).
 */
export class RealDirs {
  private readonly known = new Set<string>();

  has(prefix: string): boolean {
    return this.known.has(prefix);
  }

  add(prefix: string): void {
    this.known.add(prefix);
  }

  forget(prefix: string): void {
    this.known.delete(prefix);
    const below = `${prefix}/`;
    for (const k of this.known) if (k.startsWith(below)) this.known.delete(k);
  }
}

export function parentsOf(root: string, rel: string, dirs?: RealDirs): Parents {
  for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) {
    const prefix = rel.slice(0, i);
    if (dirs?.has(prefix)) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(join(root, prefix));
    } catch {
      return { ok: false, missing: prefix };
    }
    if (st.isSymbolicLink()) return { ok: false, link: prefix };
    if (!st.isDirectory()) return { ok: false, notDir: prefix };
    dirs?.add(prefix);
  }
  return { ok: true };
}

/** The first leading component of `rel` that is a symbolic link on disk, or null. */
export function linkedParent(root: string, rel: string, dirs?: RealDirs): string | null {
  const p = parentsOf(root, rel, dirs);
  return "link" in p ? p.link : null;
}

export const beyondLink = (root: string, rel: string, link: string) =>
  packOpError(`refusing to write ${JSON.stringify(rel)} in ${root}: ${JSON.stringify(link)} is a symbolic link, and grex never writes through one in a checkout; remove the link, then sync again.`, {
    dir: root,
    path: rel,
  });

/**
 * Make the leading directories of `rel`, one at a time (mkdir never follows a
 * link it creates over); throws if one is a link or a file.
 */
export function makeParents(root: string, rel: string, dirs?: RealDirs): void {
  for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) {
    const prefix = rel.slice(0, i);
    if (dirs?.has(prefix)) continue;
    const abs = join(root, prefix);
    let st: fs.Stats | null = null;
    try {
      st = fs.lstatSync(abs);
    } catch {
      fs.mkdirSync(abs);
      dirs?.add(prefix);
      continue;
    }
    if (st.isSymbolicLink()) throw beyondLink(root, rel, prefix);
    if (!st.isDirectory()) throw packOpError(`cannot write ${JSON.stringify(rel)} in ${root}: ${JSON.stringify(prefix)} is a file where the commit has a directory; move it away, then sync again.`, { dir: root, path: rel });
    dirs?.add(prefix);
  }
}

const errno = (err: unknown) => (err as { code?: string } | null)?.code;

/** Create `tmp` exclusively (never through a link); a leftover of an interrupted run is removed first (unlink never follows a link). */
function createTemp(tmp: string, mode: number, data: Uint8Array): void {
  for (let attempt = 0; ; attempt++) {
    try {
      if (mode === 0o120000) fs.symlinkSync(Buffer.from(data).toString("utf8"), tmp);
      else {
        const fd = fs.openSync(tmp, "wx", mode === 0o100755 ? 0o755 : 0o644);
        try {
          // All of it or an error: a full disk may take part of a write without failing it, and a
          // short file renamed into place would read as the user's edit forever.
          for (let at = 0; at < data.length; ) at += fs.writeSync(fd, data, at, data.length - at);
        } catch (err) {
          fs.closeSync(fd);
          fs.rmSync(tmp, { force: true }); // ours (created exclusively): a failed write leaves no temp behind
          throw err;
        }
        fs.closeSync(fd);
      }
      return;
    } catch (err) {
      if (attempt > 0 || errno(err) !== "EEXIST") throw err;
      fs.rmSync(tmp, { force: true });
    }
  }
}

/**
 * Write a file or link at `rel` through a fresh temp name (created
 * exclusively: never through a link) renamed into place. `dirs`: the pass's
 * cache of directories already checked (without it every one is checked, and
 * checked again right before the rename).
 */
export function writeEntry(root: string, rel: string, tmpRel: string, mode: number, data: Uint8Array, dirs?: RealDirs): void {
  makeParents(root, rel, dirs);
  const tmp = join(root, tmpRel);
  createTemp(tmp, mode, data);
  const link = linkedParent(root, rel, dirs);
  if (link !== null) {
    fs.rmSync(tmp, { force: true });
    throw beyondLink(root, rel, link);
  }
  const target = join(root, rel);
  try {
    try {
      fs.renameSync(tmp, target);
    } catch (err) {
      // A directory where the file goes (one that held only files the move removed): cleared, then the rename again.
      if (errno(err) !== "EISDIR" && errno(err) !== "ENOTEMPTY" && errno(err) !== "EEXIST") throw err;
      clearEmptyDir(root, rel, dirs);
      fs.renameSync(tmp, target);
    }
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * A real directory where a file goes, holding nothing but empty directories
 * (git does not track those; the tracked files in it were removed first):
 * removed, deepest first. Anything else in it makes rmdir fail loudly.
 */
function clearEmptyDir(root: string, rel: string, dirs?: RealDirs): void {
  const abs = join(root, rel);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(abs);
  } catch {
    return;
  }
  if (!st.isDirectory()) return;
  const walk = (p: string) => {
    for (const d of fs.readdirSync(p, { withFileTypes: true })) if (d.isDirectory()) walk(join(p, d.name));
    fs.rmdirSync(p);
  };
  dirs?.forget(rel);
  walk(abs);
}

/** Delete the file or link at `rel`, only when it is inside the work tree (a path beyond a link is not ours: left alone). */
export function removeEntry(root: string, rel: string, dirs?: RealDirs): void {
  if (!parentsOf(root, rel, dirs).ok) return;
  fs.rmSync(join(root, rel), { force: true });
}

/** rmdir the now-empty directories above `rel`, deepest first, never beyond a link. */
export function removeEmptyParents(root: string, rel: string, dirs?: RealDirs): void {
  for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) {
    const d = rel.slice(0, i);
    if (!parentsOf(root, `${d}/x`, dirs).ok) return;
    try {
      fs.rmdirSync(join(root, d)); // fails on anything but an empty directory (a link or file: ENOTDIR)
    } catch {
      return;
    }
    dirs?.forget(d);
  }
}
