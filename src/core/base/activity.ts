// What long git work is doing right now (objects and bytes received, deltas
// resolved, files checked out), for whoever shows it: a terminal line on the
// CLI, MCP progress notifications. The work reports where it is; the call
// that runs it decides whether anyone listens. Carried by async context, so
// the transport, the indexer and the checkout need no extra parameter, and a
// call nobody watches pays one lookup per report.
import { AsyncLocalStorage } from "node:async_hooks";

export type ActivityPhase = "receiving" | "resolving deltas" | "checking out";

/** One report; fields left out keep their last value for the same subject and phase. */
export interface ActivityReport {
  phase: ActivityPhase;
  /** Objects, deltas or files done so far. */
  done?: number;
  /** How many there are, when known. */
  total?: number;
  /** Bytes received so far (receiving). */
  bytes?: number;
}

/** `subject`: what the work is for (a pack id); `report` null: that subject's work is over. */
export type ActivitySink = (subject: string, report: ActivityReport | null) => void;

interface Frame {
  sink: ActivitySink;
  subject: string;
}

const current = new AsyncLocalStorage<Frame>();

/** Runs `fn` with `sink` listening to the activity of everything it starts. */
export function withActivitySink<T>(sink: ActivitySink, fn: () => T): T {
  return current.run({ sink, subject: current.getStore()?.subject ?? "" }, fn);
}

/** Runs `fn` as work for `subject` (a pack id); its reports are named by it and closed when it ends. */
export async function asActivityOf<T>(subject: string, fn: () => Promise<T>): Promise<T> {
  const frame = current.getStore();
  if (!frame) return fn();
  try {
    return await current.run({ sink: frame.sink, subject }, fn);
  } finally {
    frame.sink(subject, null);
  }
}

/** Where the current work is; nothing happens when no one listens. */
export function reportActivity(report: ActivityReport): void {
  const frame = current.getStore();
  if (frame) frame.sink(frame.subject, report);
}
