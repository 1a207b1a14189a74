// One error type for every user-facing failure. The adapters (CLI, MCP) decide
// how it looks; core code only throws these. Each kind maps to one exit code
// (SPEC §8) and one MCP code (SPEC §9) in the tables of grex-error.ts; this
// file adds toGrexError, which turns anything thrown into one.

import { CancelledError, GrexError } from "./grex-error.ts";
import { fsError } from "./fs-errors.ts";

export * from "./grex-error.ts";

/** Normalise anything thrown into a GrexError; unknown errors become `generic`. */
export function toGrexError(err: unknown): GrexError {
  if (err instanceof GrexError) return err;
  if (err instanceof Error && err.name === "AbortError") return new CancelledError();
  // EACCES, EISDIR, ESPIPE…: one sentence naming the file and the way out (used at call time only).
  const fs = fsError(err);
  if (fs) return fs;
  const msg = err instanceof Error ? err.message : String(err);
  return new GrexError("generic", msg.endsWith(".") ? msg : `${msg}.`);
}

/**
 * The runtime's own words for a failure, without what is meant for the
 * runtime's developers: the first line, with hints such as Bun's "For more
 * information, pass `verbose: true` in the second argument to fetch()" cut.
 */
export function runtimeWords(s: string): string {
  const line = (s.split("\n")[0] ?? s).trim();
  return line.replace(/\s*For more information,.*$/i, "").replace(/\.$/, "");
}
