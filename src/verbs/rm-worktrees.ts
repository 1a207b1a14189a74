// `rm` and linked worktrees (task workspaces, `init --from`):
// - in a task workspace, a pack is a linked worktree of the source's clone:
//   deleting it loses only uncommitted or untracked files (its commits are on
//   its branch in the source's repository), so only those are checked, and its
//   registration in the source's `worktrees/` goes with it;
// - in the source workspace, a pack whose repository other workspaces still
//   have worktrees of is not deleted (it holds their objects and branches).
import { existsSync } from "node:fs";
import { packOpError } from "../core/base/errors.ts";

export interface RmPack {
  id: string;
  dir: string;
}

/** The packs (the pack and its children) that are linked worktrees, with their registrations. */
export async function linkedPacks(packs: readonly RmPack[]): Promise<Array<RmPack & { admin: string }>> {
  const { linkedGitdirOf } = await import("../core/git/worktree/worktree-list.ts");
  const out: Array<RmPack & { admin: string }> = [];
  for (const p of packs) {
    const admin = existsSync(p.dir) ? linkedGitdirOf(p.dir) : null;
    if (admin !== null) out.push({ ...p, admin });
  }
  return out;
}

/** The linked worktrees among `packs` with uncommitted or untracked changes (what `git worktree remove` refuses). */
export async function changedWorktrees(packs: readonly RmPack[]): Promise<string[]> {
  const { worktreeHasChanges } = await import("../core/git/worktree/linked-worktrees.ts");
  const out: string[] = [];
  for (const p of packs) if (await worktreeHasChanges(p.dir)) out.push(p.id);
  return out;
}

/** Refuse to delete a source pack (or child) whose repository still has linked worktrees elsewhere, naming them. */
export async function assertNoWorktrees(packs: readonly RmPack[]): Promise<void> {
  const [{ otherWorktrees }, { dotGitOf }] = await Promise.all([import("../core/git/worktree/worktree-list.ts"), import("../core/git/layout/layout.ts")]);
  for (const p of packs) {
    const gitdir = existsSync(p.dir) ? dotGitOf(p.dir) : null;
    if (gitdir === null) continue;
    const others = otherWorktrees(gitdir).filter((w) => w.path !== p.dir);
    if (others.length === 0) continue;
    const names = others.map((w) => `${w.path}${w.branch ? ` (${w.branch})` : ""}`).join(", ");
    throw packOpError(
      `Refusing to delete '${p.id}': its repository still has worktrees in other workspaces (${names}), whose branches and objects live in it; remove those packs there first (grex rm), or delete those directories and run grex doctor --fix, or pass --keep-files to unregister only.`,
      { pack: p.id, worktrees: others.map((w) => w.path) },
    );
  }
}

/** After the directories are gone: drop their registrations from the source's `worktrees/`. */
export async function forgetRegistrations(linked: ReadonlyArray<{ admin: string }>): Promise<void> {
  const { forgetRegistration } = await import("../core/git/worktree/linked-worktrees.ts");
  for (const l of linked) forgetRegistration(l.admin);
}

/**
 * Before the pack's directory is deleted: what would be lost, refused unless
 * `force` (then returned as `discarded`). A task workspace's pack loses only
 * uncommitted or untracked files; any other pack also its unpushed commits,
 * stashes and branches, and is refused while other workspaces have worktrees of it.
 */
export async function workBeforeDelete(
  ctx: { warn(m: string): void },
  id: string,
  dir: string,
  children: readonly RmPack[],
  force: boolean,
): Promise<{ linked: Array<RmPack & { admin: string }>; discarded: string[] }> {
  const all = [{ id, dir }, ...children];
  const linked = await linkedPacks(all);
  if (linked.length > 0) {
    // A task workspace's pack: a linked worktree, whose commits stay on its branch in the source's repository.
    const changed = await changedWorktrees(linked);
    if (changed.length > 0 && !force) {
      throw packOpError(
        `Refusing to delete uncommitted or untracked changes in the worktree of ${changed.map((c) => `'${c}'`).join(", ")}; commit them (they stay on the branch in the source's repository), or pass --force to delete them.`,
      );
    }
    return { linked, discarded: changed.map((c) => `${c}: uncommitted or untracked changes`) };
  }
  await assertNoWorktrees(all);
  // Deleting files is what loses work: check the pack and every child repository in it.
  const { describeLocalWork, findLocalWork } = await import("../core/git/local-work.ts");
  const found = await findLocalWork(all.filter((c) => existsSync(c.dir)));
  if (found.length > 0 && !force) {
    throw packOpError(
      `Refusing to delete work that exists only here: ${describeLocalWork(found)}; push or stash-and-push it, pass --keep-files to unregister only, or --force to delete it anyway.`,
    );
  }
  if (found.length > 0) ctx.warn(`--force: deleting work that exists only here: ${describeLocalWork(found)}`);
  return { linked, discarded: found.map((f) => `${f.id}: ${f.lost.join("; ")}`) };
}
