// The verbs the CLI knows: the verb table plus `serve` and `mcp`, which belong
// to the MCP adapter (CLI verbs, not tools). Help, completion and argv parsing
// all read this one list.
import { mcpVerb } from "../mcp/client-verb.ts";
import { serveVerb } from "../mcp/serve-verb.ts";
import { VERBS } from "../verbs/index.ts";
import type { VerbDef } from "../verbs/types.ts";

export const CLI_VERBS: readonly VerbDef[] = [...VERBS, serveVerb, mcpVerb];
