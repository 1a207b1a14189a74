// Task workspaces (`grex init --from <source> --branch <topic>`): the packs of
// a source workspace, each a linked worktree of the source's own clone at the
// same relative path, checked out on <topic> (made at the pack's tracked
// branch tip when missing). Objects and refs stay in the source's repository,
// so the topic's commits are there the moment they are made; the task
// workspace has its own HEADs, indexes, grex.jsonl and grex.lock.jsonl. Each
// `add` line of its grex.jsonl names the source in `from`.
import { existsSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { usageError } from "../base/errors.ts";
import { branchNameProblem } from "../base/branch-name.ts";
import { MANIFEST_FILE, type Workspace, workspaceAt } from "../base/workspace.ts";
import { dotGitOf, layoutOfGitdir, linkedAdminFiles, worktreesDir } from "../git/layout/layout.ts";
import { RefFiles } from "../git/refs/refs.ts";
import { addWorktree } from "../git/worktree/linked-worktrees.ts";
import { holdWriterThread } from "../git/worktree/file-writer.ts";
import { listWorktrees } from "../git/worktree/worktree-list.ts";
import type { LockEntry } from "../workspace/lockfile.ts";
import type { ManifestEvent, PackEntry } from "../workspace/manifest.ts";
import type { PackNode, WorkspaceView } from "../workspace/packs.ts";

export interface TaskPack {
  id: string;
  path: string;
  branch: string;
  /** The commit checked out. */
  sha: string;
  /** Whether <topic> was made for this pack (false: it existed and is checked out). */
  created_branch: boolean;
}

/** The source workspace of `from` (relative to `cwd`), or the one-sentence usage error. */
export function sourceWorkspace(cwd: string, from: string, target: string): Workspace {
  const root = resolve(cwd, from);
  if (!existsSync(root)) throw usageError(`--from names ${root}, which does not exist; pass the directory of the workspace to take the packs from.`, { field: "from" });
  if (!existsSync(join(root, MANIFEST_FILE))) {
    throw usageError(`--from names ${root}, which is not a grex workspace (no ${MANIFEST_FILE}); pass the directory of a workspace made by grex init.`, { field: "from" });
  }
  const rel = relative(root, target);
  if (rel === "" || (!rel.startsWith("..") && !rel.startsWith(sep))) {
    throw usageError(`the task workspace ${target} would lie inside its source ${root}; run grex init --from in a directory outside the source.`, { field: "from" });
  }
  return workspaceAt(root);
}

/** The one-sentence usage error for a topic branch git would refuse, or for a missing one. */
export function checkTopic(branch: string | undefined): string {
  if (branch === undefined) throw usageError("--from needs --branch <topic>: the branch every pack of the task workspace is checked out on.", { field: "branch" });
  const problem = branchNameProblem(branch);
  if (problem !== null) throw usageError(`'${branch}' is not a valid branch name (${problem}); pick a name git check-ref-format --branch accepts.`, { field: "branch" });
  return branch;
}

/** The selected top-level packs and every child below them, in the view's order. */
export function subtreesOf(view: WorkspaceView, tops: ReadonlySet<string>): PackNode[] {
  const byId = new Map(view.packs.map((n) => [n.id, n]));
  const rootOf = (n: PackNode): string => {
    let at = n;
    while (at.parent !== null) at = byId.get(at.parent) ?? at;
    return at.id;
  };
  return view.packs.filter((n) => tops.has(rootOf(n)));
}

/** The commit a missing <topic> starts at: the tip of the pack's tracked branch (local, else origin's), else HEAD. */
function startCommit(gitdir: string, n: PackNode): string | null {
  const refs = new RefFiles(gitdir);
  const tracked = n.lock?.branch ?? refs.head()?.branch ?? null;
  if (tracked !== null) {
    const tip = refs.resolve(`refs/heads/${tracked}`) ?? refs.resolve(`refs/remotes/origin/${tracked}`);
    if (tip !== null) return tip;
  }
  return refs.resolve("HEAD");
}

/**
 * The registrations (their admin directories) of each pack's repository that
 * point at the pack's place in the task workspace, as `preflight` found them:
 * what an earlier `init --from` here left, for makeWorktrees to replace.
 */
export type Leftovers = ReadonlyMap<string, readonly string[]>;

/**
 * Refuse before anything is made: a pack missing in the source, or <topic>
 * checked out in another worktree. A worktree at the pack's own place in
 * `root` is not another: an earlier `init --from` here was cut short, and
 * makeWorktrees replaces what it left (clearLeftover), from the
 * registrations returned here (one listing of each repository's worktrees).
 */
export function preflight(nodes: readonly PackNode[], topic: string, root: string): Leftovers {
  const leftovers = new Map<string, string[]>();
  for (const n of nodes) {
    const gitdir = dotGitOf(n.dir);
    if (gitdir === null) {
      throw usageError(`pack '${n.id}' is not on disk in the source workspace (${n.dir}), so it has no repository to share; run grex sync there first, or leave it out with --filter.`, { pack: n.id });
    }
    const place = join(root, n.path);
    const worktrees = listWorktrees(gitdir);
    leftovers.set(
      n.id,
      worktrees.filter((w) => w.name !== null && samePath(w.path, place)).map((w) => w.gitdir),
    );
    const other = worktrees.find((w) => !w.bare && w.branch === topic) ?? null; // checkedOutAt, on the same listing
    if (other !== null && !samePath(other.path, place)) {
      throw usageError(`branch '${topic}' of pack '${n.id}' is already checked out at '${other.path}', and git lets a branch be checked out in one worktree only; pick another --branch or remove that worktree.`, {
        pack: n.id,
        worktree: other.path,
      });
    }
  }
  return leftovers;
}

function samePath(a: string, b: string): boolean {
  const real = (p: string) => (existsSync(p) ? realpathSync(p) : resolve(p));
  return real(a) === real(b);
}

/**
 * What an `init --from` into this directory cut short (killed) left at
 * `path`: a linked worktree of this same repository, made in part (still
 * locked "initializing") or whole but never registered in the task
 * workspace's grex.jsonl. Removed (work tree and registration; its branch
 * stays) so it is made again; a whole one with changes is refused instead.
 */
async function clearLeftover(gitdir: string, path: string, id: string, found: readonly string[] | undefined): Promise<void> {
  // The registrations pointing at `path` (its work tree may be gone; preflight's listing, else listed now), and the one its .git file names (a registration made before its back-pointer).
  const admins = new Set(found ?? listWorktrees(gitdir).filter((w) => w.name !== null && samePath(w.path, path)).map((w) => w.gitdir));
  let text = "";
  try {
    if (existsSync(path)) text = readFileSync(join(path, ".git"), "utf8"); // a new place (the usual case) has none
  } catch {
    // no .git file
  }
  const m = /^gitdir: (.+?)\r?\n?$/.exec(text);
  // Only this repository's; a .git of another one stays, and addWorktree refuses the directory.
  if (m !== null) {
    const registry = worktreesDir(layoutOfGitdir(layoutOfGitdir(gitdir).commonDir));
    if (existsSync(registry) && dirname(resolve(m[1] as string)) === realpathSync(registry)) admins.add(resolve(m[1] as string));
  }
  for (const admin of admins) await clearOne(admin, path, id);
}

async function clearOne(admin: string, path: string, id: string): Promise<void> {
  if (existsSync(path) && !existsSync(linkedAdminFiles(admin).locked)) {
    const { worktreeHasChanges } = await import("../git/worktree/linked-worktrees.ts");
    if (await worktreeHasChanges(path)) {
      throw usageError(`pack '${id}' has a worktree at ${path}, left by an earlier grex init --from that was cut short, with changes in it; commit or remove them, or remove that directory, then run grex init --from again.`, { pack: id, path });
    }
  }
  rmSync(path, { recursive: true, force: true });
  rmSync(admin, { recursive: true, force: true });
}

/**
 * Many packs: one pack's files (and its registration's) are created by the
 * writer thread while the next pack's objects are read (file-writer.ts). The
 * thread held for them, or null for a few packs; release it once.
 */
export function holdWriterFor(nodes: readonly PackNode[]): (() => void) | null {
  return nodes.length >= 8 ? holdWriterThread() : null;
}

/** Make the linked worktree of each pack under `root`, a few at a time; on a failure the others already made are removed again. */
export async function makeWorktrees(root: string, nodes: readonly PackNode[], topic: string, env: Record<string, string | undefined>, leftovers?: Leftovers): Promise<TaskPack[]> {
  const out: TaskPack[] = [];
  const made: string[] = [];
  let next = 0;
  let queue: PackNode[] = [];
  const worker = async () => {
    while (next < queue.length) {
      const n = queue[next++] as PackNode;
      const gitdir = dotGitOf(n.dir) as string;
      const path = join(root, n.path);
      await clearLeftover(gitdir, path, n.id, leftovers?.get(n.id));
      const added = await addWorktree({ repoGitdir: gitdir, path, branch: topic, start: startCommit(gitdir, n), env });
      made.push(path);
      out.push({ id: n.id, path: n.path, branch: topic, sha: added.head, created_branch: added.createdBranch });
    }
  };
  const release = holdWriterFor(nodes);
  try {
    // A child's worktree lies inside its parent's: each depth after the one above it.
    const depths = [...new Set(nodes.map((n) => n.depth))].sort((a, b) => a - b);
    for (const depth of depths) {
      queue = nodes.filter((n) => n.depth === depth);
      next = 0;
      await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
    }
  } catch (err) {
    const { removeWorktree } = await import("../git/worktree/linked-worktrees.ts");
    for (const p of made) await removeWorktree(p, { force: true }).catch(() => {});
    throw err;
  } finally {
    release?.();
  }
  const order = new Map(nodes.map((n, i) => [n.id, i]));
  return out.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
}

/** The task workspace's grex.jsonl lines: the selected top-level packs as the source registers them, each naming the source in `from`. */
export async function taskEvents(source: Workspace, view: WorkspaceView, nodes: readonly PackNode[]): Promise<ManifestEvent[]> {
  const { makeEvent } = await import("../workspace/manifest.ts");
  return nodes
    .filter((n) => n.parent === null)
    .map((n) => {
      const e = view.manifest.get(n.id) as PackEntry;
      return makeEvent("add", n.id, { url: e.url, path: e.path, type: e.type, ref: e.ref, ...(e.tags ? { tags: e.tags } : {}), ...(e.depth !== undefined ? { depth: e.depth } : {}), ...(e.filter !== undefined ? { filter: e.filter } : {}), from: source.root });
    });
}

/** The task workspace's grex.lock.jsonl entries: the source's shared facts, at the commits the worktrees have. */
export function taskLockEntries(nodes: readonly PackNode[], packs: readonly TaskPack[]): LockEntry[] {
  const sha = new Map(packs.map((p) => [p.id, p.sha]));
  const out: LockEntry[] = [];
  for (const n of nodes) {
    if (n.lock === undefined) continue;
    const { id, branch, actions_hash, type, url, ref } = n.lock;
    out.push({ id, sha: sha.get(id) ?? n.lock.sha, branch, installed_at: "", actions_hash, type, ...(url !== undefined ? { url } : {}), ...(ref !== undefined ? { ref } : {}) });
  }
  return out;
}

/** The source workspace a task workspace's grex.jsonl names (the `from` of its add lines), or null for an ordinary workspace. */
export function taskSourceOf(events: readonly ManifestEvent[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as ManifestEvent & { from?: unknown };
    if (e.op === "add" && typeof e.from === "string") return e.from;
  }
  return null;
}
