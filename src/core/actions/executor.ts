// Runs a pack's action list: in order, checking cancellation between actions,
// one step per action. When an action fails, what this run already applied is
// rolled back in reverse (best effort, one step per rollback, each with
// details.rollback). Cancellation rolls back the same way, then throws
// CancelledError. Teardown runs the explicit list, or undoes each action in reverse.
//
// The hooks are where the caller appends action_started / action_completed /
// action_halted to grex.jsonl; they are called for top-level items only and
// never in a dry run. On cancellation onHalted(…, "cancelled", "") is called
// while the signal is already aborted (append without it). The caller also
// owns persisting `state` (see ./types.ts).
import { Confinement } from "../fs/confine.ts";
import { CancelledError, toGrexError } from "../base/errors.ts";
import { currentOs, type OsName } from "../base/os.ts";
import { homeOf } from "../base/vars.ts";
import { recordExpectation } from "./drift.ts";
import { parseActionItem } from "./index.ts";
import type { ActionContext, ActionItem, ActionOutcome, NestedRun, PackState, Rollback, Step } from "./types.ts";

export interface ActionHooks {
  onStarted(idx: number, action: string): Promise<void>;
  onCompleted(idx: number, action: string, changed: boolean): Promise<void>;
  onHalted(idx: number, action: string, reason: string, stderr: string): Promise<void>;
}
/** Older name of ActionHooks. */
export type Brackets = ActionHooks;

export interface RunOptions {
  packId: string;
  packDir: string;
  dryRun: boolean;
  /** Expansion + child-process environment; session-scope env actions write to it. */
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  /** Per-pack state, mutated in place; the caller loads and persists it. */
  state: PackState;
  os?: OsName;
  now?: () => Date;
  /** Default: $GREX_MACHINE_ENV_FILE from `env` (a test seam), else /etc/environment. */
  machineEnvFile?: string;
  /** Where session-scope env values go. Default: `env`, the call's own environment. */
  processEnv?: Record<string, string | undefined>;
  /**
   * What the pack may touch. Default: the rule with HOME from `env`, only this
   * pack known and no workspace (callers inside a workspace pass theirs).
   */
  confine?: Confinement;
  /** What session scope replaced, for undo; shared by the runs of one call that pass it. Default: this run's own. */
  sessionSaved?: Map<string, string | undefined>;
}

export interface RunResult {
  steps: Step[];
  failed: { idx: number; action: string; reason: string } | null;
  /** A `require` with on_fail: skip stopped the pack. */
  skipped: boolean;
}

interface Runner {
  opts: RunOptions;
  os: OsName;
  now: () => Date;
  machineEnvFile: string;
  processEnv: Record<string, string | undefined>;
  sessionSaved: Map<string, string | undefined>;
  planned: Set<string>;
  confine: Confinement;
  /** Expectation keys recorded by this run (dropped again when it rolls back). */
  recorded: string[];
}

interface ListRun extends NestedRun {
  failedAt: { idx: number; action: string; reason: string; stderr: string } | null;
}

const NO_HOOKS: ActionHooks = {
  onStarted: async () => {},
  onCompleted: async () => {},
  onHalted: async () => {},
};

function runner(opts: RunOptions): Runner {
  return {
    opts,
    os: opts.os ?? currentOs(),
    now: opts.now ?? (() => new Date()),
    machineEnvFile: opts.machineEnvFile ?? opts.env.GREX_MACHINE_ENV_FILE ?? "/etc/environment",
    processEnv: opts.processEnv ?? opts.env,
    sessionSaved: opts.sessionSaved ?? new Map(),
    planned: new Set(),
    confine:
      opts.confine ?? new Confinement({ home: homeOf(opts.env), workspaceRoot: null, packDirs: [opts.packDir], allowOutsideHome: false }),
    recorded: [],
  };
}

function context(r: Runner, where: string, stepIdx: number): ActionContext {
  return {
    packId: r.opts.packId,
    packDir: r.opts.packDir,
    dryRun: r.opts.dryRun,
    env: r.opts.env,
    os: r.os,
    signal: r.opts.signal,
    now: r.now,
    state: r.opts.state,
    where,
    planned: r.planned,
    confine: r.confine,
    machineEnvFile: r.machineEnvFile,
    processEnv: r.processEnv,
    sessionSaved: r.sessionSaved,
    runNested: (items, w) => runList(items, r, w, null, stepIdx),
    undoNested: (items, w) => undoList(items, r, w, stepIdx),
  };
}

const nameOf = (item: unknown): string =>
  item !== null && typeof item === "object" && !Array.isArray(item) ? (Object.keys(item)[0] ?? "?") : "?";

const clause = (msg: string) => msg.replace(/\.$/, "");

/** In a task workspace that skips HOME setup, an `env` action of scope user or machine (a file in HOME or /etc): skipped. */
function homeSetupSkipped(name: string, args: unknown, ctx: ActionContext): ActionOutcome | null {
  if (ctx.confine.stayIn === null || name !== "env") return null;
  const scope = (args as { scope?: string }).scope ?? "user";
  if (scope === "session") return null;
  return {
    result: "skipped",
    details: { refused: "task-workspace", skipped: "home", reason: `env scope ${scope} writes outside the task workspace; setup that writes into HOME is skipped in a task workspace unless asked for (grex init --from … --setup-home)` },
  };
}

/** Parse and run one item; anything thrown except cancellation becomes a failed outcome. */
async function perform(item: unknown, itemWhere: string, ctx: ActionContext, undo: boolean, recorded?: string[]): Promise<ActionOutcome> {
  try {
    const parsed = parseActionItem(item, itemWhere);
    if (undo) return await parsed.def.undo(parsed.args, ctx);
    const home = homeSetupSkipped(nameOf(item), parsed.args, ctx);
    if (home !== null) return home;
    const outcome = await parsed.def.apply(parsed.args, ctx);
    if (outcome.result === "performed_change" || outcome.result === "already_satisfied") {
      const key = recordExpectation(parsed.def, parsed.args, item, itemWhere, ctx);
      if (key) recorded?.push(key);
    }
    return outcome;
  } catch (err) {
    const e = toGrexError(err);
    if (e.kind === "cancelled") throw e;
    const reason = clause(e.message);
    // A task workspace's setup that would write outside it (into HOME): skipped, not failed (confine.ts stayIn).
    if (e.data?.refused === "task-workspace") return { result: "skipped", details: { ...e.data, reason, skipped: "home" } };
    // The error's data (e.g. a confinement refusal's path and rule) goes into the step.
    return { result: "failed", details: { ...e.data, reason }, failure: { reason, stderr: "" } };
  }
}

async function rollBack(rollbacks: readonly Rollback[], packId: string): Promise<Step[]> {
  const steps: Step[] = [];
  for (const rb of [...rollbacks].reverse()) {
    try {
      steps.push({ pack: packId, action: rb.action, idx: rb.idx, result: "performed_change", details: { rollback: await rb.run() } });
    } catch (err) {
      steps.push({ pack: packId, action: rb.action, idx: rb.idx, result: "failed", details: { rollback: `failed: ${clause(toGrexError(err).message)}` } });
    }
  }
  return steps;
}

/**
 * Apply `items` in order. `list` is their path ("actions", "actions[3].when.actions");
 * `parentIdx` is set for nested lists (steps then report the parent's idx).
 */
async function runList(
  items: readonly unknown[],
  r: Runner,
  list: string,
  hooks: ActionHooks | null,
  parentIdx: number | null,
  idxs?: readonly number[],
): Promise<ListRun> {
  const { opts } = r;
  const live = hooks && !opts.dryRun ? hooks : NO_HOOKS;
  const steps: Step[] = [];
  const rollbacks: Rollback[] = [];
  let current: { idx: number; name: string } | null = null;
  try {
    for (let i = 0; i < items.length; i++) {
      if (opts.signal.aborted) throw new CancelledError();
      const item = items[i];
      const name = nameOf(item);
      const idx = idxs?.[i] ?? i;
      const stepIdx = parentIdx ?? idx;
      current = { idx, name };
      await live.onStarted(idx, name);
      const outcome = await perform(item, `${list}[${idx}]`, context(r, `${list}[${idx}].${name}`, stepIdx), false, r.recorded);
      const details = parentIdx === null ? outcome.details : { ...outcome.details, nested: `${list}[${idx}]` };
      steps.push({ pack: opts.packId, action: name, idx: stepIdx, result: outcome.result, details });
      if (outcome.nested) steps.push(...outcome.nested);
      if (outcome.nestedRollbacks) rollbacks.push(...outcome.nestedRollbacks);
      if (outcome.rollback) rollbacks.push({ action: name, idx: stepIdx, run: outcome.rollback });
      if (outcome.result === "failed") {
        const failure = outcome.failure ?? { reason: "failed", stderr: "" };
        current = null;
        await live.onHalted(idx, name, failure.reason, failure.stderr);
        return { steps, rollbacks, failed: failure, skipRest: false, failedAt: { idx: stepIdx, action: name, ...failure } };
      }
      current = null;
      await live.onCompleted(idx, name, outcome.result === "performed_change");
      if (outcome.skipRest) return { steps, rollbacks, failed: null, skipRest: true, failedAt: null };
    }
  } catch (err) {
    // Cancelled (or a hook failed): close the open bracket, undo this list's changes, pass it on.
    if (current) await live.onHalted(current.idx, current.name, "cancelled", "").catch(() => {});
    await rollBack(rollbacks, opts.packId);
    throw err;
  }
  return { steps, rollbacks, failed: null, skipRest: false, failedAt: null };
}

/** Undo `items` in reverse, carrying on past failures (best effort); the first failure is reported. */
async function undoList(items: readonly unknown[], r: Runner, list: string, parentIdx: number | null): Promise<ListRun> {
  const { opts } = r;
  const steps: Step[] = [];
  let failedAt: ListRun["failedAt"] = null;
  for (let i = items.length - 1; i >= 0; i--) {
    if (opts.signal.aborted) throw new CancelledError();
    const name = nameOf(items[i]);
    const stepIdx = parentIdx ?? i;
    const o = await perform(items[i], `${list}[${i}]`, context(r, `${list}[${i}].${name}`, stepIdx), true);
    const details = { ...o.details, teardown: true, ...(parentIdx === null ? {} : { nested: `${list}[${i}]` }) };
    steps.push({ pack: opts.packId, action: name, idx: stepIdx, result: o.result, details });
    if (o.nested) steps.push(...o.nested);
    if (o.result === "failed") failedAt ??= { idx: stepIdx, action: name, ...(o.failure ?? { reason: "failed", stderr: "" }) };
  }
  return { steps, rollbacks: [], failed: failedAt && { reason: failedAt.reason, stderr: failedAt.stderr }, skipRest: false, failedAt };
}

const publicFailure = (f: ListRun["failedAt"]): RunResult["failed"] => f && { idx: f.idx, action: f.action, reason: f.reason };

/**
 * Install: run `items` (one `{<name>: args}` each) in order. On a failure the
 * changes this run made are rolled back in reverse and `failed` names the
 * action. `list`/`idxs` let `grex run` pass a subset with its original indexes.
 */
export async function runActions(
  items: readonly ActionItem[],
  opts: RunOptions,
  hooks: ActionHooks,
  list = "actions",
  idxs?: readonly number[],
): Promise<RunResult> {
  const run = runner(opts);
  // What is rolled back (a failure, or cancellation) leaves nothing to expect.
  const forget = () => {
    for (const k of run.recorded) delete opts.state[k];
  };
  let r: ListRun;
  try {
    r = await runList(items, run, list, hooks, null, idxs);
  } catch (err) {
    forget();
    throw err;
  }
  if (!r.failedAt) return { steps: r.steps, failed: null, skipped: r.skipRest };
  const undone = await rollBack(r.rollbacks, opts.packId);
  forget();
  return { steps: [...r.steps, ...undone], failed: publicFailure(r.failedAt), skipped: false };
}

/**
 * Teardown: the explicit `teardown` list when given (run like install, hooks
 * included, no rollback), else the undo of each of `actions` in reverse. A
 * teardown that finishes without failure clears the pack state.
 */
export async function teardownActions(
  actions: readonly ActionItem[],
  teardown: readonly ActionItem[] | null,
  opts: RunOptions,
  hooks: ActionHooks = NO_HOOKS,
): Promise<RunResult> {
  const r = teardown ? await runList(teardown, runner(opts), "teardown", hooks, null) : await undoList(actions, runner(opts), "actions", null);
  if (!r.failedAt && !opts.dryRun) for (const k of Object.keys(opts.state)) delete opts.state[k];
  return { steps: r.steps, failed: publicFailure(r.failedAt), skipped: r.skipRest };
}
