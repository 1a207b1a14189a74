// Synchronous reads and writes of a repository's refs straight from the files
// (loose refs override packed-refs, as in git). Cheap enough for `grex ls` and
// for the no-op check before any fetch, and never loads isomorphic-git.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { packOpError } from "../../base/grex-error.ts";
import { acquireGitLock, awaitUnlocked, type GitLockOptions, PACKED_REFS_LOCK_TIMEOUT_MS, REF_LOCK_TIMEOUT_MS, updateThroughLock, writeThroughLock } from "../layout/git-lock.ts";
import type { HeadInfo } from "./head.ts";
import { commonDirOf, layoutOfGitdir, packedRefsPath, refPath, type RepoLayout } from "../layout/layout.ts";

const OID = /^[0-9a-f]{40}$/;

// Where a repository lives and which of its files are shared by linked worktrees: layout.ts.
import { gitdirOf } from "../layout/layout.ts";
export { gitdirOf };

/** Refs are shared by linked worktrees: they live in `commondir` when there is one (layout.ts decides). */
const refStore = (gitdir: string): string => commonDirOf(gitdir);

/**
 * packed-refs files read lately, by path, with the stat data they were read
 * at: a fetch asks for its refs several times (planned, known tips, tags),
 * and a repository with 20,000 tags holds them all there. Reused only while
 * inode, size and modification time are unchanged (git's own packed-refs
 * snapshot checks the same); every writer replaces the file by a rename.
 */
const packedCache = new Map<string, { ino: number; size: number; mtimeNs: bigint; refs: ReadonlyMap<string, string> }>();

/** The refs packed-refs holds, full name → object id (read only: shared with later callers). */
export function readPackedRefs(gitdir: string): ReadonlyMap<string, string> {
  const path = packedRefsPath(gitdir);
  const st = statSync(path, { bigint: true, throwIfNoEntry: false });
  if (st === undefined) return new Map(); // common after a fresh clone
  const seen = packedCache.get(path);
  if (seen !== undefined && seen.ino === Number(st.ino) && seen.size === Number(st.size) && seen.mtimeNs === st.mtimeNs) return seen.refs;
  const out = new Map<string, string>();
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    if (line.length < 42 || line.startsWith("#") || line.startsWith("^")) continue;
    const sha = line.slice(0, 40);
    if (OID.test(sha)) out.set(line.slice(41).trim(), sha);
  }
  if (packedCache.size >= 64) packedCache.clear();
  // Only a file big enough to be worth it, and whose size matches what was read (not caught mid-replace).
  if (out.size >= 256 && Buffer.byteLength(text) === Number(st.size)) packedCache.set(path, { ino: Number(st.ino), size: Number(st.size), mtimeNs: st.mtimeNs, refs: out });
  return out;
}

/**
 * One ref's id in packed-refs, found without parsing the file: ` <name>\n`
 * occurs only as that ref's line (a name holds no space or newline, and a
 * space only follows a line's id), so one native search of the bytes finds it
 * (what a 20,000-tag repository's `status` needs: two refs, not every line).
 */
function packedRef(gitdir: string, name: string): string | null {
  const cached = packedCache.get(packedRefsPath(gitdir));
  if (cached !== undefined) return readPackedRefs(gitdir).get(name) ?? null; // checked against the file's stat data there
  let bytes: Buffer;
  try {
    bytes = readFileSync(packedRefsPath(gitdir));
  } catch {
    return null;
  }
  let at = bytes.indexOf(` ${name}\n`, 0, "utf8");
  if (at === -1) {
    const tail = Buffer.from(` ${name}`, "utf8"); // the last line, should the file not end in a newline
    if (bytes.length >= tail.length && bytes.subarray(bytes.length - tail.length).equals(tail)) at = bytes.length - tail.length;
  }
  if (at < 40 || (at > 40 && bytes[at - 41] !== 0x0a)) return null;
  const oid = bytes.toString("latin1", at - 40, at);
  return OID.test(oid) ? oid : null;
}

/**
 * One repository's ref files. Where refs/* live (the common dir of a linked
 * worktree) is looked up once: `status` reads HEAD, its branch and origin's
 * ref of every pack through one reader.
 */
export class RefFiles {
  private repo: RepoLayout | undefined;
  constructor(readonly gitdir: string) {}

  private get layout(): RepoLayout {
    return (this.repo ??= layoutOfGitdir(this.gitdir));
  }

  /** A loose ref's text, trimmed, or null. */
  loose(ref: string): string | null {
    // HEAD and other pseudo-refs live in the worktree's own gitdir; refs/* in the common store (layout.ts says which).
    try {
      return readFileSync(refPath(this.layout, ref), "utf8").trim();
    } catch {
      return null;
    }
  }

  /** Resolve a full ref name (following symbolic refs) to an object id, or null. */
  resolve(ref: string, packed?: Map<string, string>): string | null {
    let name = ref;
    for (let depth = 0; depth < 5; depth++) {
      const loose = this.loose(name);
      const value = loose ?? (packed !== undefined ? packed.get(name) : packedRef(this.gitdir, name)) ?? null;
      if (value === null) return null;
      if (!value.startsWith("ref: ")) return OID.test(value) ? value : null;
      name = value.slice(5).trim();
    }
    return null;
  }

  /** HEAD's commit and branch (null when detached); null when unreadable or unborn. */
  head(): HeadInfo | null {
    // HEAD read once: `status` asks this for every pack.
    const value = this.loose("HEAD");
    if (value === null) return null;
    if (!value.startsWith("ref: ")) return OID.test(value) ? { sha: value, branch: null } : null;
    const sym = value.slice(5).trim();
    const sha = this.resolve(sym);
    return sha ? { sha, branch: sym.startsWith("refs/heads/") ? sym.slice("refs/heads/".length) : null } : null;
  }
}

/** Resolve a full ref name (following symbolic refs) to an object id, or null. */
export function resolveRefSync(gitdir: string, ref: string, packed?: Map<string, string>): string | null {
  return new RefFiles(gitdir).resolve(ref, packed);
}

/** The target of a symbolic ref (e.g. HEAD → refs/heads/main), or null when it is not symbolic. */
export function readSymref(gitdir: string, ref: string): string | null {
  const v = new RefFiles(gitdir).loose(ref);
  return v?.startsWith("ref: ") ? v.slice(5).trim() : null;
}

/** Every ref under `prefix` (e.g. "refs/remotes/origin/"), full name → object id; symbolic refs are skipped. */
export function listRefsSync(gitdir: string, prefix: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, sha] of readPackedRefs(gitdir)) if (name.startsWith(prefix)) out.set(name, sha);
  const store = refStore(gitdir);
  const refs = new RefFiles(gitdir);
  const walk = (rel: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(join(store, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const name = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(name);
      else if (e.isFile() && !e.name.endsWith(".lock")) {
        const v = refs.loose(name);
        if (v && OID.test(v)) out.set(name, v);
      }
    }
  };
  // prefix ends with "/": walk that directory.
  walk(prefix.replace(/\/$/, ""));
  return out;
}

/** git's lock waits: a loose ref or HEAD (core.filesRefLockTimeout), packed-refs (core.packedRefsTimeout). */
const refLock = (gitdir: string): GitLockOptions => ({ timeoutMs: REF_LOCK_TIMEOUT_MS, where: refStore(gitdir) });
const packedLock = (gitdir: string): GitLockOptions => ({ timeoutMs: PACKED_REFS_LOCK_TIMEOUT_MS, where: refStore(gitdir) });

/**
 * Write a loose ref as git does: `<ref>.lock` created exclusively (a lock a
 * git command holds is waited for briefly, then reported, never overwritten),
 * written, renamed over the ref. Like git by default, without fsync: refs are
 * cheap to re-fetch.
 */
export function writeRefSync(gitdir: string, ref: string, value: string): void {
  checkRefName(ref, gitdir);
  const path = refPath(gitdir, ref);
  mkdirSync(dirname(path), { recursive: true });
  writeThroughLock(path, `${value}\n`, refLock(gitdir));
}

/**
 * Wait briefly (as git does) until no other process holds the lock of any of
 * `refs`, else the one-sentence lock error: called before work whose last
 * step moves those refs, so a git command holding one stops grex before it
 * changes anything.
 */
export function awaitRefsUnlocked(gitdir: string, refs: readonly string[]): void {
  for (const ref of refs) awaitUnlocked(refPath(gitdir, ref), refLock(gitdir));
}

/** Throws on a ref name git would refuse (or one that could escape the ref store). */
function checkRefName(ref: string, gitdir: string): void {
  if (!/^(HEAD|refs\/[^\0-\x20\x7f~^:?*[\\]+)$/.test(ref) || ref.includes("..") || ref.includes("/.") || ref.endsWith(".lock")) {
    throw packOpError(`refusing to write the ref ${JSON.stringify(ref)} in '${refStore(gitdir)}': git would refuse that name (rename it upstream).`, { ref });
  }
}

/** Delete a ref, loose and packed. */
export function deleteRefSync(gitdir: string, ref: string): void {
  deleteRefsSync(gitdir, [ref]);
}

/** Delete refs, loose and packed: packed-refs is rewritten once for all of them. */
export function deleteRefsSync(gitdir: string, refs: readonly string[]): void {
  if (refs.length === 0) return;
  const gone = new Set(refs);
  const packedPath = packedRefsPath(gitdir);
  const dropPacked = () => {
    if (!existsSync(packedPath)) return;
    // Decided under packed-refs.lock, on what the file holds then.
    updateThroughLock(packedPath, () => {
      let text: string;
      try {
        text = readFileSync(packedPath, "utf8");
      } catch {
        return null;
      }
      const lines = text.split("\n");
      const kept: string[] = [];
      let dropping = false;
      for (const line of lines) {
        // A "^<peeled>" line belongs to the ref line above it.
        if (line.startsWith("^")) {
          if (!dropping) kept.push(line);
          continue;
        }
        dropping = line.length > 41 && !line.startsWith("#") && gone.has(line.slice(41).trim());
        if (!dropping) kept.push(line);
      }
      return kept.length === lines.length ? null : kept.join("\n");
    }, packedLock(gitdir));
  };
  // As git's delete: each loose ref that exists under its own lock, packed-refs rewritten while they are held.
  const locks: Array<{ release(): void }> = [];
  try {
    for (const ref of refs) {
      checkRefName(ref, gitdir);
      const loose = refPath(gitdir, ref);
      if (existsSync(loose)) locks.push(acquireGitLock(loose, refLock(gitdir)));
    }
    dropPacked();
    for (const ref of refs) rmSync(refPath(gitdir, ref), { force: true });
  } finally {
    for (const l of locks) l.release();
  }
}

/** Above this many refs at once, a fetch writes them into packed-refs (one file) instead of one loose file each. */
export const PACK_REFS_ABOVE = 64;

/**
 * Write several refs (full name → oid) at once. A few become loose files as
 * git's fetch writes them; many (a repository with 100k tags) are merged into
 * packed-refs in one write, and any loose file of the same name, which would
 * override the packed value, is removed.
 */
export function writeRefsSync(gitdir: string, writes: ReadonlyArray<readonly [string, string]>): void {
  if (writes.length <= PACK_REFS_ABOVE) {
    for (const [ref, oid] of writes) writeRefSync(gitdir, ref, oid);
    return;
  }
  for (const [ref, oid] of writes) {
    if (!ref.startsWith("refs/") || !OID.test(oid)) {
      throw packOpError(`refusing to write the ref ${JSON.stringify(ref)} in '${refStore(gitdir)}': it is not a branch or tag name with an object id (rename it upstream).`, { ref });
    }
    checkRefName(ref, gitdir);
  }
  const packedPath = packedRefsPath(gitdir);
  // Decided under packed-refs.lock, on what the file holds then.
  updateThroughLock(packedPath, () => packedWith(packedPath, writes), packedLock(gitdir));
  // A loose file of the same name would override the packed value: removed under its own lock, as git would.
  for (const [ref] of writes) {
    const loose = refPath(gitdir, ref);
    if (!existsSync(loose)) continue;
    const lock = acquireGitLock(loose, refLock(gitdir));
    try {
      rmSync(loose, { force: true });
    } finally {
      lock.release();
    }
  }
}

/** packed-refs' text with `writes` merged in, sorted as git sorts it. */
function packedWith(packedPath: string, writes: ReadonlyArray<readonly [string, string]>): string {
  // Existing entries with their peeled lines; rewritten refs lose theirs (git peels them again on demand).
  const entries = new Map<string, string>();
  let text = "";
  try {
    text = existsSync(packedPath) ? readFileSync(packedPath, "utf8") : "";
  } catch {
    text = "";
  }
  let last: string | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("^") && last !== null) entries.set(last, `${entries.get(last)}\n${line}`);
    else if (line.length > 41 && !line.startsWith("#") && OID.test(line.slice(0, 40))) {
      last = line.slice(41).trim();
      entries.set(last, line.slice(0, 40));
    } else last = null;
  }
  for (const [ref, oid] of writes) entries.set(ref, oid);
  const names = [...entries.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let out = "# pack-refs with: sorted \n";
  for (const name of names) {
    const v = entries.get(name) as string;
    const nl = v.indexOf("\n");
    out += nl < 0 ? `${v} ${name}\n` : `${v.slice(0, nl)} ${name}${v.slice(nl)}\n`;
  }
  return out;
}

/** HEAD's commit and branch (null when detached), read from the files; null when unreadable or unborn. */
export function readHeadSync(dir: string): HeadInfo | null {
  const gitdir = gitdirOf(dir);
  return gitdir ? new RefFiles(gitdir).head() : null;
}
