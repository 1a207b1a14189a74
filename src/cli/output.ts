// Human output for the CLI: a verb's own renderer or indented JSON, and a
// progress line on stderr (TTY only; never with --json/--plain).
import type { Progress, RenderStyle, VerbDef } from "../verbs/types.ts";

export function renderResult(verb: VerbDef, result: object, params: object, style: RenderStyle): string {
  if (verb.render) return verb.render(result, params as never, style);
  return JSON.stringify(result, null, 2);
}

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
