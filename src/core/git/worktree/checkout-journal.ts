// The journal of a work-tree move (see checkout-diff.ts): what it records,
// and what the dirty check may treat as the move's own work while it exists.
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { ObjectStore } from "../objects/object-store.ts";
import { hashWorktreeFile } from "./convert.ts";
import { gitdirOf } from "../refs/refs.ts";
import { flatTree } from "../objects/tree-read.ts";
import { parentsOf } from "./worktree-guard.ts";
import { gitPath } from "../layout/layout.ts";

const TMP_SUFFIX = ".grex-checkout-tmp";

export interface CheckoutJournal {
  from: string;
  to: string;
  /** The branch HEAD is to name afterwards, or null for a detached HEAD at `to`. */
  branch: string | null;
}

const JOURNAL = "grex-checkout.json";
export function readJournal(gitdir: string): CheckoutJournal | null {
  let text: string;
  const path = gitPath(gitdir, JOURNAL);
  if (!fs.existsSync(path)) return null; // the usual case, asked by every dirty check: no thrown ENOENT
  try {
    text = fs.readFileSync(path, "utf8");
  } catch {
    return null;
  }
  try {
    const j = JSON.parse(text) as Partial<CheckoutJournal>;
    const oid = /^[0-9a-f]{40}$/;
    if (typeof j.from === "string" && oid.test(j.from) && typeof j.to === "string" && oid.test(j.to) && (j.branch === null || typeof j.branch === "string")) {
      return { from: j.from, to: j.to, branch: j.branch ?? null };
    }
  } catch {
    // a torn journal cannot happen (temp + rename); an unreadable one is ignored
  }
  return null;
}

export function writeJournal(gitdir: string, j: CheckoutJournal): void {
  const path = gitPath(gitdir, JOURNAL);
  const tmp = `${path}.tmp`;
  const bytes = Buffer.from(JSON.stringify(j));
  const fd = fs.openSync(tmp, "w");
  try {
    // Whole or an error (a full disk may take part of a write): a torn journal would read as none.
    for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at, bytes.length - at);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, path);
}

export function clearJournal(gitdir: string): void {
  fs.rmSync(gitPath(gitdir, JOURNAL), { force: true });
}

/** The temp name a file is written under before it is renamed into place. */
export const tempNameOf = (rel: string): string => `${dirname(rel) === "." ? "" : `${dirname(rel)}/`}.${rel.slice(rel.lastIndexOf("/") + 1)}${TMP_SUFFIX}`;

const GITLINK = 0o160000;

export function hashBlob(abs: string, st: fs.Stats): string {
  const content = st.isSymbolicLink() ? Buffer.from(fs.readlinkSync(abs), "utf8") : fs.readFileSync(abs);
  return new Bun.CryptoHasher("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

export const parseModeOid = (modeOid: string) => {
  const sp = modeOid.indexOf(" ");
  return { mode: Number(modeOid.slice(0, sp)), oid: modeOid.slice(sp + 1) };
};

/** What the file at `rel` holds, as "mode oid", or null when absent or not a file/symlink. */
export function onDisk(dir: string, rel: string): string | null {
  if (!parentsOf(dir, rel).ok) return null; // beyond a link or a file: not in the work tree
  const abs = join(dir, rel);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(abs);
  } catch {
    return null;
  }
  if (!st.isFile() && !st.isSymbolicLink()) return st.isDirectory() ? "dir" : "other";
  const mode = st.isSymbolicLink() ? 0o120000 : st.mode & 0o111 ? 0o100755 : 0o100644;
  // Hashed as git would after the clean conversion (convert.ts): a file written converted still shows its version.
  return `${mode} ${hashWorktreeFile(dir, gitdirOf(dir), rel, abs, st, "")}`;
}

/** Same content, and the same mode where the file system keeps modes. */
export function sameVersion(actual: string | null, want: string | undefined, filemode: boolean): boolean {
  if (actual === null || want === undefined) return actual === null && want === undefined;
  const a = parseModeOid(actual);
  const w = parseModeOid(want);
  if (w.mode === GITLINK) return actual === "dir";
  if (a.oid !== w.oid) return false;
  return a.mode === w.mode || (!filemode && a.mode !== 0o120000 && w.mode !== 0o120000);
}

/** Changed path → the versions ("mode oid"; undefined = absent) it may show while the move is unfinished. */
export type JournaledPaths = Map<string, Array<string | undefined>>;

/** The journaled move's changed paths, or null when no move is journaled. */
export async function journaledPathsFor(gitdir: string): Promise<JournaledPaths | null> {
  const j = readJournal(gitdir);
  if (!j) return null;
  const store = new ObjectStore(gitdir);
  try {
    const from = await flatTree(gitdir, j.from, store);
    const to = await flatTree(gitdir, j.to, store);
    const out: JournaledPaths = new Map();
    for (const [p, v] of to) if (from.get(p) !== v) out.set(p, [from.get(p), v]);
    for (const [p, v] of from) if (!to.has(p)) out.set(p, [v, undefined]);
    return out;
  } finally {
    store.close();
  }
}
