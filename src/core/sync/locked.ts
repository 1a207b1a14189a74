// `sync --locked` / `init --locked` (or GREX_LOCKED=1): reproduce the commits
// grex.lock.jsonl records, children included, and never write the lockfile.
// Everything that can be known before a pack moves is checked first, and
// named: a registered pack with no locked commit (exit 3), a pack the lockfile
// records at two commits after a merge (exit 3), a pack on disk whose locked
// commit is neither here nor in its upstream after a fetch (exit 4). A pack
// not yet on disk is cloned before any existing pack moves; a clone that
// cannot reach its commit leaves nothing behind and stops the run (exit 4).
import { existsSync } from "node:fs";
import { GrexError, integrityError, packOpError } from "../base/errors.ts";
import { backendFor, isGitRepo, readHeadSync } from "../git/backend.ts";
import { ObjectPresence } from "../git/objects/objects.ts";
import { gitdirOf, RefFiles } from "../git/refs/refs.ts";
import { trackedBranch } from "./off-branch.ts";
import { attachLocked } from "./topic.ts";
import { withBackendLock, withPackLock } from "../locks/locks.ts";
import { type LockEntry, lockConflicts } from "../workspace/lockfile.ts";
import type { Workspace } from "../base/workspace.ts";
import type { TreeNode } from "./tree.ts";

const list = (ids: readonly string[]) => ids.map((id) => `'${id}'`).join(", ");

/** The locked commit of a node, or an error naming it (exit 3) when the lockfile has none. */
export function lockedCommit(node: Pick<TreeNode, "id">, lock: ReadonlyMap<string, LockEntry>): string {
  const sha = lock.get(node.id)?.sha ?? "";
  if (sha === "") {
    throw integrityError(
      `Pack '${node.id}' has no locked commit in grex.lock.jsonl, so --locked cannot reproduce it; run \`grex sync\` without --locked to resolve it and commit grex.lock.jsonl.`,
      { pack: node.id },
    );
  }
  return sha;
}

/** A lock entry's id is the root's or one of its descendants'. */
const under = (root: TreeNode, id: string) => id === root.id || id.startsWith(`${root.id}/`);

/**
 * The checks before anything changes. Throws the first class of problem with
 * every pack it concerns named. Packs on disk lacking their locked commit are
 * fetched (remote-tracking refs only: HEAD and work tree stay as they are).
 */
export async function lockedPreflight(
  ws: Workspace,
  roots: readonly TreeNode[],
  lock: ReadonlyMap<string, LockEntry>,
  signal: AbortSignal,
  dryRun: boolean,
): Promise<void> {
  const conflicts = [...lockConflicts(ws).keys()].filter((id) => roots.some((r) => under(r, id)));
  if (conflicts.length > 0) {
    throw integrityError(
      `grex.lock.jsonl records ${list(conflicts)} at two different commits (a merge kept both branches' lines); keep the line you want, or run \`grex sync\` without --locked, and commit the result.`,
      { packs: conflicts },
    );
  }
  const unlocked = roots.filter((r) => (lock.get(r.id)?.sha ?? "") === "").map((r) => r.id);
  if (unlocked.length > 0) {
    throw integrityError(
      `${unlocked.length === 1 ? "Pack" : "Packs"} ${list(unlocked)} ${unlocked.length === 1 ? "is" : "are"} registered in grex.jsonl but ${unlocked.length === 1 ? "has" : "have"} no locked commit in grex.lock.jsonl; run \`grex sync\` without --locked to resolve ${unlocked.length === 1 ? "it" : "them"} and commit grex.lock.jsonl.`,
      { packs: unlocked },
    );
  }
  const missing: string[] = [];
  await Promise.all(
    roots.flatMap((root) =>
      [...lock.values()]
        .filter((e) => under(root, e.id) && e.sha !== "")
        .map(async (e) => {
          const dir = root.dir + e.id.slice(root.id.length);
          if (!existsSync(dir) || !isGitRepo(dir)) return;
          if (readHeadSync(dir)?.sha === e.sha || hasCommit(dir, e.sha) || dryRun) return; // a dry run fetches nothing
          const url = e.id === root.id ? root.url : (e.url ?? null);
          if (url === null) return; // a child without its origin recorded: its update reports it
          await withPackLock(ws, dir, signal, () => withBackendLock(ws, dir, signal, () => backendFor(url).fetch(dir, url, { signal })));
          if (!hasCommit(dir, e.sha)) missing.push(`'${e.id}' (${e.sha.slice(0, 7)} from ${url})`);
        }),
    ),
  );
  if (missing.length > 0) {
    missing.sort();
    throw packOpError(
      `The locked commit of ${missing.join(", ")} is no longer in its upstream (history rewritten or the branch deleted); nothing was changed. Run \`grex sync\` without --locked to resolve a commit that exists, and commit grex.lock.jsonl.`,
    );
  }
}

function hasCommit(dir: string, sha: string): boolean {
  const gitdir = gitdirOf(dir);
  return gitdir !== null && new ObjectPresence(gitdir).has(sha);
}

/** After a clone pass: the first failed node of a locked run as its own error (exit 3 for a missing lock entry, else 4). */
export function lockedFailure(nodes: readonly TreeNode[]): GrexError | null {
  const failed = nodes.filter((n) => n.outcome === "failed");
  if (failed.length === 0) return null;
  const first = failed[0] as TreeNode;
  const kind = first.message.includes("no locked commit") ? "integrity" : "pack_op";
  return new GrexError(kind, `--locked: ${list(failed.map((f) => f.id))} could not be put on ${failed.length === 1 ? "its" : "their"} locked commit${failed.length === 1 ? "" : "s"}: ${first.message}`, { packs: failed.map((f) => f.id) });
}


/**
 * After a pack was put on its locked commit (detached): on its tracked branch
 * at that commit when the commit is on origin's branch (topic.ts attachLocked).
 */
export function settleLocked(node: TreeNode, lock: ReadonlyMap<string, LockEntry>): void {
  const head = node.head;
  if (head === null || head.branch !== null) return;
  const gitdir = gitdirOf(node.dir);
  if (gitdir === null) return;
  const base = trackedBranch(new RefFiles(gitdir), node.declaredRef !== undefined ? node.declaredRef : null, lock.get(node.id));
  node.head = attachLocked(node.dir, head.sha, base);
}

/** Packs --locked left as they are (a topic branch, a HEAD the user detached, uncommitted changes): failed, never a silent exit 0. */
export function notApplied(nodes: readonly TreeNode[]): void {
  for (const n of nodes) {
    if (n.outcome !== "skipped" && n.outcome !== "dirty") continue;
    n.outcome = "failed";
    n.message = `not on its locked commit: ${n.message}`;
  }
}
