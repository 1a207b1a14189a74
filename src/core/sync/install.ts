// Install phase of sync: run each pack's setup, independent packs at the same
// time under the call's scheduler permits (the same `--parallel` as the fetch
// phase), keeping every ordering rule: a pack starts only after all its
// prerequisites (its children and its depends_on targets) have finished, and
// one pack's actions run in order inside its own install. A prerequisite that
// failed does not hold its dependants back (as in a serial run: the parent
// still converges), but --fail-fast stops packs that have not started yet.
import { CancelledError, toGrexError } from "../base/errors.ts";
import type { Scheduler } from "../locks/scheduler.ts";
import type { TreeNode } from "./tree.ts";

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
