// Human output for the CLI: a progress line on stderr (TTY only; never with
// --json/--plain). Results are rendered by the outcome of `invoke`.
import type { ActivitySink } from "../core/base/activity.ts";
import { ActivityBoard } from "../verbs/activity-board.ts";
import type { Progress } from "../verbs/types.ts";

export type CliProgress = Progress & {
  done(): void;
  /**
   * Before other output on the same terminal: the bytes that take the line off
   * the screen ("" when none is shown). They go out in front of that output, on
   * its own stream: a clear written to stderr can reach the terminal after a
   * row written to stdout.
   */
  clear(): string;
  /** The last count reported, for the summary of a cancelled run. */
  last: { done: number; total: number } | undefined;
  /** Long git work in flight (objects, bytes, deltas, files), shown after the pack count. */
  activity: ActivitySink;
};

/** A redraw for activity alone waits this long after the last one: several a second, never a flood. */
const REDRAW_MS = 100;

export function makeProgress(enabled: boolean, write: (s: string) => void, label: string, columns = 80): CliProgress {
  let shown = false;
  let counts = "";
  let drawnAt = 0;
  const board = new ActivityBoard();
  const draw = (now: number) => {
    drawnAt = now;
    shown = true;
    const work = board.text();
    const line = `${label} ${counts}${work ? `: ${work}` : ""}`;
    // One row only: a line wider than the terminal wraps, and the next redraw would clear only its last row.
    const width = Math.max(20, columns - 1);
    write(`\r\x1b[2K${line.length > width ? `${line.slice(0, width - 1)}…` : line}`);
  };
  const progress = ((done: number, total: number, message?: string) => {
    progress.last = { done, total };
    if (!enabled) return;
    counts = `[${done}/${total}]${message ? ` ${message}` : ""}`;
    draw(Date.now());
  }) as CliProgress;
  progress.activity = (subject, report) => {
    if (!enabled) return;
    const now = Date.now();
    if (board.update(subject, report, now) || now - drawnAt >= REDRAW_MS) draw(now);
  };
  progress.last = undefined;
  progress.done = () => {
    if (shown) write("\r\x1b[2K");
    shown = false;
  };
  progress.clear = () => {
    const was = shown;
    shown = false;
    return was ? "\r\x1b[2K" : "";
  };
  return progress;
}

/** The one line after Ctrl-C: how far the verb got and the way on. */
export function cancelledMessage(verb: string, progress: CliProgress | undefined): string {
  const last = progress?.last;
  const got = last ? ` after ${last.done} of ${last.total} packs` : "";
  return `${verb} was cancelled${got}; what finished is recorded, nothing is half-written. Run \`grex ${verb}\` again to finish.`;
}
