// Move a repository to a ref after a fetch. Branch: track it and fast-forward
// only. Tag or commit sha: detached HEAD at that commit. No ref: the remote's
// HEAD branch. The work tree is updated first and HEAD/branch refs last, so an
// interruption never leaves HEAD claiming a commit the files do not show.
import * as fs from "node:fs";
import { basename, resolve } from "node:path";
import { GrexError, packOpError } from "../../base/errors.ts";
import type { HeadInfo } from "../refs/head.ts";
import { diverged, noBranches, refNotFound, transportError } from "../transport/git-errors.ts";
import { type Git, loadGit } from "../objects/iso.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { countLeftRight } from "../refs/ahead-behind.ts";
import { awaitRefsUnlocked, readSymref, resolveRefSync, writeRefSync } from "../refs/refs.ts";
import { REMOTE } from "../transport/remote-refs.ts";
import { setTrackingSync } from "../refs/config.ts";
import { checkoutDiff } from "./checkout-diff.ts";
import { clearJournal } from "./checkout-journal.ts";
import { checkoutFresh } from "./checkout-fresh.ts";
import { MissingObjectError, UnsafeTreeError, verifiedFlatTree } from "../objects/tree-read.ts";
import { displayUrl } from "../transport/url.ts";
import { beyondLink, linkedParent } from "./worktree-guard.ts";
import { withIndexLock } from "../objects/index-manager.ts";
import { checkedOutAt } from "./worktree-list.ts";
import { ensureBlobs } from "../transport/promised-fetch.ts";
import { collectAfter } from "../objects/garbage.ts";

type Target = { kind: "branch"; name: string; oid: string } | { kind: "detached"; oid: string };

export interface MoveOptions {
  dir: string;
  gitdir: string;
  url: string;
  ref: string | null;
  /** The remote's HEAD branch, as the fetch found it. */
  defaultBranch: string | null;
  /** A new clone: empty work tree, no index yet (HEAD may already name the commit: it is checked out all the same). */
  fresh?: boolean;
  /** Where the pack will live, for messages (a clone is built under a temp name). */
  shown?: string;
  /** Cancels the fetch of a partial clone's missing blobs (promised-fetch.ts). */
  signal?: AbortSignal;
}

/** Before isomorphic-git's full checkout (which follows links): no path of the target may lie beyond a link on disk. */
function assertNoLinkedParents(o: MoveOptions, target: Map<string, string>): void {
  for (const p of target.keys()) {
    const link = linkedParent(o.dir, p);
    if (link !== null) throw beyondLink(o.shown ?? o.dir, p, link);
  }
}

/** One sentence for a commit the checkout refuses or cannot read. */
export function refusedCommit(o: { dir: string; url: string; shown?: string }, oid: string, err: unknown): GrexError {
  const dir = o.shown ?? o.dir;
  const where = `pack '${basename(dir)}' (${dir})`;
  if (err instanceof UnsafeTreeError) {
    return packOpError(
      `refusing to check out commit ${oid.slice(0, 7)} of ${displayUrl(o.url)} into ${where}: it holds ${err.path === "" ? "a broken commit" : `the unsafe path ${JSON.stringify(err.path)}`} (${err.reason}); nothing was changed — pin the pack to another commit with --ref, or ask its owner to remove the path.`,
      { dir, commit: oid, path: err.path },
    );
  }
  if (err instanceof MissingObjectError) {
    return packOpError(
      `${err.role} is missing from ${displayUrl(o.url)}, so ${where} cannot be checked out there; nothing was changed — run grex sync again to fetch it, or check the upstream with git fsck.`,
      { dir, commit: oid, missing: err.oid },
    );
  }
  if (err instanceof GrexError) return err;
  const code = (err as { code?: string } | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    // The move is journaled: what it wrote stays its own, and the next sync finishes it.
    return packOpError(`the disk filled up while checking out commit ${oid.slice(0, 7)} into ${where} (${code}); free some space, then run grex sync again to finish the update.`, { dir, commit: oid, code });
  }
  const msg = err instanceof Error ? (err.message.split("\n")[0] ?? "").replace(/\.$/, "") : String(err);
  return packOpError(`checking out commit ${oid.slice(0, 7)} into ${where} failed (${code ?? msg}); run grex sync again, or grex rm --force and add the pack again.`, { dir, commit: oid });
}

export async function moveTo(o: MoveOptions): Promise<HeadInfo> {
  try {
    return await move(o);
  } catch (err) {
    if (err instanceof GrexError) throw err;
    throw gitLayerError(o, err);
  }
}

/** Anything else the git layer threw (isomorphic-git, the file system), as one sentence. */
function gitLayerError(o: MoveOptions, err: unknown): GrexError {
  const dir = o.shown ?? o.dir;
  const name = err instanceof Error ? err.name : "";
  if (name === "NotFoundError") {
    const oid = /[0-9a-f]{40}/.exec(err instanceof Error ? err.message : "")?.[0];
    return packOpError(
      `pack '${basename(dir)}' (${dir}) lacks ${oid ? `object ${oid.slice(0, 7)}` : "an object"} that its refs need; run grex sync again to fetch it, or grex rm --force and add the pack again.`,
      { dir },
    );
  }
  const code = (err as { code?: string } | null)?.code;
  const msg = err instanceof Error ? (err.message.split("\n")[0] ?? "").replace(/\.$/, "") : String(err);
  return packOpError(`moving pack '${basename(dir)}' (${dir}) to its ref failed (${code ?? msg}); run grex sync again, or grex rm --force and add the pack again.`, { dir });
}

async function move(o: MoveOptions): Promise<HeadInfo> {
  const target = await resolveTarget(o);
  const headRef = readSymref(o.gitdir, "HEAD");
  const headOid = resolveRefSync(o.gitdir, "HEAD");

  if (target.kind === "detached") {
    if (!o.fresh && headRef === null && headOid === target.oid) return { sha: target.oid, branch: null };
    awaitRefsUnlocked(o.gitdir, ["HEAD"]);
    if (o.fresh || headOid !== target.oid) await checkoutTree(o, headOid, target.oid, null);
    writeRefSync(o.gitdir, "HEAD", target.oid);
    clearJournal(o.gitdir); // the move is complete: refs are where the journal said
    return { sha: target.oid, branch: null };
  }

  const branchRef = `refs/heads/${target.name}`;
  const local = resolveRefSync(o.gitdir, branchRef);
  let next = target.oid;
  if (local !== null && local !== target.oid) {
    const relation = await relate(o.gitdir, local, target.oid);
    if (relation === "behind") next = target.oid; // fast-forward
    else if (relation === "ahead") next = local; // ahead of the remote: keep
    else throw diverged(target.name, o.dir, o.url, local, target.oid);
  }
  if (!o.fresh && headRef === branchRef && headOid === next) return { sha: next, branch: target.name };
  if (!o.fresh && headRef !== branchRef) {
    // As git refuses it: one branch is checked out in one worktree only (a task workspace's source holds its tracked branch).
    const other = checkedOutAt(o.gitdir, target.name);
    if (other !== null && resolve(other.gitdir) !== resolve(o.gitdir)) {
      throw packOpError(`cannot put pack '${basename(o.shown ?? o.dir)}' (${o.shown ?? o.dir}) on branch '${target.name}': it is checked out at '${other.path}', and git lets a branch be checked out in one worktree only; leave this pack on its own branch, or switch that worktree away first.`, { dir: o.dir, worktree: other.path });
    }
  }
  // A git command holding the branch's or HEAD's lock stops the move before the work tree changes.
  awaitRefsUnlocked(o.gitdir, [branchRef, "HEAD"]);
  if (o.fresh || headOid !== next) await checkoutTree(o, headOid, next, target.name);
  if (local !== next) writeRefSync(o.gitdir, branchRef, next);
  if (local === null) setTrackingSync(o.gitdir, target.name, REMOTE);
  if (headRef !== branchRef) writeRefSync(o.gitdir, "HEAD", `ref: ${branchRef}`);
  clearJournal(o.gitdir); // the move is complete: refs are where the journal said
  return { sha: next, branch: target.name };
}

async function resolveTarget(o: MoveOptions): Promise<Target> {
  const tracking = (name: string) => resolveRefSync(o.gitdir, `refs/remotes/${REMOTE}/${name}`);
  if (o.ref === null) {
    // No remote HEAD (an odd server): stay on the current branch if it still exists upstream.
    const current = readSymref(o.gitdir, "HEAD")?.replace(/^refs\/heads\//, "") ?? null;
    const name = o.defaultBranch ?? (current !== null && tracking(current) ? current : null);
    const oid = name === null ? null : tracking(name);
    if (name === null || oid === null) throw noBranches(o.url);
    return { kind: "branch", name, oid };
  }
  const ref = o.ref;
  const branch = ref.replace(/^refs\/heads\//, "");
  const branchOid = ref.startsWith("refs/tags/") ? null : tracking(branch);
  if (branchOid) return { kind: "branch", name: branch, oid: branchOid };

  const git = await loadGit();
  const tagOid = ref.startsWith("refs/heads/") ? null : resolveRefSync(o.gitdir, `refs/tags/${ref.replace(/^refs\/tags\//, "")}`);
  if (tagOid) return { kind: "detached", oid: await peelToCommit(git, o, tagOid) };
  if (/^[0-9a-f]{4,40}$/i.test(ref)) {
    let oid: string | null = ref.toLowerCase();
    if (oid.length < 40 || !new ObjectPresence(o.gitdir).has(oid)) {
      try {
        oid = await git.expandOid({ fs, gitdir: o.gitdir, oid });
      } catch {
        oid = null;
      }
    }
    if (oid) return { kind: "detached", oid: await peelToCommit(git, o, oid) };
  }
  throw refNotFound(ref, o.url);
}

/** Follow annotated tags down to the commit; anything but a commit is an error. */
async function peelToCommit(git: Git, o: MoveOptions, oid: string): Promise<string> {
  let cur = oid;
  for (let i = 0; i < 10; i++) {
    const obj = await git.readObject({ fs, gitdir: o.gitdir, oid: cur, format: "parsed" });
    if (obj.type === "commit") return cur;
    if (obj.type !== "tag" || obj.format !== "parsed") break;
    cur = obj.object.object;
  }
  throw packOpError(`ref '${o.ref}' in ${o.url} does not name a commit; use a branch, a tag or a commit sha.`);
}

/**
 * Is `local` behind `remote` (an ancestor: fast-forward), ahead of it (`remote`
 * is its ancestor) or neither? One paint-down walk over the commits that
 * differ (ahead-behind.ts) answers both questions, ending at a shallow
 * clone's boundary as git does. A commit that walk cannot read goes to
 * isomorphic-git, which names the missing object as before.
 */
async function relate(gitdir: string, local: string, remote: string): Promise<"behind" | "ahead" | "diverged"> {
  let counts: { ahead: number; behind: number; cut?: string } | null = null;
  try {
    counts = countLeftRight(gitdir, local, remote);
  } catch {
    counts = null;
  }
  // Across a shallow boundary the counts are not exact but their signs are: a side with
  // commits of its own down to the boundary is not an ancestor of the other.
  if (counts) return counts.ahead === 0 ? "behind" : counts.behind === 0 ? "ahead" : "diverged";
  const git = await loadGit();
  if (await isAncestor(git, gitdir, local, remote)) return "behind";
  if (await isAncestor(git, gitdir, remote, local)) return "ahead";
  return "diverged";
}

async function isAncestor(git: Git, gitdir: string, ancestor: string, oid: string): Promise<boolean> {
  return git.isDescendent({ fs, gitdir, oid, ancestor, depth: -1 });
}


/**
 * Make the work tree and index show commit `oid`, refusing (like git) to
 * overwrite local changes: only the files that differ from HEAD's commit are
 * rewritten, journaled (checkout-diff.ts); an index we do not handle falls
 * back to isomorphic-git's full checkout.
 */
async function checkoutTree(o: MoveOptions, headOid: string | null, oid: string, branch: string | null): Promise<void> {
  // A new clone's checkout reads the trees and blobs through one object store (its packs opened once, its trees cached for the index's cache-tree).
  const store = o.fresh ? new ObjectStore(o.gitdir) : undefined;
  try {
    // The whole target tree is checked before anything is written: a refused tree changes nothing.
    let target: Map<string, string>;
    try {
      target = await verifiedFlatTree(o.gitdir, oid, store);
      collectAfter(target.size); // the trees parsed on the way are dead; the checkout allocates next
      // A partial clone: the blobs of the tree that the filter left out come over first, in one batch.
      await ensureBlobs(o.gitdir, o.dir, o.url, target, o.signal ?? new AbortController().signal);
    } catch (err) {
      throw refusedCommit(o, oid, err);
    }
    try {
      await writeTree(o, headOid, oid, branch, target, store);
    } catch (err) {
      throw refusedCommit(o, oid, err);
    }
  } finally {
    store?.close();
  }
}

async function writeTree(o: MoveOptions, headOid: string | null, oid: string, branch: string | null, target: Map<string, string>, store?: ObjectStore): Promise<void> {
  if (o.fresh) return checkoutFresh(o.dir, o.gitdir, oid, target, o.shown ?? o.dir, true, store);
  if (headOid !== null && (await checkoutDiff(o.dir, o.gitdir, headOid, oid, branch, target))) return;
  assertNoLinkedParents(o, target);
  const git = await loadGit();
  try {
    // isomorphic-git writes `index` itself, knowing nothing of index.lock: held around it, a git command is kept out (index-manager.ts).
    await withIndexLock(o.gitdir, o.shown ?? o.dir, () => git.checkout({ fs, dir: o.dir, gitdir: o.gitdir, ref: oid, noUpdateHead: true, force: false, track: false }));
  } catch (err) {
    if (err instanceof GrexError) throw err;
    if (err instanceof Error && err.name === "CheckoutConflictError") {
      const data = (err as { data?: { filepaths?: unknown } }).data;
      const files = Array.isArray(data?.filepaths) ? data.filepaths.slice(0, 3).join(", ") : "some files";
      throw packOpError(
        `moving ${o.shown ?? o.dir} to ${oid.slice(0, 7)} would overwrite local changes (${files}); commit or stash them, then sync again.`,
        { dir: o.dir },
      );
    }
    throw transportError(o.url, err);
  }
}
