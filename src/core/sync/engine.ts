// The sync engine behind `sync`, `update`, `add` and `init`:
//   workspace lock → fold manifest → fetch phase (parallel git work, pack.yaml
//   loading, children) → plan checks → install phase (pack-type lifecycle, in
//   dependency order) → sync markers, lockfile rewrite, ignore blocks → report.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { GrexError, usageError } from "../base/errors.ts";
import { unknownPackId } from "../base/pack-ids.ts";
import { assertWorkspaceLockHeld } from "../locks/locks.ts";
import { type LockEntry, readLockfile } from "../workspace/lockfile.ts";
import { type ManifestEvent, type PackEntry, readManifest } from "../workspace/manifest.ts";
import { runtimeEvents } from "../workspace/journal.ts";
import { capScheduler } from "../locks/scheduler.ts";
import { workspaceConfinement } from "../fs/confine.ts";
import type { ConvergeReason } from "../packtypes/index.ts";
import { gitdirOf, RefFiles } from "../git/refs/refs.ts";
import type { InstallOneContext } from "./install.ts";
import type { Step } from "../actions/types.ts";
import type { Workspace } from "../base/workspace.ts";
import type { CallContext, Progress } from "../locks/call.ts";
import { actionProblems, installOrder, planChecks, prerequisitesOf } from "./plan.ts";
import { fetchTree, flatten, newNode, type PackOutcome, type TreeNode } from "./tree.ts";
import { globMatch } from "../base/filter.ts";
import { timePhase } from "../base/profile.ts";
import { interruptedPacks, openBrackets } from "./install-state.ts";
import { recordResults } from "./record.ts";
import { type Checkout, checkoutOf, trackedBranch } from "./off-branch.ts";
import { type Pruned, pruneChild, removedChildren } from "./prune.ts";

export interface SyncOptions {
  mode: "sync" | "update";
  ids: string[];
  only: string[];
  /** The top-level packs `--filter` selected (verbs/select.ts); undefined: no filter. */
  selected?: ReadonlySet<string>;
  ref: string | null;
  force: boolean;
  failFast: boolean;
  recursive: boolean;
  dryRun: boolean;
  /** Only clone packs missing on disk; leave existing ones untouched (`init`). */
  cloneOnly?: boolean;
  /** Per-call cap on packs fetched at once (0/undefined: only the shared scheduler limits). */
  parallel?: number | undefined;
  /** Fetch the whole history of the selected shallow packs (`update --depth 0`). */
  unshallow?: boolean;
  /** The user's --allow-outside-home (CLI only): actions may touch paths outside HOME this run. */
  allowOutsideHome?: boolean;
  /** A pack being added: part of this run as if registered, its clone at `dir` (`add`). */
  pending?: { entry: PackEntry; dir: string };
  /** Leave the records (events, lockfile, ignore blocks) to the caller: report.record() (`add`, after it registered). */
  deferRecord?: boolean;
  /** A pack's row is final (with the steps its setup took): called as each pack completes, for output that streams. */
  onPackDone?(pack: PackReport, steps: Step[], idWidth: number): void;
  /** In a task workspace: also run setup that writes outside it, into HOME (`init --from --setup-home`). */
  homeSetup?: boolean;
  /** `--locked`: put every pack on its commit in grex.lock.jsonl (children too) and never write the lockfile (locked.ts). */
  locked?: boolean;
}

export interface PackReport {
  id: string;
  result: PackOutcome;
  sha_before: string | null;
  sha_after: string | null;
  message: string;
  /** Whether the pack's actions (re)ran, and why. */
  reinstalled: boolean;
  reason: ConvergeReason;
}

export interface SyncReport {
  packs: PackReport[];
  steps: Step[];
  halted: { pack: string; action: string; idx: number; reason: string } | null;
  warnings: string[];
  summary: { total: number; ok: number; skipped: number; dirty: number; failed: number };
  /** With deferRecord: writes what this run did. */
  record?: () => Promise<void>;
}

/** Report `action_started` brackets that never closed (a crash mid-action). */
export function incompleteActions(events: readonly ManifestEvent[]): string[] {
  return openBrackets(events).map(
    (e) => `pack '${e.id}' was interrupted during action ${"idx" in e ? String(e.idx) : "?"} (${"action" in e ? String(e.action) : "?"}) at ${e.ts}; this sync re-runs it`,
  );
}

function selectRoots(ws: Workspace, state: Map<string, PackEntry>, opts: SyncOptions): TreeNode[] {
  for (const id of opts.ids) {
    if (!state.has(id)) throw unknownPackId(id, state.keys(), ws.manifestPath);
  }
  const roots: TreeNode[] = [];
  for (const p of state.values()) {
    if (opts.ids.length > 0 && !opts.ids.includes(p.id)) continue;
    if (opts.only.length > 0 && !opts.only.some((g) => globMatch(g, p.path))) continue;
    if (opts.selected !== undefined && !opts.selected.has(p.id)) continue;
    roots.push(
      newNode({
        id: p.id,
        path: p.path,
        dir: opts.pending?.entry.id === p.id ? opts.pending.dir : join(ws.root, p.path),
        url: p.url,
        ref: opts.ref ?? p.ref,
        recordedType: p.type,
        depth: 0,
        parent: null,
        ...(p.filter !== undefined ? { filter: p.filter } : {}),
      }),
    );
    const node = roots[roots.length - 1] as TreeNode;
    if (opts.unshallow) node.unshallow = true;
    else if (p.depth !== undefined) node.cloneDepth = p.depth;
  }
  return roots;
}

export async function runSync(
  ctx: CallContext,
  opts: SyncOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<SyncReport> {
  const ws = ctx.workspace();
  if (!opts.dryRun) assertWorkspaceLockHeld(ws, `grex ${opts.mode}`); // taken by the verb's invoke (init: by init itself)
  return await syncLocked(ctx, ws, opts, signal, progress);
}

/** What a run reads before any pack moves. */
interface RunStart {
  warnings: string[];
  warn(m: string): void;
  state: Map<string, PackEntry>;
  previous: Map<string, LockEntry>;
  interrupted: Set<string>;
  roots: TreeNode[];
  locked: typeof import("./locked.ts") | null;
  /** A task workspace (its grex.jsonl names a source: init --from). */
  task: boolean;
}

async function startRun(ctx: CallContext, ws: Workspace, opts: SyncOptions, signal: AbortSignal): Promise<RunStart> {
  const warnings: string[] = [];
  const warn = (m: string) => {
    warnings.push(m);
    ctx.warn(m);
  };
  const { events, state: registered } = await readManifest(ws, { warn, keepEvents: true });
  const state = opts.pending ? new Map([...registered, [opts.pending.entry.id, opts.pending.entry]]) : registered;
  // Sync markers and action brackets: the journal's, merged in time order with any an older grex left in grex.jsonl.
  const runtime = runtimeEvents(ws, events, { warn });
  for (const w of incompleteActions(runtime)) warn(w);
  const previous = readLockfile(ws, { warn });
  const roots = selectRoots(ws, state, opts);
  const locked = opts.locked === true ? await import("./locked.ts") : null;
  if (locked) {
    if (opts.ref !== null) throw usageError("--locked puts packs on their locked commits; it cannot be combined with --ref.", { field: "ref" });
    await locked.lockedPreflight(ws, roots, previous, signal, opts.dryRun);
  }
  const task = events.some((e) => e.op === "add" && typeof (e as { from?: unknown }).from === "string");
  return { warnings, warn, state, previous, interrupted: interruptedPacks(runtime), roots, locked, task };
}

/** Whose checkout an existing pack is on (off-branch.ts), read from its refs. */
function checkoutFor(n: TreeNode, previous: ReadonlyMap<string, LockEntry>): Checkout {
  const lock = previous.get(n.id);
  const gitdir = gitdirOf(n.dir);
  const tracked = gitdir === null ? (lock?.branch ?? null) : trackedBranch(new RefFiles(gitdir), n.declaredRef !== undefined ? n.declaredRef : n.ref, lock);
  return checkoutOf(n.head, tracked, lock);
}

/** Fetch phase: every selected pack on disk at its commit (or left, and why); returns how many packs it counted. */
async function fetchPhase(ctx: CallContext, ws: Workspace, opts: SyncOptions, run: RunStart, signal: AbortSignal, progress: Progress): Promise<number> {
  const { previous, roots, locked } = run;
  const { loadPackYaml } = await import("../pack/load.ts");
  let total = 0;
  let done = 0;
  // A new pin given for this run (update --ref) is the user's say-so to move it.
  const repinned = (n: TreeNode) => opts.ref !== null && n.depth === 0;
  const fetchOptions: Parameters<typeof fetchTree>[1] = {
    ws,
    scheduler: capScheduler(ctx.scheduler, opts.parallel),
    signal,
    env: ctx.env,
    dryRun: opts.dryRun,
    force: opts.force,
    recursive: opts.recursive,
    updateExisting: !opts.cloneOnly,
    failFast: opts.failFast,
    loadPack: (dir) => loadPackYaml(dir, { more: actionProblems }),
    leaveAlone: (n) => {
      if (repinned(n)) return null;
      const c = checkoutFor(n, previous);
      if (c.kind === "off-branch") return `off-branch: ${c.why}; left as is (switch back, pass --force, or re-pin with grex update ${n.id} --ref <ref>)`;
      if (c.kind === "topic" && locked) {
        return `on the topic branch '${n.head?.branch}': --locked leaves it as it is (switch back${c.base === null ? "" : ` to '${c.base}'`}, or pass --force to put it on its locked commit)`;
      }
      return null;
    },
    topicOf: (n) => {
      if (repinned(n) || locked) return undefined;
      const c = checkoutFor(n, previous);
      return c.kind === "topic" ? c.base : undefined;
    },
    onDiscovered: (n) => {
      total += n;
    },
    onDone: (node) => {
      done++;
      progress(done, total, `fetch: ${node.id}: ${node.outcome === "ok" ? node.message : node.outcome}`);
      ctx.debug(1, `fetched ${node.id}: ${node.outcome} ${node.message}`);
    },
    ...(locked
      ? {
          pin: (n: TreeNode) => locked.lockedCommit(n, previous),
          settle: (n: TreeNode) => locked.settleLocked(n, previous),
        }
      : {}),
  };
  if (locked && !opts.dryRun) {
    // Missing packs are cloned first: no pack on disk moves before every clone reached its commit.
    const fresh = roots.filter((r) => !existsSync(r.dir));
    await fetchTree(fresh, fetchOptions);
    const cloneError = locked.lockedFailure(flatten(fresh));
    if (cloneError) throw cloneError;
    await fetchTree(roots.filter((r) => !fresh.includes(r)), fetchOptions);
    const moveError = locked.lockedFailure(flatten(roots));
    if (moveError) throw moveError; // before any setup runs
    locked.notApplied(flatten(roots)); // packs left as they are: failed, never a silent exit 0
  } else await fetchTree(roots, fetchOptions);
  return total;
}

async function syncLocked(
  ctx: CallContext,
  ws: Workspace,
  opts: SyncOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<SyncReport> {
  const run = await timePhase("sync.start", () => startRun(ctx, ws, opts, signal));
  const { state, previous, warn } = run;
  const fetched = await timePhase("sync.fetch-phase", () => fetchPhase(ctx, ws, opts, run, signal, progress));
  const nodes = flatten(run.roots);
  // An adopted clone with local changes: its setup may still be installed when that writes nothing inside it.
  if (!run.locked) (await import("./dirty-install.ts")).installDirtyWhereSafe(nodes, previous, run.interrupted, ctx.env);

  // Plan: every check that must pass before any action runs.
  const known = [
    ...[...state.values()].map((p) => ({ id: p.id, url: p.url, name: null })),
    ...nodes.map((n) => ({ id: n.id, url: n.url, name: n.manifest?.name ?? null })),
  ];
  planChecks(nodes.filter((n) => n.outcome === "ok"), known, ctx.env);

  // A task workspace (init --from) runs only the setup that stays inside it, unless the call asks for HOME's too.
  const stayIn = run.task && opts.homeSetup !== true ? ws.root : null;
  const confine = workspaceConfinement(ws.root, [...state.keys(), ...previous.keys(), ...nodes.map((n) => n.id)], ctx.env, opts.allowOutsideHome === true, stayIn);
  const c: InstallOneContext = {
    ws,
    env: ctx.env,
    mode: opts.mode,
    force: opts.force,
    dryRun: opts.dryRun,
    signal,
    confine,
    previous,
    interrupted: run.interrupted,
    stepsOf: new Map(),
    reasons: new Map(),
    installErrors: new Map(),
    unreadable: [],
    halted: null,
  };
  const reportOf = (n: TreeNode): PackReport => ({
    id: n.id,
    result: n.outcome,
    sha_before: n.shaBefore,
    sha_after: n.wouldMoveTo ?? n.head?.sha ?? null,
    message: n.message,
    reinstalled: c.reasons.get(n.id)?.reinstalled ?? false,
    reason: c.reasons.get(n.id)?.reason ?? "none",
  });
  // Streamed rows line up on the widest id of this run.
  const idWidth = Math.max(0, ...nodes.map((n) => n.id.length), ...[...previous.keys()].map((id) => id.length));
  const steps = await timePhase("sync.install-phase", () => installPhase(ctx, opts, c, nodes, known, fetched, progress, (n) => opts.onPackDone?.(reportOf(n), c.stepsOf.get(n.id) ?? [], idWidth)));

  // Children their parent no longer lists (only when the tree was walked).
  const pruned: Pruned[] = [];
  if (opts.recursive && !opts.cloneOnly) {
    for (const { id, parent } of removedChildren(nodes, previous)) {
      const r = await pruneChild(id, parent, { ws, previous, env: ctx.env, signal, dryRun: opts.dryRun, confine, warn });
      steps.push(...r.steps);
      pruned.push(r);
    }
  }

  const record = () => recordResults(ws, nodes, previous, c.reasons, warn, signal, c.installErrors, pruned, opts.locked === true);
  if (!opts.dryRun && !opts.deferRecord) await timePhase("sync.record", record);
  // The other packs are done and recorded; a file grex must not overwrite still ends the run with exit 3, naming it.
  const firstUnreadable = c.unreadable[0];
  if (firstUnreadable) {
    const others = c.unreadable.length > 1 ? ` (${c.unreadable.length - 1} more pack${c.unreadable.length > 2 ? "s" : ""} alike)` : "";
    throw new GrexError("integrity", `${firstUnreadable.message.replace(/\.$/, "")}${others}; every other pack was synced.`, firstUnreadable.data);
  }

  const packs: PackReport[] = nodes.map(reportOf);
  for (const p of pruned) {
    const sha = previous.get(p.id)?.sha ?? null;
    const row: PackReport = { id: p.id, result: p.ok ? "ok" : "failed", sha_before: sha, sha_after: null, message: p.message, reinstalled: false, reason: "none" };
    packs.push(row);
    opts.onPackDone?.(row, p.steps, idWidth);
  }
  const count = (o: PackOutcome) => packs.filter((p) => p.result === o).length;
  return {
    packs,
    steps,
    halted: c.halted,
    warnings: run.warnings,
    summary: { total: packs.length, ok: count("ok"), skipped: count("skipped"), dirty: count("dirty"), failed: count("failed") },
    ...(opts.deferRecord ? { record } : {}),
  };
}

/** Install phase, children and dependencies first; rows go out as packs finish. Returns the steps in install order. */
async function installPhase(
  ctx: CallContext,
  opts: SyncOptions,
  c: InstallOneContext,
  nodes: TreeNode[],
  known: Parameters<typeof installOrder>[1],
  fetched: number,
  progress: Progress,
  rowDone: (n: TreeNode) => void,
): Promise<Step[]> {
  const eligible = (n: TreeNode) => n.outcome === "ok" && (n.head !== null || opts.dryRun);
  // Packs with nothing to install are final now: their rows go out first.
  for (const n of nodes) if (!eligible(n)) rowDone(n);
  const installing = installOrder(nodes, known).filter(eligible);
  const running: string[] = [];
  let finishedCount = 0;
  // Counted on from the fetch phase: progress only ever grows (MCP requires it).
  const showProgress = () =>
    progress(fetched + finishedCount, fetched + installing.length, `setup: ${running.length} running${running.length > 0 ? ` (${running.slice(0, 3).join(", ")}${running.length > 3 ? ", …" : ""})` : ""}`);
  const { runInstallPhase, installOne } = await import("./install.ts");
  await runInstallPhase({
    verb: opts.mode,
    nodes: installing,
    prerequisites: prerequisitesOf(installing, known),
    scheduler: capScheduler(ctx.scheduler, opts.parallel),
    signal: c.signal,
    failFast: opts.failFast,
    install: (node) => installOne(c, node),
    halted: () => c.halted !== null,
    skip: (node) => {
      node.outcome = "skipped";
      node.message = "not installed: an earlier pack failed (--fail-fast)";
      if (node.cloned) c.installErrors.set(node.id, node.message);
    },
    onStart: (node) => {
      running.push(node.id);
      showProgress();
      ctx.debug(1, `setup of ${node.id} started`);
    },
    onDone: (node) => {
      const i = running.indexOf(node.id);
      if (i >= 0) running.splice(i, 1);
      finishedCount++;
      ctx.debug(1, `setup of ${node.id}: ${node.outcome} ${node.message}`);
      rowDone(node);
      showProgress();
    },
  });
  // Steps in install order, whatever order the packs finished in.
  return installing.flatMap((n) => c.stepsOf.get(n.id) ?? []);
}

/** `init`: clone registered packs that are missing on disk; existing ones are left as they are. */
export async function cloneMissing(ctx: CallContext, ws: Workspace, signal: AbortSignal, progress: Progress, locked = false): Promise<string[]> {
  const { state } = await readManifest(ws, { warn: ctx.warn });
  if (state.size === 0) return [];
  const report = await runSync(
    ctx,
    { mode: "sync", ids: [], only: [], ref: null, force: false, failFast: false, recursive: true, dryRun: false, cloneOnly: true, locked },
    signal,
    progress,
  );
  const failed = report.packs.filter((p) => p.result === "failed");
  if (failed.length > 0) {
    throw new GrexError("pack_op", `Could not clone ${failed.map((f) => f.id).join(", ")}: ${failed[0]?.message}`);
  }
  return report.packs.filter((p) => p.message === "cloned").map((p) => p.id);
}
