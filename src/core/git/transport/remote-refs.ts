// What a fetch must change, worked out from the remote's advertised refs and
// the local files alone: when nothing changed upstream (the common case for a
// sync) no object is read and isomorphic-git is not even loaded.
import { firstMissing, knownTips } from "./connectivity.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { listRefsSync, readSymref, writeRefSync } from "../refs/refs.ts";

export const REMOTE = "origin";
const TRACKING = `refs/remotes/${REMOTE}/`;

/** The refs a remote advertises: branch name → oid, tag name → oid (the tag object for annotated tags), HEAD's branch. */
export interface RemoteRefs {
  branches: Map<string, string>;
  tags: Map<string, string>;
  /** The branch the remote's HEAD names, or one at HEAD's commit; null if none. */
  defaultBranch: string | null;
}

export interface FetchResult {
  defaultBranch: string | null;
  /** Whether any ref was written or pruned. */
  changed: boolean;
}

export interface RefPlan {
  /** Full local ref name → oid to write (remote-tracking branches, tags we lack). */
  writes: Array<[string, string]>;
  /** Remote-tracking refs whose branch is gone upstream. */
  prunes: string[];
  /** Wanted object ids the local store does not have. */
  missing: string[];
}

export function pickDefaultBranch(branches: Map<string, string>, headTarget: string | null, headOid: string | null): string | null {
  if (headTarget?.startsWith("refs/heads/") && branches.has(headTarget.slice(11))) return headTarget.slice(11);
  if (headOid) for (const [name, oid] of branches) if (oid === headOid) return name;
  for (const name of ["main", "master"]) if (branches.has(name)) return name;
  return branches.keys().next().value ?? null;
}

/**
 * Compare the remote's refs with ours. Tags already present are left alone,
 * as git does (no clobbering); a ref counts as current only if its object is
 * here too, so an interrupted fetch is never mistaken for a finished one.
 */
export function planRefs(gitdir: string, remote: RemoteRefs): RefPlan {
  const presence = new ObjectPresence(gitdir);
  const tracking = listRefsSync(gitdir, TRACKING);
  const tags = listRefsSync(gitdir, "refs/tags/");
  // A tip object alone proves nothing (a killed fetch may have written a commit without its tree): one our refs do not name yet must be complete.
  // Every such tip is checked in one walk (a fetch of 100 commits and 100 tags walks the new history once, not once per tag); only when
  // that walk finds a gap is each tip checked on its own, to tell which are whole.
  let known: Set<string> | null = null;
  let allWhole: boolean | null = null;
  const unchecked = () => {
    const out = new Set<string>();
    for (const [name, oid] of remote.branches) if (tracking.get(`${TRACKING}${name}`) !== oid) out.add(oid);
    for (const [name, oid] of remote.tags) if (!tags.has(`refs/tags/${name}`)) out.add(oid);
    return [...out].filter((oid) => presence.has(oid) && !(known as Set<string>).has(oid));
  };
  const complete = (oid: string) => {
    if (!presence.has(oid)) return false;
    known ??= knownTips(gitdir);
    if (known.has(oid)) return true;
    allWhole ??= firstMissing(gitdir, unchecked(), known) === null;
    return allWhole || firstMissing(gitdir, [oid], known) === null;
  };
  const writes: Array<[string, string]> = [];
  const missing = new Set<string>();
  for (const [name, oid] of remote.branches) {
    const ref = `${TRACKING}${name}`;
    const current = tracking.get(ref) === oid;
    const have = current ? presence.has(oid) : complete(oid);
    if (!have) missing.add(oid);
    if (!current || !have) writes.push([ref, oid]);
  }
  for (const [name, oid] of remote.tags) {
    const ref = `refs/tags/${name}`;
    if (tags.has(ref)) continue;
    if (!complete(oid)) missing.add(oid);
    writes.push([ref, oid]);
  }
  const prunes = [...tracking.keys()].filter((ref) => ref !== `${TRACKING}HEAD` && !remote.branches.has(ref.slice(TRACKING.length)));
  return { writes, prunes, missing: [...missing] };
}

/** Point refs/remotes/origin/HEAD at the remote's default branch, if it is not already. */
export function writeOriginHead(gitdir: string, defaultBranch: string | null): void {
  if (defaultBranch === null) return;
  const target = `${TRACKING}${defaultBranch}`;
  if (readSymref(gitdir, `${TRACKING}HEAD`) !== target) writeRefSync(gitdir, `${TRACKING}HEAD`, `ref: ${target}`);
}
