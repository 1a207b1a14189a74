// One pack's state, as `status` and `doctor` report it: on disk, installed,
// dirty, on its branch, setup unchanged and still in place, level with its
// remote-tracking ref. Cheap reads only (refs, HEAD, index stat data, the
// per-pack state file); commits are walked only when HEAD and origin differ.
import { existsSync } from "node:fs";
import type { SetupDrift } from "../actions/drift.ts";
import type { PackState } from "../actions/types.ts";
import { aheadBehind } from "../git/refs/ahead-behind.ts";
import { backendFor, readHeadSync, workTreeGitdir } from "../git/backend.ts";
import { RefFiles } from "../git/refs/refs.ts";
import { statusCacheFile } from "../git/worktree/status-cache.ts";
import { dirtyOf } from "../git/worktree/dirty-oracle.ts";
import type { GrexError } from "../base/errors.ts";
import type { PackNode } from "../workspace/packs.ts";
import { checkoutOf, trackedBranch } from "./off-branch.ts";
import { type TopicFacts, topicFacts } from "./topic.ts";
import { installedHash } from "../workspace/lockfile.ts";
import type { Workspace } from "../base/workspace.ts";
import type { PackStateName } from "./pack-states.ts";

export { PACK_STATES, type PackStateName } from "./pack-states.ts";

/** What to run for each state (docs/cli.md carries the same table). */
export const NEXT_STEP: Record<PackStateName, string> = {
  invalid: "fix the file the error names, then grex sync",
  missing: "grex sync",
  "not-installed": "fix the install_error, then grex sync",
  dirty: "commit or stash, then grex sync",
  "off-branch": "switch back, or grex update <id> --ref <branch>",
  "setup-changed": "grex sync",
  "setup-drift": "grex sync",
  topic: "nothing: it is your work (to catch up: grex exec -- git rebase <base>)",
  diverged: "merge or rebase by hand",
  behind: "grex sync",
  ahead: "git push",
  clean: "nothing",
};

export interface PackStatus {
  id: string;
  path: string;
  depth: number;
  on_disk: boolean;
  dirty: boolean;
  sha_match: boolean;
  actions_hash_match: boolean;
  drift: PackStateName;
  branch: string | null;
  ahead: number | null;
  behind: number | null;
  /** Why ahead/behind are null although the branch has an upstream: a shallow clone whose merge base lies below its fetched history. */
  ahead_behind_unknown: string | null;
  setup_drift: SetupDrift[];
  install_error: string | null;
  /** Why the pack is off-branch (a HEAD the user detached), or null. */
  off_branch: string | null;
  /** On a topic branch (the user's work, not drift): the branch, its base (the tracked branch), the counts against origin/<base>, its upstream and whether that holds HEAD; else null. */
  topic: TopicFacts | null;
  /** Filter drivers its .gitattributes name that the user's own git config does not define (files kept as stored): a note, not a state. */
  missing_filters: string[];
  /** Initialised submodules at another commit than the pack records (they make it dirty, as in git status). */
  submodules_moved: Array<{ path: string; recorded: string; head: string | null }>;
  /** Why the pack is `invalid` (its pack.yaml or state file cannot be read), or null. */
  error: PackError | null;
}

export interface PackError {
  /** The error kind (`integrity`, `plugin`, …): the exit code a report uses. */
  kind: string;
  file: string | null;
  field: string | null;
  reason: string;
}

/** A pack whose own files cannot be read: its own row, the others reported normally. */
export function invalidStatus(p: PackNode, err: GrexError): PackStatus {
  const data = err.data ?? {};
  const str = (x: unknown) => (typeof x === "string" && x !== "" ? x : null);
  return {
    id: p.id,
    path: p.path,
    depth: p.depth,
    on_disk: true,
    dirty: false,
    sha_match: false,
    actions_hash_match: false,
    drift: "invalid",
    branch: null,
    ahead: null,
    behind: null,
    ahead_behind_unknown: null,
    setup_drift: [],
    install_error: null,
    off_branch: null,
    topic: null,
    missing_filters: [],
    submodules_moved: [],
    error: { kind: err.kind, file: str(data.file), field: str(data.field), reason: err.message },
  };
}

export interface InspectOptions {
  /** The children's HEAD shas (a meta pack's surface includes them). */
  childShas: string[];
  /** Every child is still at the commit its lock entry records. */
  childrenUnmoved: boolean;
  staleMs: number | null;
  /** An install of this pack was cut short (an action bracket never closed), whatever the lockfile says. */
  interrupted: boolean;
  /** Files the setup-drift checks of this report already read (one map for every pack of a report). */
  reads?: Map<string, string | null>;
}

// Built once per pack list: asked for every pack, a scan of the list each time would cost N² at scale.
const childIndexes = new WeakMap<readonly PackNode[], Map<string, PackNode[]>>();
function childrenIndex(packs: readonly PackNode[]): Map<string, PackNode[]> {
  let index = childIndexes.get(packs);
  if (!index) {
    index = new Map();
    for (const c of packs) {
      if (c.parent === null) continue;
      const siblings = index.get(c.parent);
      if (siblings) siblings.push(c);
      else index.set(c.parent, [c]);
    }
    childIndexes.set(packs, index);
  }
  return index;
}

/** What `inspectPack` needs to know about `p`'s children, read from their refs. */
export function childFacts(packs: readonly PackNode[], p: PackNode): Pick<InspectOptions, "childShas" | "childrenUnmoved"> {
  const children = childrenIndex(packs).get(p.id) ?? [];
  const childShas = children.map((c) => readHeadSync(c.dir)?.sha ?? "");
  return { childShas, childrenUnmoved: children.every((c, i) => c.lock?.sha === childShas[i]) };
}

// Loaded on first use and kept: a repeated import() costs microseconds per call, per pack.
let packStateModule: Promise<typeof import("../workspace/pack-state.ts")> | undefined;
let driftModule: Promise<typeof import("../actions/drift.ts")> | undefined;
let convertModule: Promise<typeof import("../git/worktree/convert.ts")> | undefined;

export async function inspectPack(ws: Workspace, p: PackNode, o: InspectOptions): Promise<PackStatus> {
  const { interrupted, staleMs } = o;
  const none = { branch: null, ahead: null, behind: null, ahead_behind_unknown: null, setup_drift: [], install_error: null, off_branch: null, topic: null, missing_filters: [], submodules_moved: [], error: null };
  const base = { id: p.id, path: p.path, depth: p.depth };
  const gitdir = workTreeGitdir(p.dir);
  if (gitdir === null) {
    return { ...base, on_disk: existsSync(p.dir), dirty: false, sha_match: false, actions_hash_match: false, drift: "missing", ...none };
  }
  // One reader for HEAD, its branch and origin's ref.
  const refs = new RefFiles(gitdir);
  const head = refs.head();
  // A report: the status cache may spare re-listing unchanged directories.
  const statusCache = statusCacheFile(ws.stateDir, p.id);
  const scan = () => backendFor(p.url || p.dir).isDirty(p.dir, { statusCache, head: head?.sha, gitdir });
  // A resident answer where one is at hand (`grex serve`'s watcher, or that server asked over its socket).
  const dirty = await dirtyOf({ dir: p.dir, gitdir, head: head?.sha ?? null, url: p.url, stateDir: ws.stateDir, statusCache }, scan);
  const lock = p.lock;
  const installed = lock !== undefined && lock.installed_at !== "" && lock.install_error === undefined && !interrupted;
  const installError = installed
    ? null
    : interrupted
      ? "the last install was interrupted"
      : lock === undefined
        ? "never installed on this machine"
        : // An entry with no install time and no error: `grex teardown` undid the setup.
          (lock.install_error ?? "torn down (grex teardown); grex sync installs it again");
  const shaMatch = lock !== undefined && head !== null && head.sha === lock.sha;
  let hashMatch = false;
  let setupDrift: SetupDrift[] = [];
  if (installed) {
    // Clean, at the commit sync recorded, children too: the surface is the one
    // sync hashed, so pack.yaml need not be parsed again (the costly part).
    // At the commit its setup last ran at (a topic not moved since) hashes the same as installed there.
    const atInstall = (shaMatch && installedHash(lock) === lock.actions_hash) || (head !== null && head.sha === lock.installed_sha);
    if (!dirty && atInstall && o.childrenUnmoved) hashMatch = installedHash(lock) !== "";
    else {
      const { computeActionsHash } = await import("../packtypes/index.ts");
      const { loadPackYaml } = await import("../pack/load.ts");
      const manifest = await loadPackYaml(p.dir); // a broken pack.yaml is an integrity error naming it, not drift
      hashMatch = computeActionsHash(manifest?.type ?? p.type, p.dir, manifest, o.childShas) === installedHash(lock);
    }
    // Setup drift: every recorded postcondition that no longer holds (cheap checks, nothing re-run).
    // A pack with no record (a plain pack) has nothing to drift: the action modules stay unloaded.
    const state = (await (packStateModule ??= import("../workspace/pack-state.ts"))).readPackState(ws, p.id);
    if (Object.keys(state).length > 0) setupDrift = (await (driftModule ??= import("../actions/drift.ts"))).setupDrift(state as PackState, o.reads);
  }
  const tracking = head ? await aheadBehind(refs, p.dir, head.branch, head.sha) : null;
  const ahead = tracking?.ahead ?? 0;
  const behind = tracking?.behind ?? 0;
  const checkout = checkoutOf(head, trackedBranch(refs, p.ref, lock), lock);
  const off = lock !== undefined && lock.sha !== "" && checkout.kind === "off-branch" ? checkout.why : null;
  const topic = head?.branch != null && checkout.kind === "topic" ? topicFacts(gitdir, refs, { sha: head.sha, branch: head.branch }, checkout.base) : null;
  const old = installed && staleMs !== null && Date.now() - Date.parse(lock.installed_at) > staleMs;
  // A HEAD moved by local commits is "ahead"; moved any other way, the lockfile is behind the work tree.
  // A topic's own commits are work on it: only its setup decides.
  const setupChanged = !hashMatch || old || (topic === null && !shaMatch && ahead === 0 && behind === 0);
  const drift: PackStateName = !installed
    ? "not-installed"
    : dirty
      ? "dirty"
      : off
        ? "off-branch"
        : setupChanged
          ? "setup-changed"
          : setupDrift.length > 0
            ? "setup-drift"
            : topic !== null
              ? "topic"
              : ahead > 0 && behind > 0
              ? "diverged"
              : behind > 0
                ? "behind"
                : ahead > 0
                  ? "ahead"
                  : "clean";
  return {
    ...base,
    on_disk: true,
    dirty,
    sha_match: shaMatch,
    actions_hash_match: hashMatch,
    drift,
    branch: head?.branch ?? null,
    // Across a shallow boundary the counts stop where history does: not shown as if exact (their signs still decide the state).
    ahead: tracking && tracking.cut === undefined ? tracking.ahead : null,
    behind: tracking && tracking.cut === undefined ? tracking.behind : null,
    ahead_behind_unknown: tracking?.cut === undefined ? null : shallowCutReason(p.id, tracking.cut),
    setup_drift: setupDrift,
    install_error: installError,
    off_branch: off,
    topic,
    // gitattributes filters (git/convert.ts), looked into only when the top-level attribute files name one.
    missing_filters: (await (convertModule ??= import("../git/worktree/convert.ts"))).unconfiguredFilters(p.dir, gitdir),
    // Only a dirty pack can have one: the dirty check counts them.
    submodules_moved: dirty ? (await import("../git/worktree/submodule-status.ts")).movedSubmodulesOf(p.dir, gitdir) : [],
    error: null,
  };
}

/** The reason a shallow pack's ahead/behind are unknown, and the way to exact counts. */
export function shallowCutReason(id: string, boundary: string): string {
  return `the merge base with origin lies below the shallow clone's history (it ends at ${boundary.slice(0, 7)}); grex update ${id} --depth 0 fetches the rest`;
}
