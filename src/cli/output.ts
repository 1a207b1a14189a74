// Human output for the CLI: a progress line on stderr (TTY only; never with
// --json/--plain). Results are rendered by the outcome of `invoke`.
import type { Progress } from "../verbs/types.ts";

export type CliProgress = Progress & { done(): void };

export function makeProgress(enabled: boolean, write: (s: string) => void, label: string): CliProgress {
  let shown = false;
  const progress = ((done: number, total: number, message?: string) => {
    if (!enabled) return;
    shown = true;
    const msg = message ? ` ${message}` : "";
    write(`\r\x1b[2K${label} [${done}/${total}]${msg}`);
  }) as CliProgress;
  progress.done = () => {
    if (shown) write("\r\x1b[2K");
  };
  return progress;
}
