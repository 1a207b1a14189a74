// Install phase of sync: run each pack's setup, independent packs at the same
// time under the call's scheduler permits (the same `--parallel` as the fetch
// phase), keeping every ordering rule: a pack starts only after all its
// prerequisites (its children and its depends_on targets) have finished, and
// one pack's actions run in order inside its own install. A prerequisite that
// failed does not hold its dependants back (as in a serial run: the parent
// still converges), but --fail-fast stops packs that have not started yet.
import { CancelledError, type GrexError, toGrexError } from "../base/errors.ts";
import type { Step } from "../actions/types.ts";
import type { Workspace } from "../base/workspace.ts";
import type { Confinement } from "../fs/confine.ts";
import { withPackLock } from "../locks/locks.ts";
import type { Scheduler } from "../locks/scheduler.ts";
import { converge, type ConvergeReason } from "../packtypes/index.ts";
import type { LockEntry } from "../workspace/lockfile.ts";
import { effectiveType, type TreeNode } from "./tree.ts";

export interface InstallPhaseOptions {
  /** The verb running the phase (`sync`, `update`), for the cancel message. */
  verb: string;
  /** Packs taking part, in an order where prerequisites come first (installOrder). */
  nodes: readonly TreeNode[];
  /** The packs that must finish before this one starts (children, depends_on targets). */
  prerequisites(node: TreeNode): readonly TreeNode[];
  scheduler: Scheduler;
  signal: AbortSignal;
  failFast: boolean;
  /** Run one pack's setup; sets the node's outcome. Throws only on cancellation (or an error that stops the run). */
  install(node: TreeNode): Promise<void>;
  /** Whether an earlier pack failed in a way that --fail-fast counts. */
  halted(): boolean;
  /** A pack not started because of --fail-fast. */
  skip(node: TreeNode): void;
  onStart(node: TreeNode): void;
  onDone(node: TreeNode): void;
}

/** What a cancelled install phase got through: for the one line after Ctrl-C. */
export class InstallCancelled extends CancelledError {
  constructor(
    verb: string,
    readonly finished: string[],
    readonly cutShort: string[],
    readonly notStarted: string[],
  ) {
    super(installCancelledMessage(verb, finished, cutShort, notStarted));
  }
}

const listOf = (ids: readonly string[]) => (ids.length <= 5 ? ids.join(", ") : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`);

export function installCancelledMessage(verb: string, finished: readonly string[], cutShort: readonly string[], notStarted: readonly string[]): string {
  const parts = [`setup finished for ${finished.length} pack${finished.length === 1 ? "" : "s"}`];
  if (cutShort.length > 0) parts.push(`cut short for ${listOf(cutShort)} (its next sync runs it again)`);
  parts.push(notStarted.length > 0 ? `never started for ${listOf(notStarted)}` : "none left unstarted");
  return `${verb} was cancelled during setup: ${parts.join("; ")}. What finished is recorded, nothing is half-written. Run \`grex ${verb}\` again to finish.`;
}

export async function runInstallPhase(opts: InstallPhaseOptions): Promise<void> {
  const finished: string[] = [];
  const running = new Set<string>();
  const started = new Set<string>();
  const done = new Map<string, Promise<void>>();
  let fatal: unknown;
  const one = async (node: TreeNode): Promise<void> => {
    const before = opts.prerequisites(node).map((p) => done.get(p.id)).filter((p) => p !== undefined);
    await Promise.all(before);
    if (fatal !== undefined || opts.signal.aborted) return;
    if (opts.failFast && opts.halted()) {
      opts.skip(node);
      opts.onDone(node);
      return;
    }
    try {
      await opts.scheduler.withPermit(opts.signal, async () => {
        if (opts.failFast && opts.halted()) {
          opts.skip(node);
          return;
        }
        started.add(node.id);
        running.add(node.id);
        opts.onStart(node);
        try {
          await opts.install(node);
        } finally {
          running.delete(node.id);
        }
        finished.push(node.id);
      });
    } catch (err) {
      fatal ??= err;
      return;
    }
    opts.onDone(node);
  };
  // In order, so a prerequisite's promise exists before its dependants look for it.
  for (const node of opts.nodes) done.set(node.id, one(node));
  await Promise.all(done.values());
  if (fatal === undefined && !opts.signal.aborted) return;
  const e = fatal === undefined ? new CancelledError() : toGrexError(fatal);
  if (e.kind !== "cancelled") throw fatal;
  const cutShort = [...started].filter((id) => !finished.includes(id));
  const notStarted = opts.nodes.map((n) => n.id).filter((id) => !started.has(id));
  throw new InstallCancelled(opts.verb, finished, cutShort, notStarted);
}

/** What installing one pack reads and where it records the outcome (the sync engine's run). */
export interface InstallOneContext {
  ws: Workspace;
  env: Record<string, string | undefined>;
  mode: "sync" | "update";
  force: boolean;
  dryRun: boolean;
  signal: AbortSignal;
  confine: Confinement;
  previous: ReadonlyMap<string, LockEntry>;
  /** Packs whose last install was cut short: they count as never installed. */
  interrupted: ReadonlySet<string>;
  stepsOf: Map<string, Step[]>;
  reasons: Map<string, { reinstalled: boolean; reason: ConvergeReason; hash: string | null }>;
  /** Packs whose install failed (or never ran after a clone): recorded not-installed. */
  installErrors: Map<string, string>;
  /** Integrity errors of single packs (a state file that cannot be read): the run goes on and ends with exit 3. */
  unreadable: GrexError[];
  /** The first failure, for the report (and --fail-fast). */
  halted: { pack: string; action: string; idx: number; reason: string } | null;
}

/** Why the setup ran at a commit that did not move (a bare "up to date" would hide it). */
const RAN_BECAUSE: Record<ConvergeReason, string> = {
  "never-installed": "setup installed (it was not installed)",
  "hash-changed": "setup ran again (its setup changed)",
  "sha-changed": "setup ran again (the commit changed since install)",
  forced: "setup ran again (--force)",
  none: "setup ran",
};

/** Converge one pack's setup under its lock and set its outcome; throws only on cancellation. */
export async function installOne(c: InstallOneContext, node: TreeNode): Promise<void> {
  try {
    const install = () =>
      converge({
        ws: c.ws,
        node,
        type: effectiveType(node),
        // An install cut short (open action bracket) counts as never installed.
        previous: c.interrupted.has(node.id) ? undefined : c.previous.get(node.id),
        mode: c.mode,
        force: c.force,
        dryRun: c.dryRun,
        env: c.env,
        signal: c.signal,
        childShas: node.children.map((ch) => ch.head?.sha ?? c.previous.get(ch.id)?.sha ?? ""),
        confine: c.confine,
      });
    // Setup runs under the pack's lock (hooks too), like `run` and teardown.
    const r = c.dryRun ? await install() : await withPackLock(c.ws, node.dir, c.signal, install);
    c.stepsOf.set(node.id, r.steps);
    c.reasons.set(node.id, { reinstalled: r.ran, reason: r.reason, hash: r.actionsHash });
    if (r.failed) {
      node.outcome = "failed";
      node.message = `action ${r.failed.idx} (${r.failed.action}) failed: ${r.failed.reason}`;
      if (r.ran) c.installErrors.set(node.id, node.message);
      c.halted ??= { pack: node.id, action: r.failed.action, idx: r.failed.idx, reason: r.failed.reason };
    } else if (r.skipped) {
      node.outcome = "skipped";
      node.message = r.skipped;
    } else if (r.ran && (node.message === "up to date" || node.topic !== undefined)) {
      // The commit did not move but the setup ran: say why, not "up to date".
      node.message = node.topic !== undefined ? `${node.message}; ${RAN_BECAUSE[r.reason]}` : `up to date; ${RAN_BECAUSE[r.reason]}`;
    }
  } catch (err) {
    const e = toGrexError(err);
    if (e.kind === "cancelled") throw e;
    node.outcome = "failed";
    node.message = e.message;
    // integrity: a state file grex could not read and must not overwrite; the pack fails alone and its
    // lock entry stays as it was (recording "not installed" would hide the setup that is still in place).
    if (e.kind !== "integrity") c.installErrors.set(node.id, e.message);
    else c.unreadable.push(e);
    c.halted ??= { pack: node.id, action: "", idx: -1, reason: e.message };
  }
}
