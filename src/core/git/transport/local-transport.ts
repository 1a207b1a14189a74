// The local transport isomorphic-git lacks (paths and file:// URLs).
//
// Refs are read straight from the source's files and compared with ours
// first, so a no-op fetch costs a few stats. A first fetch into an empty
// object store links (or copies) the source's pack and loose object files, as
// `git clone` does for local paths. Later fetches walk from the wanted tips,
// stop at every object we already have, and bring exactly the missing ones
// over as one new pack, which appears atomically (pack, then index, renamed
// into place) before any ref moves.
import * as fs from "node:fs";
import { packOpError, throwIfAborted } from "../../base/errors.ts";
import { firstGap, firstMissing, incompleteFetch, knownTips } from "./connectivity.ts";
import { CANONICAL_MODES } from "../objects/path-verify.ts";
import { namedBy } from "../objects/object-links.ts";
import { notARepo, transportError } from "./git-errors.ts";
import { type Git, loadGit } from "../objects/iso.ts";
import { ObjectStore, parseCommit } from "../objects/object-store.ts";
import { Collector, PER_OBJECT_GARBAGE } from "../objects/garbage.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { storePack } from "../objects/pack-index.ts";
import { deleteRefsSync, gitdirOf, listRefsSync, readSymref, resolveRefSync, writeRefsSync } from "../refs/refs.ts";
import { type FetchResult, planRefs, pickDefaultBranch, type RemoteRefs, writeOriginHead } from "./remote-refs.ts";
import { localPath } from "./url.ts";
import { objectsDir, readShallow } from "../layout/layout.ts";
import { borrowAlternates, linkObjectStore } from "./local-link.ts";
import { INFINITE_DEPTH, writeShallow } from "../layout/shallow-file.ts";
import { type FetchDepth, followedTags, narrowRefs, shallowBoundary } from "./shallow-refs.ts";
import { commitsLast, copyLoose, copyTagObjects, LOOSE_LIMIT, streamPack, type Wanted } from "./local-copy.ts";
import { blobLimitOf } from "../../base/clone-filter.ts";
import { partialCloneFilter, promisorFileText } from "./promisor.ts";

/**
 * The refs of a local repository, read from its files: its branches; or, for
 * a copy of the same upstream (`asCopy`: a main worktree's submodule, which a
 * linked worktree's is cloned from), its remote-tracking branches and
 * `origin/HEAD`, as that upstream advertised them when the copy last fetched.
 */
export function readLocalRefs(srcGitdir: string, asCopy = false): RemoteRefs {
  const strip = (m: Map<string, string>, prefix: string) => new Map([...m].map(([k, v]) => [k.slice(prefix.length), v]));
  const tags = strip(listRefsSync(srcGitdir, "refs/tags/"), "refs/tags/");
  if (asCopy) {
    const tracking = "refs/remotes/origin/";
    const branches = strip(listRefsSync(srcGitdir, tracking), tracking);
    branches.delete("HEAD");
    const head = readSymref(srcGitdir, `${tracking}HEAD`);
    return { branches, tags, defaultBranch: head?.startsWith(tracking) && branches.has(head.slice(tracking.length)) ? head.slice(tracking.length) : null };
  }
  const branches = strip(listRefsSync(srcGitdir, "refs/heads/"), "refs/heads/");
  const defaultBranch = pickDefaultBranch(branches, readSymref(srcGitdir, "HEAD"), resolveRefSync(srcGitdir, "HEAD"));
  return { branches, tags, defaultBranch };
}

/**
 * Fetch every branch (into refs/remotes/origin/*) and every tag we lack from
 * the repository at `url`. A shallow repository, or `opts.depth`, fetches one
 * branch (shallow-refs.ts); `opts.depth` n cuts the history copied n commits
 * below the tips as upload-pack does, INFINITE_DEPTH copies what lies below
 * our boundary (`git fetch --unshallow`).
 */
export async function fetchLocal(destGitdir: string, url: string, signal: AbortSignal, opts: FetchDepth & { asCopy?: boolean } = {}): Promise<FetchResult> {
  throwIfAborted(signal);
  const srcPath = localPath(url);
  const srcGitdir = gitdirOf(srcPath);
  if (!srcGitdir) throw notARepo(srcPath);
  const boundary = readShallow(destGitdir);
  const deepen = opts.depth !== undefined && opts.depth > 0 && (opts.depth !== INFINITE_DEPTH || boundary.size > 0);
  const all = readLocalRefs(srcGitdir, opts.asCopy);
  const narrowed = deepen || boundary.size > 0;
  const remote = narrowed ? narrowRefs(destGitdir, all, opts.ref) : all;
  const plan = planRefs(destGitdir, remote);
  if (deepen) {
    try {
      await deepenFrom(srcGitdir, destGitdir, remote, opts.depth as number, signal, promisorFileText(plan.writes));
      ensureConnected(srcGitdir, destGitdir, url, plan.writes.map(([, oid]) => oid), signal);
    } catch (err) {
      writeShallow(destGitdir, boundary);
      throw transportError(url, err);
    }
  } else if (plan.missing.length > 0) {
    try {
      const linked = await copyObjects(srcGitdir, destGitdir, plan.missing, signal, promisorFileText(plan.writes));
      // The source's own store, linked whole, is as complete as the source; anything else is checked.
      if (!linked) ensureConnected(srcGitdir, destGitdir, url, plan.writes.map(([, oid]) => oid), signal);
    } catch (err) {
      throw transportError(url, err);
    }
  }
  throwIfAborted(signal);
  if (narrowed) copyTagObjects(srcGitdir, destGitdir, all.tags);
  const writes = narrowed ? [...plan.writes, ...followedTags(destGitdir, all, remote)] : plan.writes;
  // Objects first (checked complete), refs after: a ref never points at something we lack.
  writeRefsSync(destGitdir, writes); // many at once go into packed-refs in one write, as git's clone puts them
  deleteRefsSync(destGitdir, plan.prunes);
  writeOriginHead(destGitdir, remote.defaultBranch);
  return { defaultBranch: remote.defaultBranch, changed: writes.length + plan.prunes.length > 0 };
}

/**
 * Every object the new tips need must be here before a ref moves. An object
 * left by an interrupted fetch (a commit without its tree) stops the usual
 * walk, which takes a present object to bring everything below it; then the
 * closure is copied again, trusting only commits our refs name.
 */
function ensureConnected(srcGitdir: string, destGitdir: string, url: string, tips: string[], signal: AbortSignal): void {
  const known = knownTips(destGitdir);
  if (firstMissing(destGitdir, tips, known) === null) return;
  const store = new ObjectStore(srcGitdir);
  const presence = new ObjectPresence(destGitdir);
  // Names and types only: each object is read again when it is written, one at a time.
  const found: Wanted[] = [];
  try {
    const seen = new Set<string>();
    const stack = tips.filter((t) => !known.has(t));
    const want = (oid: string) => {
      if (seen.has(oid) || known.has(oid)) return;
      seen.add(oid);
      stack.push(oid);
    };
    const shallow = readShallow(srcGitdir);
    while (stack.length > 0) {
      throwIfAborted(signal);
      const oid = stack.pop() as string;
      const obj = store.read(oid);
      if (!obj) throw packOpError(`${url} lacks object ${oid.slice(0, 7)} that its refs need; the source repository is broken, so check it with git fsck.`, { url });
      if (!presence.has(oid, { quick: true })) found.push({ oid, type: obj.type });
      namedBy(store, oid, obj, shallow, (mode) => CANONICAL_MODES.has(mode)).forEach(want);
    }
    const bad = copyLoose(store, destGitdir, commitsLast(found)) ? null : found.find((o) => !store.read(o.oid));
    if (bad) throw packOpError(`${url} lacks object ${bad.oid.slice(0, 7)} that its refs need; the source repository is broken, so check it with git fsck.`, { url });
  } finally {
    store.close();
  }
  const gap = firstGap(destGitdir, tips, known);
  if (gap !== null) throw incompleteFetch(gap, url);
}

/** Bring the objects `tips` need; true when the source's store was linked whole (a first fetch). */
async function copyObjects(srcGitdir: string, destGitdir: string, tips: string[], signal: AbortSignal, promisorText: string): Promise<boolean> {
  const presence = new ObjectPresence(destGitdir);
  mergeShallow(srcGitdir, destGitdir);
  // A partial clone (promisor.ts): grex's own server side leaves out the blobs its filter names, and what it
  // sends is one pack marked `.promisor`, as git's upload-pack and index-pack --promisor make it.
  const filter = partialCloneFilter(destGitdir);
  if (filter !== null) {
    const objects = missingObjectsNative(srcGitdir, presence, tips, readShallow(srcGitdir), signal, blobLimitOf(filter));
    if (objects) {
      if (objects.length === 0) return false;
      const store = new ObjectStore(srcGitdir);
      try {
        if (await streamPack(store, destGitdir, objects, signal, promisorText)) return false;
      } finally {
        store.close();
      }
    }
  }
  if (presence.isEmpty() && filter === null) {
    // As `git clone` by path: the source's own objects linked, and what it borrows (its
    // `info/alternates`) borrowed here too, never read into memory and copied.
    const whole = linkObjectStore(objectsDir(srcGitdir), objectsDir(destGitdir), signal);
    borrowAlternates(objectsDir(srcGitdir), objectsDir(destGitdir));
    return whole;
  }
  const missing = missingObjectsNative(srcGitdir, presence, tips, readShallow(srcGitdir), signal);
  if (missing) {
    // A few objects are written loose, many streamed into one pack: either way one object in memory at a time.
    const store = new ObjectStore(srcGitdir);
    try {
      const copied = missing.length <= LOOSE_LIMIT ? copyLoose(store, destGitdir, commitsLast(missing)) : await streamPack(store, destGitdir, missing, signal);
      if (copied) return false;
    } finally {
      store.close();
    }
  }
  const git = await loadGit();
  const cache = {};
  const oids = await missingObjects(git, srcGitdir, presence, tips, readShallow(srcGitdir), cache, signal);
  if (oids.length === 0) return false;
  throwIfAborted(signal);
  await writePack(git, srcGitdir, destGitdir, oids, cache, signal);
  return false;
}

/** A walk's to-do stack, seeded with `tips`: `want` queues an object once, and only if we lack it. */
function frontier(presence: ObjectPresence, tips: string[]) {
  const seen = new Set<string>();
  const stack: string[] = [];
  const want = (oid: string) => {
    if (seen.has(oid)) return;
    seen.add(oid);
    if (!presence.has(oid, { quick: true })) stack.push(oid); // a wrong miss only copies an object twice
  };
  tips.forEach(want);
  return { stack, want, seen };
}

/**
 * The missing objects' names and types, found natively: commits, trees and
 * tags are read to walk on; blobs only named (their type is the tree entry's).
 * Null when an object to walk through is unreadable here (isomorphic-git's
 * path below handles those).
 */
function missingObjectsNative(
  srcGitdir: string,
  presence: ObjectPresence,
  tips: string[],
  shallow: Set<string>,
  signal: AbortSignal,
  blobLimit = -1,
): Wanted[] | null {
  const store = new ObjectStore(srcGitdir);
  try {
    const out: Wanted[] = [];
    const gc = new Collector();
    const { stack, want } = frontier(presence, tips);
    // A partial clone's filter (blobLimit >= 0): a blob over the limit is left out (blob:none: every blob).
    const sendBlob = (oid: string): boolean => blobLimit < 0 || (blobLimit > 0 && (store.read(oid)?.data.length ?? 0) <= blobLimit);
    const blobs: string[] = [];
    while (stack.length > 0) {
      if (out.length % 256 === 0) throwIfAborted(signal);
      const oid = stack.pop() as string;
      if (blobs.length > 0 && blobs[blobs.length - 1] === oid) {
        blobs.pop();
        out.push({ oid, type: "blob" });
        continue;
      }
      const obj = store.read(oid);
      if (!obj) return null;
      gc.add(obj.data.length + PER_OBJECT_GARBAGE);
      out.push({ oid, type: obj.type });
      if (obj.type === "commit") {
        const c = parseCommit(obj.data);
        if (!c) return null;
        want(c.tree);
        if (!shallow.has(oid)) c.parents.forEach(want);
      } else if (obj.type === "tree") {
        const entries = store.readTree(oid);
        if (!entries) return null;
        for (const e of entries) {
          if (e.mode === "160000") continue; // a submodule's commit lives in the submodule
          if (e.mode !== "040000" && !sendBlob(e.oid)) continue; // a partial clone's filter leaves it out
          const before = stack.length;
          want(e.oid);
          if (e.mode !== "040000" && stack.length > before) blobs.push(e.oid); // named, not read: nothing below a blob
        }
      } else if (obj.type === "tag") {
        const m = /^object ([0-9a-f]{40})$/m.exec(obj.data.toString("latin1", 0, Math.min(obj.data.length, 200)));
        if (!m) return null;
        want(m[1] as string);
      }
    }
    return out;
  } finally {
    store.close();
  }
}

/** Objects reachable from `tips` that `presence` lacks; a present object is taken to bring everything below it. */
async function missingObjects(
  git: Git,
  srcGitdir: string,
  presence: ObjectPresence,
  tips: string[],
  shallow: Set<string>,
  cache: object,
  signal: AbortSignal,
): Promise<string[]> {
  const out: string[] = [];
  const { stack, want, seen } = frontier(presence, tips);
  let reads = 0;
  while (stack.length > 0) {
    const oid = stack.pop() as string;
    if (++reads % 256 === 0) throwIfAborted(signal);
    out.push(oid);
    const obj = await git.readObject({ fs, gitdir: srcGitdir, oid, format: "parsed", cache });
    if (obj.format !== "parsed") continue; // blobs come back raw: nothing below them
    if (obj.type === "commit") {
      want(obj.object.tree);
      if (!shallow.has(oid)) obj.object.parent.forEach(want);
    } else if (obj.type === "tree") {
      for (const e of obj.object) {
        if (e.type === "commit") continue; // a submodule's commit lives in the submodule
        if (e.type === "tree") want(e.oid);
        else if (!seen.has(e.oid)) {
          // Blobs need no reading: only their presence matters here.
          seen.add(e.oid);
          if (!presence.has(e.oid, { quick: true })) out.push(e.oid);
        }
      }
    } else if (obj.type === "tag") {
      want(obj.object.object);
    }
  }
  return out;
}

/** Pack `oids` from the source and store the pack here (index last, so readers never see half a pack). */
async function writePack(git: Git, srcGitdir: string, destGitdir: string, oids: string[], cache: object, signal: AbortSignal): Promise<void> {
  const { packfile } = await git.packObjects({ fs, gitdir: srcGitdir, oids, write: false, cache });
  if (!packfile) throw new Error("packObjects returned no data");
  const store = new ObjectStore(destGitdir);
  try {
    await storePack(destGitdir, Buffer.from(packfile), { store, keepPack: true, signal });
  } finally {
    store.close();
  }
}

/** A shallow source makes a shallow copy: its history ends where the source's does. */
function mergeShallow(srcGitdir: string, destGitdir: string): void {
  const src = readShallow(srcGitdir);
  if (src.size === 0) return;
  // As git does: through `shallow.lock`, never over another writer's.
  writeShallow(destGitdir, [...readShallow(destGitdir), ...src]);
}

/**
 * Deepen as upload-pack does for `deepen <depth>`: the commits within `depth`
 * of the wanted tips (every commit below our boundary for INFINITE_DEPTH),
 * with their trees and blobs, copied as one pack or as loose objects; the
 * boundary becomes the commits where the copy stopped. The boundary is
 * written before the objects are checked, so the check ends where history does.
 */
async function deepenFrom(srcGitdir: string, destGitdir: string, remote: RemoteRefs, depth: number, signal: AbortSignal, promisorText: string): Promise<void> {
  const srcShallow = readShallow(srcGitdir);
  const tips = [...new Set([...remote.branches.values(), ...remote.tags.values()])];
  const src = new ObjectStore(srcGitdir);
  let cut: ReturnType<typeof shallowBoundary>;
  try {
    cut = shallowBoundary(src, tips, depth, srcShallow);
  } finally {
    src.close();
  }
  const presence = new ObjectPresence(destGitdir);
  const ours = readShallow(destGitdir);
  // Our boundary commits inside the new depth are present but their history is not: walk through them (upload-pack's unshallow).
  const lifted = [...ours].filter((c) => cut.inside.has(c));
  const parents = lifted.flatMap((c) => readCommitOf(srcGitdir, c)?.parents ?? []);
  // A shallow partial clone (`--depth n --filter …`) leaves out what the filter names, as a deep one does (copyObjects).
  const filter = partialCloneFilter(destGitdir);
  const missing = missingObjectsNative(srcGitdir, presence, [...tips, ...parents], new Set([...cut.boundary, ...srcShallow]), signal, filter === null ? -1 : blobLimitOf(filter));
  if (missing === null) throw noShallowCopy(srcGitdir);
  const copied = new Set(missing.map((m) => m.oid));
  // Ours stay unless lifted; the new cut counts where it now ends a history we hold.
  const kept = new Set([...[...ours].filter((c) => !cut.inside.has(c)), ...[...cut.boundary].filter((c) => copied.has(c) || ours.has(c))]);
  // As any later fetch: loose or streamed into one pack, one object in memory at a time.
  const store = new ObjectStore(srcGitdir);
  try {
    // A partial clone's objects come in one pack marked `.promisor`, however few, as upload-pack sends them.
    const done =
      filter !== null ? missing.length === 0 || (await streamPack(store, destGitdir, missing, signal, promisorText)) : missing.length <= LOOSE_LIMIT ? copyLoose(store, destGitdir, commitsLast(missing)) : await streamPack(store, destGitdir, missing, signal);
    if (!done) throw noShallowCopy(srcGitdir);
  } finally {
    store.close();
  }
  writeShallow(destGitdir, kept);
}

const noShallowCopy = (srcGitdir: string) => packOpError(`an object of ${srcGitdir} cannot be read natively, so a shallow copy cannot be made from it; clone it without --depth.`);

function readCommitOf(gitdir: string, oid: string): { tree: string; parents: string[] } | null {
  const store = new ObjectStore(gitdir);
  try {
    return store.readCommit(oid);
  } finally {
    store.close();
  }
}
