// Builds the per-call VerbContext both adapters hand to a verb.
import type { Scheduler } from "../core/locks/scheduler.ts";
import { findWorkspace, type Workspace } from "../core/base/workspace.ts";
import type { RenderStyle, VerbContext } from "./types.ts";

export interface ContextOptions {
  cwd: string;
  manifest: string | undefined;
  scheduler: Scheduler;
  env: Record<string, string | undefined>;
  surface: "cli" | "mcp";
  warn(message: string): void;
  debug(level: number, message: string): void;
  live?: (text: string) => void;
  rows?: (render: (style: RenderStyle) => string) => void;
}

export function makeContext(opts: ContextOptions): VerbContext {
  let ws: Workspace | undefined;
  return {
    ...opts,
    // The call's own copy: what it changes (env scope session) stays in this call.
    env: { ...opts.env },
    live: opts.live,
    rows: opts.rows,
    workspace() {
      ws ??= findWorkspace(opts.cwd, opts.manifest);
      return ws;
    },
  };
}
