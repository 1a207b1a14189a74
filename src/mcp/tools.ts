// MCP tool descriptions generated from the verb table: input schemas from the
// same valibot schemas the CLI validates with (minus CLI-only params), output
// schemas from the result schemas. Built once, on the first tools/list.
import * as v from "valibot";
import { MCP_TOOL_VERBS } from "../verbs/index.ts";
import type { VerbDef } from "../verbs/types.ts";

export interface ToolDescription {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

let cached: ToolDescription[] | undefined;

/** The tool-facing params schema: the verb's own, without CLI-only keys. */
export function mcpParamsSchema(verb: VerbDef) {
  const hidden = verb.cliOnly ?? [];
  return hidden.length === 0 ? verb.params : v.omit(verb.params, hidden as never);
}

export async function toolList(): Promise<ToolDescription[]> {
  if (cached) return cached;
  const { toJsonSchema } = await import("@valibot/to-json-schema");
  const convert = (schema: v.GenericSchema, typeMode: "input" | "output") => {
    const { $schema: _, ...json } = toJsonSchema(schema, { errorMode: "ignore", typeMode }) as Record<string, unknown>;
    return json;
  };
  cached = MCP_TOOL_VERBS.map((verb) => {
    const title = `grex ${verb.name}`;
    return {
      name: verb.name,
      title,
      description: verb.description,
      inputSchema: convert(mcpParamsSchema(verb), "input"),
      outputSchema: convert(verb.result as v.GenericSchema, "output"),
      annotations: {
        title,
        readOnlyHint: verb.readOnly,
        destructiveHint: verb.destructive,
        idempotentHint: verb.readOnly,
        openWorldHint: false,
      },
    };
  });
  return cached;
}
