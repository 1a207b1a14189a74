// What core code needs from the call that runs it. The verb layer's
// VerbContext extends this; core never imports from verbs, cli or mcp.
import type { Scheduler } from "./scheduler.ts";
import type { Workspace } from "../base/workspace.ts";

/** Reports progress as packs complete; a no-op unless a TTY bar or an MCP progress token listens. */
export type Progress = (done: number, total: number, message?: string) => void;

export interface CallContext {
  /** The workspace for this call; throws a usage error when there is none. */
  workspace(): Workspace;
  /** One scheduler per process: concurrent MCP calls share it. */
  scheduler: Scheduler;
  /** This call's own environment (variable expansion, child processes, env scope session). */
  env: Record<string, string | undefined>;
  /** A warning for the user (stderr on the CLI, a log line over MCP). */
  warn(message: string): void;
  /** Diagnostics at -v level `level` (1..3); dropped unless that verbose. */
  debug(level: number, message: string): void;
}
