// Whose checkout is it? Each pack has a tracked branch: its pinned branch, or
// the remote's default branch (origin/HEAD, recorded at clone and refreshed by
// each fetch). Where HEAD is decides what sync may do with it:
//   tracked    on the tracked branch, or on the branch grex last put it on:
//              sync moves it (fast-forward only);
//   grex       detached where grex itself left it (`sync --locked`): grex's
//              to move, by a plain sync or a later --locked, without --force;
//   topic      on another local branch: the user's work. Not drift: sync
//              fetches, fast-forwards the tracked branch ref beside it and
//              converges setup from what is checked out (topic.ts);
//   off-branch detached anywhere else (the user's doing): left alone, like a
//              dirty pack, unless --force or a new pin (`update --ref`).
import type { HeadInfo } from "../git/refs/head.ts";
import type { LockEntry } from "../workspace/lockfile.ts";

export type CheckoutKind = "tracked" | "grex" | "topic" | "off-branch";

export interface Checkout {
  kind: CheckoutKind;
  /** The tracked branch (a topic's base), or null when the pack is pinned to a tag or a commit. */
  base: string | null;
  /** off-branch: why, in one clause. */
  why: string | null;
}

/** What a ref store answers: a ref's text (`ref: …` for a symref) and a full ref resolved to its commit. */
export interface RefReader {
  loose(ref: string): string | null;
  resolve(ref: string): string | null;
}

/**
 * The pack's tracked branch: `ref` when origin has a branch of that name, the
 * remote's default branch when nothing is pinned (else the branch the lock
 * records), null for a tag or a commit.
 */
export function trackedBranch(refs: RefReader, ref: string | null, lock: LockEntry | undefined): string | null {
  if (ref !== null) {
    if (ref.startsWith("refs/tags/")) return null;
    const name = ref.replace(/^refs\/heads\//, "");
    return refs.resolve(`refs/remotes/origin/${name}`) !== null ? name : null;
  }
  const head = refs.loose("refs/remotes/origin/HEAD");
  if (head?.startsWith("ref: refs/remotes/origin/")) return head.slice("ref: refs/remotes/origin/".length);
  return lock?.branch ?? null;
}

export function checkoutOf(head: HeadInfo | null, tracked: string | null, lock: LockEntry | undefined): Checkout {
  const at = (kind: CheckoutKind, why: string | null = null): Checkout => ({ kind, base: tracked, why });
  if (head === null) return at("tracked");
  if (head.branch !== null) {
    // The tracked branch, or the one grex last put it on (a teammate re-pinned it since: sync moves it).
    if (head.branch === tracked || (lock !== undefined && lock.sha !== "" && head.branch === lock.branch)) return at("tracked");
    if (lock === undefined && tracked === null) return at("tracked");
    return at("topic");
  }
  // Detached: as pinned (a tag or a commit), or where grex left it.
  if (tracked === null && (lock === undefined || lock.branch === null)) return at("tracked");
  const made = lock?.checkout;
  if (made !== undefined && made.branch === null && made.sha === head.sha) return at("grex");
  // Detached exactly at the locked commit: where `sync --locked` of an older grex put a pack.
  if (lock !== undefined && lock.sha === head.sha) return at("grex");
  if (lock === undefined || lock.sha === "") return at("tracked");
  const pin = tracked ?? lock.branch;
  return at("off-branch", pin === null ? `detached at ${head.sha.slice(0, 7)}, not where grex left it` : `detached at ${head.sha.slice(0, 7)} but tracks branch '${pin}'`);
}

/** Why `head` is off its pin (one clause), or null: only a HEAD the user detached is (a topic branch is work, not drift). */
export function offBranch(head: HeadInfo | null, lock: LockEntry | undefined, tracked: string | null = lock?.branch ?? null): string | null {
  if (!head || !lock || lock.sha === "") return null;
  const c = checkoutOf(head, tracked, lock);
  return c.kind === "off-branch" ? c.why : null;
}
