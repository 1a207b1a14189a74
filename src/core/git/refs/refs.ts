// Synchronous reads and writes of a repository's refs straight from the files
// (loose refs override packed-refs, as in git). Cheap enough for `grex ls` and
// for the no-op check before any fetch, and never loads isomorphic-git.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { HeadInfo } from "./head.ts";
import { commonDirOf, gitdirOf, layoutOfGitdir, packedRefsPath, refPath, type RepoLayout } from "../layout/layout.ts";

const OID = /^[0-9a-f]{40}$/;

// Where a repository lives and which of its files are shared by linked worktrees: layout.ts.
export { gitdirOf } from "../layout/layout.ts";

/** Refs are shared by linked worktrees: they live in `commondir` when there is one. */
const refStore = commonDirOf;

export function readPackedRefs(gitdir: string): Map<string, string> {
  const out = new Map<string, string>();
  let text: string;
  const path = packedRefsPath(gitdir);
  if (!existsSync(path)) return out; // common after a fresh clone; cheaper than a thrown ENOENT
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
  return out;
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
      const value = loose ?? (packed ?? readPackedRefs(this.gitdir)).get(name) ?? null;
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

/**
 * Write a loose ref atomically (temp file + rename), as git does with its
 * .lock files. Like git by default, without fsync: refs are cheap to re-fetch.
 */
export function writeRefSync(gitdir: string, ref: string, value: string): void {
  checkRefName(ref);
  const path = refPath(gitdir, ref);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.lock`;
  writeFileSync(tmp, `${value}\n`);
  renameSync(tmp, path);
}

/** Throws on a ref name git would refuse (or one that could escape the ref store). */
function checkRefName(ref: string): void {
  if (!/^(HEAD|refs\/[^\0\s~^:?*[\\]+)$/.test(ref) || ref.includes("..") || ref.includes("/.")) {
    throw new Error(`refusing to write the invalid ref name ${JSON.stringify(ref)}`);
  }
}

/** Delete a ref, loose and packed. */
export function deleteRefSync(gitdir: string, ref: string): void {
  deleteRefsSync(gitdir, [ref]);
}

/** Delete refs, loose and packed: packed-refs is rewritten once for all of them. */
export function deleteRefsSync(gitdir: string, refs: readonly string[]): void {
  if (refs.length === 0) return;
  for (const ref of refs) rmSync(refPath(gitdir, ref), { force: true });
  const gone = new Set(refs);
  const packedPath = packedRefsPath(gitdir);
  let text: string;
  try {
    text = readFileSync(packedPath, "utf8");
  } catch {
    return;
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
  if (kept.length === lines.length) return;
  const tmp = `${packedPath}.lock`;
  writeFileSync(tmp, kept.join("\n"));
  renameSync(tmp, packedPath);
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
    if (!ref.startsWith("refs/") || !OID.test(oid)) throw new Error(`refusing to pack the ref ${JSON.stringify(ref)}`);
    checkRefName(ref);
  }
  const store = refStore(gitdir);
  const packedPath = packedRefsPath(gitdir);
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
  const tmp = `${packedPath}.lock`;
  writeFileSync(tmp, out);
  renameSync(tmp, packedPath);
  for (const [ref] of writes) {
    const loose = join(store, ref);
    if (existsSync(loose)) rmSync(loose, { force: true });
  }
}

/** HEAD's commit and branch (null when detached), read from the files; null when unreadable or unborn. */
export function readHeadSync(dir: string): HeadInfo | null {
  const gitdir = gitdirOf(dir);
  return gitdir ? new RefFiles(gitdir).head() : null;
}
