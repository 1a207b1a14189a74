// The sync engine behind `sync`, `update`, `add` and `init`:
//   workspace lock → fold manifest → fetch phase (parallel git work, pack.yaml
//   loading, children) → plan checks → install phase (pack-type lifecycle, in
//   dependency order) → sync markers, lockfile rewrite, ignore blocks → report.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { GrexError, toGrexError, usageError } from "../base/errors.ts";
import { unknownPackId } from "../base/pack-ids.ts";
import { parseFilter } from "../base/filter.ts";
import { updateIgnoreBlocks } from "../workspace/gitignore.ts";
import { GENERATED_BLOCK, generatedExcludeLines, packIgnoreLines } from "../pack/x-gitignore.ts";
import { type HeldLock, tryAcquireWorkspaceLock, withPackLock } from "../locks/locks.ts";
import { type LockEntry, readLockfile, writeLockfile } from "../workspace/lockfile.ts";
import { appendEvents, makeEvent, type ManifestEvent, type PackEntry, readManifest } from "../workspace/manifest.ts";
import { runtimeEvents } from "../workspace/journal.ts";
import { capScheduler } from "../locks/scheduler.ts";
import { workspaceConfinement } from "../fs/confine.ts";
import { converge, type ConvergeReason } from "../packtypes/index.ts";
import type { Step } from "../actions/types.ts";
import type { Workspace } from "../base/workspace.ts";
import type { CallContext, Progress } from "../locks/call.ts";
import { actionProblems, installOrder, planChecks, prerequisitesOf } from "./plan.ts";
import { effectiveType, fetchTree, flatten, newNode, type PackOutcome, type TreeNode } from "./tree.ts";
import { globMatch } from "../base/filter.ts";
import { interruptedPacks, notInstalled, openBrackets } from "./install-state.ts";
import { offBranch } from "./off-branch.ts";
import { type Pruned, pruneChild, removedChildren } from "./prune.ts";
import { excludeFileOf } from "../git/layout/layout.ts";

export interface SyncOptions {
  mode: "sync" | "update";
  ids: string[];
  only: string[];
  filter: string | undefined;
  ref: string | null;
  force: boolean;
  failFast: boolean;
  recursive: boolean;
  dryRun: boolean;
  /** Only clone packs missing on disk; leave existing ones untouched (`init`). */
  cloneOnly?: boolean;
  /** Per-call cap on packs fetched at once (0/undefined: only the shared scheduler limits). */
  parallel?: number | undefined;
  /** Caller already holds the workspace lock (`add`). */
  lockHeld?: boolean;
  /** The user's --allow-outside-home (CLI only): actions may touch paths outside HOME this run. */
  allowOutsideHome?: boolean;
  /** A pack being added: part of this run as if registered, its clone at `dir` (`add`). */
  pending?: { entry: PackEntry; dir: string };
  /** Leave the records (events, lockfile, ignore blocks) to the caller: report.record() (`add`, after it registered). */
  deferRecord?: boolean;
  /** A pack's row is final (with the steps its setup took): called as each pack completes, for output that streams. */
  onPackDone?(pack: PackReport, steps: Step[], idWidth: number): void;
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

/** Why the setup ran at a commit that did not move (a bare "up to date" would hide it). */
const RAN_BECAUSE: Record<ConvergeReason, string> = {
  "never-installed": "setup installed (it was not installed)",
  "hash-changed": "setup ran again (its setup changed)",
  "sha-changed": "setup ran again (the commit changed since install)",
  forced: "setup ran again (--force)",
  none: "setup ran",
};

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
  const keep = parseFilter(opts.filter);
  const roots: TreeNode[] = [];
  for (const p of state.values()) {
    if (opts.ids.length > 0 && !opts.ids.includes(p.id)) continue;
    if (opts.only.length > 0 && !opts.only.some((g) => globMatch(g, p.path))) continue;
    if (!keep({ id: p.id, path: p.path, type: p.type, depth: 0 })) continue;
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
      }),
    );
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
  const lock: HeldLock | null = opts.dryRun || opts.lockHeld ? null : tryAcquireWorkspaceLock(ws, opts.mode);
  try {
    return await syncLocked(ctx, ws, opts, signal, progress);
  } finally {
    lock?.release();
  }
}

async function syncLocked(
  ctx: CallContext,
  ws: Workspace,
  opts: SyncOptions,
  signal: AbortSignal,
  progress: Progress,
): Promise<SyncReport> {
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
  const interrupted = interruptedPacks(runtime);
  const roots = selectRoots(ws, state, opts);
  const locked = opts.locked === true ? await import("./locked.ts") : null;
  if (locked) {
    if (opts.ref !== null) throw usageError("--locked puts packs on their locked commits; it cannot be combined with --ref.", { field: "ref" });
    await locked.lockedPreflight(ws, roots, previous, signal, opts.dryRun);
  }

  const { loadPackYaml } = await import("../pack/load.ts");
  let total = 0;
  let done = 0;
  const fetchOptions: Parameters<typeof fetchTree>[1] = {
    ws,
    scheduler: capScheduler(ctx.scheduler, opts.parallel),
    signal,
    dryRun: opts.dryRun,
    force: opts.force,
    recursive: opts.recursive,
    updateExisting: !opts.cloneOnly,
    failFast: opts.failFast,
    loadPack: (dir) => loadPackYaml(dir, { more: actionProblems }),
    // A new pin given for this run (update --ref) is the user's say-so to move it.
    leaveAlone: (n) => {
      if (opts.ref !== null && n.depth === 0) return null;
      const why = offBranch(n.head, previous.get(n.id));
      return why && `off-branch: ${why}; left as is (switch back, pass --force, or re-pin with grex update ${n.id} --ref <ref>)`;
    },
    onDiscovered: (n) => {
      total += n;
    },
    onDone: (node) => {
      done++;
      progress(done, total, `fetch: ${node.id}: ${node.outcome === "ok" ? node.message : node.outcome}`);
      ctx.debug(1, `fetched ${node.id}: ${node.outcome} ${node.message}`);
    },
    ...(locked ? { pin: (n: TreeNode) => locked.lockedCommit(n, previous) } : {}),
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
  } else await fetchTree(roots, fetchOptions);
  const nodes = flatten(roots);

  // Plan: every check that must pass before any action runs.
  const known = [
    ...[...state.values()].map((p) => ({ id: p.id, url: p.url, name: null })),
    ...nodes.map((n) => ({ id: n.id, url: n.url, name: n.manifest?.name ?? null })),
  ];
  planChecks(nodes.filter((n) => n.outcome === "ok"), known, ctx.env);

  // Install phase, children and dependencies first.
  const confine = workspaceConfinement(
    ws.root,
    [...state.keys(), ...previous.keys(), ...nodes.map((n) => n.id)],
    ctx.env,
    opts.allowOutsideHome === true,
  );
  const steps: Step[] = [];
  let halted: SyncReport["halted"] = null;
  const reasons = new Map<string, { reinstalled: boolean; reason: ConvergeReason; hash: string | null }>();
  /** Packs whose install failed (or never ran after a clone): recorded not-installed. */
  const installErrors = new Map<string, string>();
  const order = installOrder(nodes, known);
  const eligible = (n: TreeNode) => n.outcome === "ok" && (n.head !== null || opts.dryRun);
  const reportOf = (n: TreeNode): PackReport => ({
    id: n.id,
    result: n.outcome,
    sha_before: n.shaBefore,
    sha_after: n.wouldMoveTo ?? n.head?.sha ?? null,
    message: n.message,
    reinstalled: reasons.get(n.id)?.reinstalled ?? false,
    reason: reasons.get(n.id)?.reason ?? "none",
  });
  // Streamed rows line up on the widest id of this run.
  const idWidth = Math.max(0, ...nodes.map((n) => n.id.length), ...[...previous.keys()].map((id) => id.length));
  // Packs with nothing to install are final now: their rows go out first.
  for (const n of nodes) if (!eligible(n)) opts.onPackDone?.(reportOf(n), [], idWidth);
  const installing = order.filter(eligible);
  const stepsOf = new Map<string, Step[]>();
  const running: string[] = [];
  let finishedCount = 0;
  // Counted on from the fetch phase: progress only ever grows (MCP requires it).
  const fetched = total;
  const showProgress = () =>
    progress(fetched + finishedCount, fetched + installing.length, `setup: ${running.length} running${running.length > 0 ? ` (${running.slice(0, 3).join(", ")}${running.length > 3 ? ", …" : ""})` : ""}`);
  /** Integrity errors of single packs (a state file that cannot be read): the run goes on and ends with exit 3. */
  const unreadable: GrexError[] = [];
  const installOne = async (node: TreeNode): Promise<void> => {
    try {
      const install = () =>
        converge({
          ws,
          node,
          type: effectiveType(node),
          // An install cut short (open action bracket) counts as never installed.
          previous: interrupted.has(node.id) ? undefined : previous.get(node.id),
          mode: opts.mode,
          force: opts.force,
          dryRun: opts.dryRun,
          env: ctx.env,
          signal,
          childShas: node.children.map((c) => c.head?.sha ?? previous.get(c.id)?.sha ?? ""),
          confine,
        });
      // Setup runs under the pack's lock (hooks too), like `run` and teardown.
      const r = opts.dryRun ? await install() : await withPackLock(ws, node.dir, signal, install);
      stepsOf.set(node.id, r.steps);
      reasons.set(node.id, { reinstalled: r.ran, reason: r.reason, hash: r.actionsHash });
      if (r.failed) {
        node.outcome = "failed";
        node.message = `action ${r.failed.idx} (${r.failed.action}) failed: ${r.failed.reason}`;
        if (r.ran) installErrors.set(node.id, node.message);
        halted ??= { pack: node.id, action: r.failed.action, idx: r.failed.idx, reason: r.failed.reason };
      } else if (r.skipped) {
        node.outcome = "skipped";
        node.message = r.skipped;
      } else if (r.ran && node.message === "up to date") {
        // The commit did not move but the setup ran: say why, not "up to date".
        node.message = `up to date; ${RAN_BECAUSE[r.reason]}`;
      }
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      node.outcome = "failed";
      node.message = e.message;
      // integrity: a state file grex could not read and must not overwrite; the pack fails alone and its
      // lock entry stays as it was (recording "not installed" would hide the setup that is still in place).
      if (e.kind !== "integrity") installErrors.set(node.id, e.message);
      else unreadable.push(e);
      halted ??= { pack: node.id, action: "", idx: -1, reason: e.message };
    }
  };
  const { runInstallPhase } = await import("./install.ts");
  await runInstallPhase({
    verb: opts.mode,
    nodes: installing,
    prerequisites: prerequisitesOf(installing, known),
    scheduler: capScheduler(ctx.scheduler, opts.parallel),
    signal,
    failFast: opts.failFast,
    install: installOne,
    halted: () => halted !== null,
    skip: (node) => {
      node.outcome = "skipped";
      node.message = "not installed: an earlier pack failed (--fail-fast)";
      if (node.cloned) installErrors.set(node.id, node.message);
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
      opts.onPackDone?.(reportOf(node), stepsOf.get(node.id) ?? [], idWidth);
      showProgress();
    },
  });
  // Steps in install order, whatever order the packs finished in.
  for (const n of installing) steps.push(...(stepsOf.get(n.id) ?? []));

  // Children their parent no longer lists (only when the tree was walked).
  const pruned: Pruned[] = [];
  if (opts.recursive && !opts.cloneOnly) {
    for (const { id, parent } of removedChildren(nodes, previous)) {
      const r = await pruneChild(id, parent, { ws, previous, env: ctx.env, signal, dryRun: opts.dryRun, confine, warn });
      steps.push(...r.steps);
      pruned.push(r);
    }
  }

  const record = () => recordResults(ws, nodes, previous, reasons, warn, signal, installErrors, pruned, opts.locked === true);
  if (!opts.dryRun && !opts.deferRecord) await record();
  // The other packs are done and recorded; a file grex must not overwrite still ends the run with exit 3, naming it.
  const firstUnreadable = unreadable[0];
  if (firstUnreadable) {
    const others = unreadable.length > 1 ? ` (${unreadable.length - 1} more pack${unreadable.length > 2 ? "s" : ""} alike)` : "";
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
    halted,
    warnings,
    summary: { total: packs.length, ok: count("ok"), skipped: count("skipped"), dirty: count("dirty"), failed: count("failed") },
    ...(opts.deferRecord ? { record } : {}),
  };
}

/** Markers, type corrections, lockfile and ignore blocks for what this run did. */
async function recordResults(
  ws: Workspace,
  nodes: TreeNode[],
  previous: Map<string, LockEntry>,
  reasons: Map<string, { reinstalled: boolean; reason: ConvergeReason; hash: string | null }>,
  warn: (m: string) => void,
  signal: AbortSignal,
  installErrors: ReadonlyMap<string, string>,
  pruned: readonly Pruned[],
  locked: boolean,
): Promise<void> {
  const events: ManifestEvent[] = [];
  const lock = new Map(previous);
  for (const p of pruned) for (const id of p.dropped) lock.delete(id);
  const now = new Date().toISOString();
  for (const n of nodes) {
    const error = installErrors.get(n.id);
    if (error !== undefined && n.head !== null) {
      const origin = n.depth > 0 ? { url: n.url, ref: n.ref } : {};
      lock.set(n.id, notInstalled({ id: n.id, sha: n.head.sha, branch: n.head.branch, type: effectiveType(n), ...origin }, error));
      continue;
    }
    if (n.outcome !== "ok" || n.head === null) continue;
    events.push(makeEvent("sync", n.id, {})); // runtime: to the journal (journal.ts)
    const type = effectiveType(n);
    if (n.depth === 0 && type !== n.recordedType && !locked) events.push(makeEvent("update", n.id, { type }));
    const r = reasons.get(n.id);
    const prev = previous.get(n.id);
    lock.set(n.id, {
      id: n.id,
      sha: n.head.sha,
      branch: n.head.branch,
      installed_at: r?.reinstalled || !prev ? now : prev.installed_at,
      installed_sha: r?.reinstalled || !prev ? n.head.sha : (prev.installed_sha ?? prev.sha),
      actions_hash: r?.hash ?? prev?.actions_hash ?? "",
      type,
      ...(n.depth > 0 ? { url: n.url, ref: n.ref } : {}),
    });
  }
  if (events.length > 0) await appendEvents(ws, events, signal);
  try {
    // Written only when its bytes change (lockfile.ts); never with --locked.
    if (!locked) await writeLockfile(ws, lock.values());
  } catch (err) {
    warn(`could not rewrite ${ws.lockPath} (${toGrexError(err).message}); the work itself is done, run sync again to record it`);
  }
  // One pass per ignore file, whatever the number of packs in it.
  const ignoreUpdates = new Map<string, Array<[string, string[] | null]>>();
  for (const n of nodes) {
    if (n.outcome === "failed" && !n.head) continue;
    // x-generated: what the pack's own setup writes into it, excluded in its own repository so it stays clean.
    const own = excludeFileOf(n.dir);
    if (own !== null && (n.manifest !== null || existsSync(own))) {
      ignoreUpdates.set(own, [...(ignoreUpdates.get(own) ?? []), [GENERATED_BLOCK, generatedExcludeLines(n.manifest)]]);
    }
    const [file, rel] = n.parent === null ? [join(ws.root, ".gitignore"), n.path] : [excludeFileOf(n.parent.dir), n.path.slice(n.parent.path.length + 1)];
    if (file === null) continue; // a parent without a repository has nothing to exclude a child from
    const list = ignoreUpdates.get(file) ?? [];
    list.push([n.id, packIgnoreLines(rel, n.manifest)]);
    ignoreUpdates.set(file, list);
  }
  for (const [file, updates] of ignoreUpdates) {
    try {
      updateIgnoreBlocks(file, updates);
    } catch (err) {
      warn(toGrexError(err).message);
    }
  }
}

/** `init`: clone registered packs that are missing on disk; existing ones are left as they are. */
export async function cloneMissing(ctx: CallContext, ws: Workspace, signal: AbortSignal, progress: Progress, locked = false): Promise<string[]> {
  const { state } = await readManifest(ws, { warn: ctx.warn });
  if (state.size === 0) return [];
  const report = await runSync(
    ctx,
    { mode: "sync", ids: [], only: [], filter: undefined, ref: null, force: false, failFast: false, recursive: true, dryRun: false, cloneOnly: true, locked },
    signal,
    progress,
  );
  const failed = report.packs.filter((p) => p.result === "failed");
  if (failed.length > 0) {
    throw new GrexError("pack_op", `Could not clone ${failed.map((f) => f.id).join(", ")}: ${failed[0]?.message}`);
  }
  return report.packs.filter((p) => p.message === "cloned").map((p) => p.id);
}
