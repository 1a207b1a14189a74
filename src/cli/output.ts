// Human output for the CLI: a progress line on stderr (TTY only; never with
// --json/--plain). Results are rendered by the outcome of `invoke`.
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
};

export function makeProgress(enabled: boolean, write: (s: string) => void, label: string): CliProgress {
  let shown = false;
  const progress = ((done: number, total: number, message?: string) => {
    progress.last = { done, total };
    if (!enabled) return;
    shown = true;
    const msg = message ? ` ${message}` : "";
    write(`\r\x1b[2K${label} [${done}/${total}]${msg}`);
  }) as CliProgress;
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
