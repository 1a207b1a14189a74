// The object cache shared by every workspace on the machine (opt-in:
// GREX_OBJECT_CACHE or the workspace's `.grex/object-cache`, see
// object-cache-setting.ts). One bare repository per upstream URL, its name a
// readable slug of the normalised URL plus a hash of it. A clone or fetch
// first brings the upstream's branches (as `refs/remotes/origin/*`) and tags
// into that entry, under the entry's lock, then the pack borrows the entry's
// objects through `objects/info/alternates` (the absolute path of the entry's
// `objects`, as `git clone --reference` writes it) and takes its refs from the
// entry: nothing is transferred twice, and a second workspace needing the same
// repository transfers only what the entry lacks.
//
// Safety: an entry is created under a hidden temp name and renamed into
// place; objects arrive the way every fetch stores them (pack, then index, renamed
// into place, refs last); the lock (`<entry>.lock`, lockfile.ts, its note
// naming the holder) is waited for by a second filler and removed when its
// holder is killed. grex never prunes or repacks an entry, and each entry's
// config turns git's own automatic gc off (`gc.auto 0`, `gc.pruneExpire
// never`), since packs borrow objects its refs may no longer reach.
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { packOpError } from "../base/errors.ts";
import { atomicWriteFile, fsyncDir } from "../fs/fsutil.ts";
import { alternateLines, alternatesFileOf, gitPath, isGitDirectory, layoutOfGitdir, objectsDir, refPath } from "./layout/layout.ts";
import { LockFile } from "./layout/lockfile.ts";
import { writeNewRepoConfig } from "./refs/config.ts";
import { deleteRefsSync, listRefsSync, readSymref, resolveRefSync, writeRefSync, writeRefsSync } from "./refs/refs.ts";
import { ObjectPresence } from "./objects/objects.ts";
import { type FetchResult, REMOTE, type RemoteRefs, writeOriginHead } from "./transport/remote-refs.ts";
import { displayUrl, localPath, transportOf } from "./transport/url.ts";

/** A fetch from the upstream into a repository (the backend's own, insteadOf applied). */
export type Upstream = (gitdir: string, url: string, signal: AbortSignal) => Promise<FetchResult>;

/** How long a second filler waits for the one filling the same entry (a first fetch of a large repository). */
const ENTRY_LOCK_WAIT_MS = 30 * 60_000;
const TRACKING = `refs/remotes/${REMOTE}/`;

const stripGit = (path: string): string => {
  let s = path;
  for (;;) {
    const t = s.replace(/\/+$/, "").replace(/\.git$/i, "");
    if (t === s) return s;
    s = t;
  }
};

/**
 * The key of `url`'s entry: scheme and host lower-case (URL parsing does it,
 * a default port dropped), credentials and fragment gone, trailing `/` and
 * `.git` removed; a local path is made absolute and real. The manifest's
 * URL is keyed (before url.<base>.insteadOf), so a mirror fills the same entry.
 */
export function cacheKey(url: string): string {
  if (transportOf(url) === "local") {
    let p = localPath(url);
    try {
      p = fs.realpathSync(p);
    } catch {
      // not there (yet): the absolute path is the key
    }
    return stripGit(p);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      return `${u.protocol}//${u.host}${stripGit(u.pathname)}${u.search}`;
    } catch {
      // not parseable: keyed as written, below
    }
  }
  const scp = /^(?:[^@/]+@)?([^:/]+):(.*)$/.exec(url);
  if (scp) return `ssh://${(scp[1] as string).toLowerCase()}/${stripGit(scp[2] as string).replace(/^\/+/, "")}`;
  return stripGit(url);
}

/** The entry's directory name: a readable slug of the key (never hidden, no `..`) and 16 hex digits of its SHA-1. */
export function entryName(key: string): string {
  const slug =
    key
      .replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")
      .replace(/[^A-Za-z0-9._-]+/g, "-")
      .replace(/\.{2,}/g, ".")
      .slice(-48)
      .replace(/^[-.]+|[-.]+$/g, "") || "repo";
  return `${slug}-${new Bun.CryptoHasher("sha1").update(key).digest("hex").slice(0, 16)}.git`;
}

/** The entry of `url` in the cache at `root` (it may not exist yet). */
export const cacheEntryDir = (root: string, url: string): string => join(root, entryName(cacheKey(url)));

/** A URL with its user and password taken out (the entry's config never holds a password). */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === "" && u.password === "") return url;
    u.username = "";
    u.password = "";
    return u.href;
  } catch {
    return url;
  }
}

/** A new bare entry, made under a temp name and renamed into place (its lock held). */
function createEntry(root: string, name: string, url: string): void {
  const tmp = join(root, `.${name}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  const repo = layoutOfGitdir(tmp);
  fs.mkdirSync(join(objectsDir(repo), "pack"), { recursive: true });
  fs.mkdirSync(gitPath(repo, "refs/heads"), { recursive: true });
  fs.mkdirSync(gitPath(repo, "refs/tags"), { recursive: true });
  fs.writeFileSync(refPath(repo, "HEAD"), "ref: refs/heads/main\n");
  const set = (section: string, sub: string | null, key: string, value: string) => ({ section, sub, key, value });
  writeNewRepoConfig(tmp, [
    set("core", null, "repositoryformatversion", "0"),
    set("core", null, "filemode", "true"),
    set("core", null, "bare", "true"),
    // Packs borrow objects these refs may stop reaching: git's own gc must never prune here.
    set("gc", null, "auto", "0"),
    set("gc", null, "pruneExpire", "never"),
    set("remote", REMOTE, "url", withoutCredentials(url)),
    set("remote", REMOTE, "fetch", `+refs/heads/*:${TRACKING}*`),
  ]);
  fs.renameSync(tmp, join(root, name));
  fsyncDir(root);
}

/** The entry of `url`, created if absent, with its lock held (the caller rolls the lock back). */
async function openEntry(root: string, url: string, signal: AbortSignal): Promise<{ gitdir: string; lock: LockFile }> {
  const name = entryName(cacheKey(url));
  const dir = join(root, name);
  try {
    fs.mkdirSync(root, { recursive: true });
  } catch (err) {
    const code = (err as { code?: string }).code ?? "error";
    throw packOpError(`could not create the object cache ${root} (${code}); point GREX_OBJECT_CACHE (or .grex/object-cache) at a directory you can write, or unset it.`, { path: root });
  }
  const lock = await LockFile.acquire(dir, `grex's object cache entry for ${displayUrl(url)}`, { timeoutMs: ENTRY_LOCK_WAIT_MS, signal });
  try {
    // Temp entries a killed filler left (only the lock's holder makes one, so none is in use).
    for (const n of fs.readdirSync(root)) if (n.startsWith(`.${name}.tmp-`)) fs.rmSync(join(root, n), { recursive: true, force: true });
    if (!fs.existsSync(dir)) createEntry(root, name, url);
    else if (!isGitDirectory(dir)) {
      throw packOpError(`${dir} is in the way of grex's object cache entry for ${displayUrl(url)} (it is not a git repository); move it away, then run the command again.`, { path: dir });
    }
    return { gitdir: dir, lock };
  } catch (err) {
    lock.rollback();
    throw err;
  }
}

/** The refs an entry holds, read as a remote's advertisement: its remote-tracking branches, its tags, its default branch. */
function entryRefs(gitdir: string): RemoteRefs {
  const branches = new Map<string, string>();
  for (const [ref, oid] of listRefsSync(gitdir, TRACKING)) if (ref !== `${TRACKING}HEAD`) branches.set(ref.slice(TRACKING.length), oid);
  const tags = new Map([...listRefsSync(gitdir, "refs/tags/")].map(([ref, oid]) => [ref.slice("refs/tags/".length), oid]));
  const head = readSymref(gitdir, `${TRACKING}HEAD`);
  const named = head?.startsWith(TRACKING) ? head.slice(TRACKING.length) : null;
  return { branches, tags, defaultBranch: named !== null && branches.has(named) ? named : null };
}

/** Append the entry's object directory to `gitdir`'s alternates (absolute, as `git clone --reference` writes it), unless it is there. */
function addAlternate(gitdir: string, entryObjects: string): void {
  const objects = objectsDir(gitdir);
  if (alternateLines(objects).some((line) => sameDir(line, entryObjects))) return;
  const file = alternatesFileOf(objects);
  let text = "";
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    // none yet (a clone)
  }
  fs.mkdirSync(dirname(file), { recursive: true });
  atomicWriteFile(file, `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${entryObjects}\n`);
}

function sameDir(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return false;
  }
}

/**
 * The ref changes that make `gitdir` match the entry's refs. The entry's refs
 * were written only after their history was checked complete there (every
 * fetch writes refs last), and `gitdir` borrows the entry's objects, so no
 * history walk is needed: only each new tip's presence is asked (a tip
 * missing means something is off; null then, and the caller fetches).
 */
function planFromEntry(gitdir: string, remote: RemoteRefs): { writes: Array<[string, string]>; prunes: string[] } | null {
  const presence = new ObjectPresence(gitdir);
  const tracking = listRefsSync(gitdir, TRACKING);
  const tags = listRefsSync(gitdir, "refs/tags/");
  const writes: Array<[string, string]> = [];
  for (const [name, oid] of remote.branches) if (tracking.get(`${TRACKING}${name}`) !== oid) writes.push([`${TRACKING}${name}`, oid]);
  for (const [name, oid] of remote.tags) if (!tags.has(`refs/tags/${name}`)) writes.push([`refs/tags/${name}`, oid]); // tags are never clobbered, as git does
  if (writes.some(([, oid]) => !presence.has(oid))) return null;
  const prunes = [...tracking.keys()].filter((ref) => ref !== `${TRACKING}HEAD` && !remote.branches.has(ref.slice(TRACKING.length)));
  return { writes, prunes };
}

/** Whether the repository at `gitdir` borrows from `url`'s entry in the cache at `root`. */
export function borrowsFromCache(gitdir: string, root: string, url: string): boolean {
  const entryObjects = objectsDir(cacheEntryDir(root, url));
  if (!fs.existsSync(entryObjects)) return false;
  return alternateLines(objectsDir(gitdir)).some((line) => sameDir(line, entryObjects));
}

/**
 * Fetch `url` into its cache entry, then let `destGitdir` borrow the entry's
 * objects and take its refs (what a fetch from the upstream would have
 * written). Should the entry lack an object a ref needs (it never should),
 * the pack fetches from the upstream itself, still borrowing.
 */
export async function fetchThroughCache(root: string, destGitdir: string, url: string, signal: AbortSignal, upstream: Upstream): Promise<FetchResult> {
  const entry = await openEntry(root, url, signal);
  try {
    const fetched = await upstream(entry.gitdir, url, signal);
    // The entry's HEAD is the upstream's default branch's commit, detached (git wants a symbolic HEAD under refs/heads/), so `git log` there shows it.
    const tip = fetched.defaultBranch === null ? null : resolveRefSync(entry.gitdir, `${TRACKING}${fetched.defaultBranch}`);
    if (tip !== null && resolveRefSync(entry.gitdir, "HEAD") !== tip) writeRefSync(entry.gitdir, "HEAD", tip);
    addAlternate(destGitdir, fs.realpathSync(objectsDir(entry.gitdir)));
    const remote = entryRefs(entry.gitdir);
    const plan = planFromEntry(destGitdir, remote);
    if (plan === null) return await upstream(destGitdir, url, signal);
    writeRefsSync(destGitdir, plan.writes);
    deleteRefsSync(destGitdir, plan.prunes);
    writeOriginHead(destGitdir, remote.defaultBranch);
    return { defaultBranch: remote.defaultBranch, changed: plan.writes.length + plan.prunes.length > 0 };
  } finally {
    entry.lock.rollback();
  }
}
