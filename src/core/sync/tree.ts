// Fetch phase of sync: bring every selected pack (and, recursively, its
// children) onto disk at the right commit, and load its pack.yaml. Git work
// for independent packs runs in parallel under the shared scheduler; each pack
// is guarded by its pack lock and each repository operation by its backend lock.
import { asActivityOf } from "../base/activity.ts";
import { existsSync, rmSync } from "node:fs";
import { dirname, join, resolve as resolvePath } from "node:path";
import { GrexError, integrityError, packOpError, throwIfAborted, toGrexError } from "../base/errors.ts";
import { backendFor, isGitRepo, readHeadSync, type HeadInfo } from "../git/backend.ts";
import { withBackendLock, withPackLock } from "../locks/locks.ts";
import { withRepoLocks } from "./repo-lock.ts";
import { INFINITE_DEPTH } from "../git/layout/shallow-file.ts";
import { urlKey } from "../base/naming.ts";
import type { PackManifest } from "../pack/schema.ts";
import type { Scheduler } from "../locks/scheduler.ts";
import type { Workspace } from "../base/workspace.ts";

export type PackOutcome = "ok" | "skipped" | "dirty" | "failed";

export interface TreeNode {
  id: string;
  /** Workspace-relative, `/`-separated. */
  path: string;
  dir: string;
  url: string;
  ref: string | null;
  /** Type recorded in the manifest (top level) or `meta` for children until pack.yaml says otherwise. */
  recordedType: string;
  /** A partial clone's filter (grex.jsonl's `filter`): a clone of the pack asks for it. */
  filter?: string;
  depth: number;
  parent: TreeNode | null;
  manifest: PackManifest | null;
  outcome: PackOutcome;
  message: string;
  shaBefore: string | null;
  head: HeadInfo | null;
  /** The clone happened in this run. */
  cloned: boolean;
  /** Dry run: the commit (or tag object) the remote would move this pack to. */
  wouldMoveTo?: string;
  /** The ref the manifest or pack.yaml declares, when `pin` replaced `ref` for this run (`--locked`). */
  declaredRef?: string | null;
  /** A shallow clone of this many commits (the manifest's `depth`; a child's, its parent's); absent: full history. */
  cloneDepth?: number;
  /** Fetch the history below a shallow clone's boundary (`update --depth 0`). */
  unshallow?: boolean;
  /** On a topic branch (off-branch.ts): HEAD and work tree were left; the tracked branch `base` is at `baseSha`. */
  topic?: { base: string | null; baseSha: string | null };
  children: TreeNode[];
}

export interface FetchOptions {
  ws: Workspace;
  scheduler: Scheduler;
  signal: AbortSignal;
  /** The call's environment (submodule budgets, the user's git config); process.env when absent. */
  env?: Record<string, string | undefined>;
  dryRun: boolean;
  force: boolean;
  recursive: boolean;
  /** Fetch and move existing packs (false: only clone the missing ones, as `init` does). */
  updateExisting: boolean;
  /** Stop scheduling new packs after the first failure. */
  failFast: boolean;
  loadPack(dir: string): Promise<PackManifest | null>;
  /** The ref a pack must be put on instead of its declared one (`--locked`: its locked commit); may throw to fail the pack. */
  pin?(node: TreeNode): string;
  /** Why an existing pack must be left as it is (e.g. off its branch), or null. Not asked with --force. */
  leaveAlone?(node: TreeNode): string | null;
  /** The tracked branch of a pack on a topic branch (null: pinned to a tag or commit), undefined when not on one. Not asked with --force. */
  topicOf?(node: TreeNode): string | null | undefined;
  /** After a pack was cloned or moved (under its backend lock): a last adjustment of its checkout (`--locked` puts it on its branch). */
  settle?(node: TreeNode): void;
  onDone(node: TreeNode): void;
  onDiscovered(count: number): void;
}

export const effectiveType = (n: TreeNode): string => n.manifest?.type ?? n.recordedType;

/** Normalise a URL or path for cycle detection (trailing slashes and `.git` do not matter). */

export function newNode(
  init: Pick<TreeNode, "id" | "path" | "dir" | "url" | "ref" | "recordedType" | "depth" | "parent" | "filter">,
): TreeNode {
  return {
    ...init,
    manifest: null,
    outcome: "ok",
    message: "",
    shaBefore: null,
    head: null,
    cloned: false,
    children: [],
  };
}

export async function fetchTree(roots: TreeNode[], opts: FetchOptions): Promise<void> {
  let halted = false;
  const visit = async (node: TreeNode): Promise<void> => {
    if (halted) {
      node.outcome = "skipped";
      node.message = "not started: an earlier pack failed (--fail-fast)";
      opts.onDone(node);
      return;
    }
    try {
      if (opts.pin) {
        node.declaredRef = node.ref;
        node.ref = opts.pin(node);
      }
      // A dry run only reads: no pack lock, so it leaves no lock file behind either (as the install phase).
      const up = () => asActivityOf(node.id, () => bringUp(node, opts));
      await opts.scheduler.withPermit(opts.signal, () => (opts.dryRun ? up() : withPackLock(opts.ws, node.dir, opts.signal, up)));
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      node.outcome = "failed";
      node.message = e.message;
    }
    if (node.outcome === "failed" && opts.failFast) halted = true;
    opts.onDone(node);
    if (!opts.recursive || node.manifest === null || node.outcome === "failed") return;
    node.children = childNodes(node);
    opts.onDiscovered(node.children.length);
    await Promise.all(node.children.map(visit));
  };
  opts.onDiscovered(roots.length);
  await Promise.all(roots.map(visit));
}

/**
 * A child URL starting with `./` or `../` is relative to its parent's URL (as
 * with git submodules), so a family of repositories can move hosts together.
 */
export function resolveChildUrl(parentUrl: string, url: string): string {
  if (!url.startsWith("./") && !url.startsWith("../")) return url;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(parentUrl)) return new URL(url, `${parentUrl.replace(/\/+$/, "")}/`).href.replace(/\/+$/, "");
  return resolvePath(parentUrl, url);
}

function childNodes(parent: TreeNode): TreeNode[] {
  const seen = new Set<string>();
  const out: TreeNode[] = [];
  for (const declared of parent.manifest?.children ?? []) {
    const spec = { ...declared, url: resolveChildUrl(parent.url, declared.url) };
    // A child repeating an ancestor's repository would recurse forever.
    const chain: string[] = [];
    for (let a: TreeNode | null = parent; a; a = a.parent) {
      chain.unshift(a.id);
      if (urlKey(a.url) === urlKey(spec.url)) {
        throw integrityError(
          `Pack children form a cycle: ${[...chain, `${parent.id}/${spec.path}`].join(" -> ")} (${spec.url} is cloned again inside itself); remove that child entry.`,
        );
      }
    }
    if (seen.has(spec.path)) {
      throw integrityError(
        `Pack '${parent.id}' lists two children at path '${spec.path}'; give each child its own path in .grex/pack.yaml.`,
      );
    }
    seen.add(spec.path);
    out.push(
      newNode({
        id: `${parent.id}/${spec.path}`,
        path: `${parent.path}/${spec.path}`,
        dir: join(parent.dir, spec.path),
        url: spec.url,
        ref: spec.ref,
        recordedType: "meta",
        depth: parent.depth + 1,
        parent,
        // A shallow or partial pack's children are cloned the same way (`update --depth 0` brings their history back too).
        ...(parent.filter !== undefined ? { filter: parent.filter } : {}),
      }),
    );
    const child = out[out.length - 1] as TreeNode;
    if (parent.unshallow) child.unshallow = true;
    else if (parent.cloneDepth !== undefined) child.cloneDepth = parent.cloneDepth;
  }
  return out;
}

/** The directories each run has cleared of dead clones (see sweepOnce). */
const swept = new WeakMap<FetchOptions, Set<string>>();

/**
 * Clear `parent` of every dead clone in it (of any pack) once per run: the
 * packs side by side in one directory (a workspace's top level) would each
 * list it again, n listings of n names.
 */
function sweepOnce(opts: FetchOptions, parent: string, sweep: (parent: string) => void): void {
  let done = swept.get(opts);
  if (done === undefined) swept.set(opts, (done = new Set()));
  if (done.has(parent)) return;
  done.add(parent);
  sweep(parent);
}

/** Clone or update one pack's repository, then read its pack.yaml. Runs under the pack lock. */
async function bringUp(node: TreeNode, opts: FetchOptions): Promise<void> {
  throwIfAborted(opts.signal);
  const backend = backendFor(node.url);
  if (!existsSync(node.dir)) {
    if (opts.dryRun) {
      node.message = `would clone ${node.url}${node.ref ? ` at ${node.ref}` : ""}`;
      return; // nothing on disk to read a pack.yaml from
    }
    if (node.parent === null && node.path.includes("/")) {
      // A nested top-level pack (`libs/core`): the directories above it must be plain ones (pack-parents.ts).
      const problem = (await import("../fs/pack-parents.ts")).plainParentsProblem(opts.ws.root, node.path);
      if (problem !== null) throw new GrexError("pack_op", `Cannot clone '${node.id}' into ${node.dir}: ${problem}.`);
    }
    node.head = await withBackendLock(opts.ws, node.dir, opts.signal, () =>
      backend.clone(node.url, node.dir, { ref: node.ref, signal: opts.signal, depth: node.cloneDepth, ...(node.filter !== undefined ? { filter: node.filter } : {}) }),
    );
    node.cloned = true;
    node.message = "cloned";
    if (opts.settle) await withBackendLock(opts.ws, node.dir, opts.signal, async () => opts.settle?.(node));
  } else if (!isGitRepo(node.dir)) {
    throw new GrexError(
      "pack_op",
      `${node.dir} exists but is not a git repository; move it away or run \`grex rm ${node.id} --keep-files\`.`,
    );
  } else {
    // A clone of this pack killed earlier left its hidden temp folder beside it, or one of a child or a
    // submodule inside it: gone now, before the dirty check would count them as the user's files.
    if (!opts.dryRun) {
      const clones = await import("../git/clone.ts");
      sweepOnce(opts, dirname(node.dir), (parent) => clones.removeDeadClones(parent));
      for (const left of clones.deadClonesInside(node.dir)) rmSync(left, { recursive: true, force: true });
    }
    node.head = readHeadSync(node.dir);
    node.shaBefore = node.head?.sha ?? null;
    if (opts.updateExisting) await updateExisting(node, opts, backend);
    else {
      // Left as it is (`init`), but on a topic branch it is still the user's work: its lockfile line keeps the tracked branch, as a sync's does.
      const base = opts.force ? undefined : opts.topicOf?.(node);
      if (base !== undefined) node.topic = { base, baseSha: null };
    }
  }
  node.manifest = await opts.loadPack(node.dir);
  if (node.head) await refuseChildOnSubmodule(node.id, node.dir, node.head.sha, node.manifest);
  // Submodules, when the pack asks for them (git/submodules.ts); a skipped pack's are left as they are.
  if (!opts.dryRun && node.outcome !== "skipped" && node.outcome !== "dirty") {
    const sm = await import("../git/submodules.ts");
    if (sm.wantsSubmodules(node.dir, node.manifest?.submodules)) {
      const done = await withBackendLock(opts.ws, node.dir, opts.signal, () => sm.updateSubmodules(node.dir, node.url, opts.signal, opts.env));
      const moved = done.filter((d) => d.result !== "unchanged");
      if (moved.length > 0) node.message = `${node.message}; submodules: ${moved.map((d) => `${d.path} ${d.message}`).join(", ")}`.replace(/^; /, "");
    }
  }
}

/** A child declared where the pack's tree has a submodule (two repositories for one directory) fails the pack, before either is cloned. */
export async function refuseChildOnSubmodule(id: string, dir: string, commit: string, manifest: PackManifest | null): Promise<void> {
  if (!manifest?.children?.length) return;
  const { gitlinkOnPath } = await import("../git/submodules.ts");
  for (const c of manifest.children) {
    const link = gitlinkOnPath(dir, commit, c.path);
    if (link !== null) {
      throw packOpError(
        `Pack '${id}' declares the child '${c.path}' in .grex/pack.yaml where its tree has the submodule '${link}'; refusing both — remove the child entry or the submodule.`,
        { dir },
      );
    }
  }
}

/** After a failed move: the collision check against the commit the move was heading for (as fetched). */
async function refuseChildOnSubmoduleUpstream(node: TreeNode, opts: FetchOptions): Promise<void> {
  const { gitdirOf, resolveRefSync } = await import("../git/refs/refs.ts");
  const gitdir = gitdirOf(node.dir);
  if (!gitdir) return;
  const manifest = await opts.loadPack(node.dir).catch(() => null);
  if (!manifest?.children?.length) return;
  const refs = node.ref === null ? ["refs/remotes/origin/HEAD"] : [`refs/remotes/origin/${node.ref}`, `refs/tags/${node.ref}`, node.ref];
  for (const r of refs) {
    const commit = /^[0-9a-f]{40}$/.test(r) ? r : resolveRefSync(gitdir, r);
    if (commit) return refuseChildOnSubmodule(node.id, node.dir, commit, manifest);
  }
}

async function updateExisting(node: TreeNode, opts: FetchOptions, backend: ReturnType<typeof backendFor>) {
  const why = opts.force ? null : (opts.leaveAlone?.(node) ?? null);
  if (why) {
    node.outcome = "skipped";
    node.message = why;
    return;
  }
  const base = opts.force ? undefined : opts.topicOf?.(node);
  if (base !== undefined) return keepTopic(node, base, opts, backend);
  if (opts.dryRun) {
    if (!opts.force && (await backend.isDirty(node.dir))) {
      node.outcome = "dirty";
      node.message = "has uncommitted changes; left as is (commit or stash them, or pass --force)";
      return;
    }
    await (await import("./preview.ts")).previewMove(node, opts.signal);
    return;
  }
  // The dirty check runs once, under the lock below: it reads the whole work tree.
  await withRepoLocks(opts.ws, node.dir, opts.signal, async () => {
    // Authoritative re-check now that nobody else can touch this repository.
    if (!opts.force && (await backend.isDirty(node.dir))) {
      node.outcome = "dirty";
      node.message = "has uncommitted changes; left as is (commit or stash them, or pass --force)";
      return;
    }
    let moved: Awaited<ReturnType<typeof backend.update>>;
    try {
      moved = await backend.update(node.dir, node.url, { ref: node.ref, signal: opts.signal, depth: node.unshallow ? INFINITE_DEPTH : undefined });
    } catch (err) {
      // Refused because a child's clone stands where the new commit puts a submodule: say that, not "local changes".
      await refuseChildOnSubmoduleUpstream(node, opts);
      throw err;
    }
    const { before, after } = moved;
    node.shaBefore = before.sha;
    node.head = after;
    opts.settle?.(node);
    node.message = before.sha === after.sha ? "up to date" : `${before.sha.slice(0, 7)}..${after.sha.slice(0, 7)}`;
  });
}

/** A pack on a topic branch: fetch, advance the tracked branch's ref beside it; HEAD and the work tree stay. */
async function keepTopic(node: TreeNode, base: string | null, opts: FetchOptions, backend: ReturnType<typeof backendFor>) {
  const { advanceTrackedRef, topicMessage } = await import("./topic.ts");
  const head = node.head as HeadInfo;
  node.topic = { base, baseSha: null };
  if (opts.dryRun) {
    node.message = `on ${head.branch ?? head.sha.slice(0, 7)}; would fetch${base === null ? "" : ` and fast-forward ${base}`}; the topic and work tree stay as they are`;
    return;
  }
  await withRepoLocks(opts.ws, node.dir, opts.signal, async () => {
    if (await backend.isDirty(node.dir)) {
      node.outcome = "dirty";
      node.message = `on ${head.branch ?? "a topic branch"} with uncommitted changes; left as is (commit or stash them)`;
      return;
    }
    await backend.fetch(node.dir, node.url, { signal: opts.signal, depth: node.unshallow ? INFINITE_DEPTH : undefined });
    const move = advanceTrackedRef(node.dir, head, base);
    node.topic = { base, baseSha: move.baseSha };
    node.message = topicMessage(head, base, move);
  });
}

/** Pre-order list of a forest. */
export function flatten(roots: TreeNode[]): TreeNode[] {
  const out: TreeNode[] = [];
  const walk = (n: TreeNode) => {
    out.push(n);
    n.children.forEach(walk);
  };
  roots.forEach(walk);
  return out;
}
