// Runs a pack's action list: in order, checking cancellation between actions,
// reporting a step per action, and on failure rolling back what this run
// already applied, in reverse (best effort, each rollback reported).
import { CancelledError, toGrexError } from "../errors.ts";
import { currentOs } from "../os.ts";
import { parseActionItem } from "./index.ts";
import type { ActionContext, NestedRun, PackState, Step } from "./types.ts";

export interface Brackets {
  onStarted(idx: number, action: string): Promise<void>;
  onCompleted(idx: number, action: string, changed: boolean): Promise<void>;
  onHalted(idx: number, action: string, reason: string, stderr: string): Promise<void>;
}

export interface RunOptions {
  packId: string;
  packDir: string;
  dryRun: boolean;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  state: PackState;
}

export interface RunResult {
  steps: Step[];
  failed: { idx: number; action: string; reason: string } | null;
  /** A `require` with on_fail: skip stopped the pack. */
  skipped: boolean;
}

type Item = Record<string, unknown>;

function context(opts: RunOptions, where: string): ActionContext {
  const ctx: ActionContext = {
    packId: opts.packId,
    packDir: opts.packDir,
    dryRun: opts.dryRun,
    env: opts.env,
    os: currentOs(),
    signal: opts.signal,
    state: opts.state,
    where,
    runNested: (items, w) => runList(items, opts, w, null, false),
    undoNested: (items, w) => undoList(items, opts, w),
  };
  return ctx;
}

async function runList(items: readonly Item[], opts: RunOptions, where: string, brackets: Brackets | null, top: boolean, idxs?: number[]): Promise<NestedRun & { failedAt?: { idx: number; action: string } }> {
  const steps: Step[] = [];
  const rollbacks: Array<() => Promise<string>> = [];
  for (let i = 0; i < items.length; i++) {
    if (opts.signal.aborted) throw new CancelledError();
    const idx = idxs?.[i] ?? i;
    const w = `${where}[${idx}]`;
    const item = items[i] as Item;
    const name = Object.keys(item)[0] ?? "?";
    if (top && !opts.dryRun) await brackets?.onStarted(idx, name);
    let outcome;
    try {
      const parsed = parseActionItem(item, w);
      outcome = await parsed.def.apply(parsed.args, context(opts, w));
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      outcome = { result: "failed" as const, details: { reason: e.message }, failure: { reason: e.message, stderr: "" } };
    }
    if (outcome.nested) steps.push(...outcome.nested);
    steps.push({ pack: opts.packId, action: name, idx, result: outcome.result, details: outcome.details });
    if (outcome.rollback) rollbacks.push(outcome.rollback);
    if (outcome.result === "failed") {
      const failure = outcome.failure ?? { reason: "failed", stderr: "" };
      if (top && !opts.dryRun) await brackets?.onHalted(idx, name, failure.reason, failure.stderr);
      return { steps, failed: failure, skipRest: false, rollbacks, failedAt: { idx, action: name } };
    }
    if (top && !opts.dryRun) await brackets?.onCompleted(idx, name, outcome.result === "performed_change");
    if (outcome.skipRest) return { steps, failed: null, skipRest: true, rollbacks };
  }
  return { steps, failed: null, skipRest: false, rollbacks };
}

async function undoList(items: readonly Item[], opts: RunOptions, where: string): Promise<NestedRun> {
  const steps: Step[] = [];
  let failed: NestedRun["failed"] = null;
  for (let i = items.length - 1; i >= 0; i--) {
    if (opts.signal.aborted) throw new CancelledError();
    const w = `${where}[${i}]`;
    const item = items[i] as Item;
    const name = Object.keys(item)[0] ?? "?";
    try {
      const parsed = parseActionItem(item, w);
      const o = await parsed.def.undo(parsed.args, context(opts, w));
      if (o.nested) steps.push(...o.nested);
      steps.push({ pack: opts.packId, action: name, idx: i, result: o.result, details: { ...o.details, teardown: true } });
      if (o.result === "failed") failed ??= o.failure ?? { reason: "failed", stderr: "" };
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      steps.push({ pack: opts.packId, action: name, idx: i, result: "failed", details: { reason: e.message, teardown: true } });
      failed ??= { reason: e.message, stderr: "" };
    }
  }
  return { steps, failed, skipRest: false, rollbacks: [] };
}

/** Install: run `items`; on failure undo this run's changes in reverse. */
export async function runActions(items: readonly Item[], opts: RunOptions, brackets: Brackets, where = "actions", idxs?: number[]): Promise<RunResult> {
  const r = await runList(items, opts, where, brackets, true, idxs);
  if (!r.failed) return { steps: r.steps, failed: null, skipped: r.skipRest };
  for (const rb of [...r.rollbacks].reverse()) {
    try {
      const what = await rb();
      r.steps.push({ pack: opts.packId, action: "rollback", idx: r.failedAt?.idx ?? -1, result: "performed_change", details: { rollback: what } });
    } catch (err) {
      r.steps.push({ pack: opts.packId, action: "rollback", idx: r.failedAt?.idx ?? -1, result: "failed", details: { rollback: toGrexError(err).message } });
    }
  }
  return { steps: r.steps, failed: { idx: r.failedAt?.idx ?? -1, action: r.failedAt?.action ?? "?", reason: r.failed.reason }, skipped: false };
}

/** Teardown: the explicit `teardown` list when given, else each action's undo in reverse order. */
export async function teardownActions(actions: readonly Item[], teardown: readonly Item[] | null, opts: RunOptions, brackets: Brackets): Promise<RunResult> {
  if (teardown) {
    const r = await runList(teardown, opts, "teardown", brackets, true);
    return { steps: r.steps, failed: r.failed ? { idx: r.failedAt?.idx ?? -1, action: r.failedAt?.action ?? "?", reason: r.failed.reason } : null, skipped: r.skipRest };
  }
  const r = await undoList(actions, opts, "actions");
  return { steps: r.steps, failed: r.failed ? { idx: -1, action: "teardown", reason: r.failed.reason } : null, skipped: false };
}
