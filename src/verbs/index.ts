// The verb table: every verb grex has, defined once. Both adapters read this.
// `serve` and `mcp` (the MCP server and client as CLI verbs) live with their
// adapter in src/mcp, and the CLI adds them: this table imports no adapter.
import { addVerb } from "./add.ts";
import { doctorVerb } from "./doctor.ts";
import { execVerb } from "./exec.ts";
import { importVerb } from "./import.ts";
import { initVerb } from "./init.ts";
import { lsVerb } from "./ls.ts";
import { rmVerb } from "./rm.ts";
import { runVerb } from "./run.ts";
import { statusVerb } from "./status.ts";
import { syncVerb } from "./sync.ts";
import { teardownVerb } from "./teardown.ts";
import type { VerbDef } from "./types.ts";
import { updateVerb } from "./update.ts";

// Each entry keeps its own param/result types; the table erases them for the adapters.
export const VERBS: readonly VerbDef[] = [
  initVerb,
  addVerb,
  rmVerb,
  lsVerb,
  statusVerb,
  syncVerb,
  updateVerb,
  doctorVerb,
  importVerb,
  runVerb,
  execVerb,
  teardownVerb,
];

export function findVerb(name: string): VerbDef | undefined {
  return VERBS.find((v) => v.name === name);
}

/** The verbs exposed as MCP tools (12: every verb but serve and mcp). */
export const MCP_TOOL_VERBS: readonly VerbDef[] = VERBS.filter((v) => v.mcp);
