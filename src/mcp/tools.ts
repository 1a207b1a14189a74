// MCP tool descriptions generated from the verb table: input schemas from the
// same valibot schemas the CLI validates with (minus CLI-only params), output
// schemas from the result schemas. Built once, on the first tools/list.
import * as v from "valibot";
import { MCP_TOOL_VERBS } from "../verbs/index.ts";
import type { VerbDef } from "../verbs/types.ts";

type JsonSchema = Record<string, unknown>;

export interface ToolDescription {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

/** The tool names, in table order (12). */
export const MCP_TOOL_NAMES: readonly string[] = MCP_TOOL_VERBS.map((v) => v.name);

/**
 * What a failed call's structuredContent looks like (serialize.ts failureDocument):
 * `verb` and `error`, plus the partial result when the verb completed.
 */
const FAILURE_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    verb: { type: "string" },
    error: {
      type: "object",
      properties: {
        kind: { type: "string" },
        code: { type: "integer" },
        message: { type: "string" },
        data: { type: "object" },
      },
      required: ["kind", "code", "message"],
    },
  },
  required: ["verb", "error"],
};

let cached: ToolDescription[] | undefined;

/** The tool-facing params schema: the verb's own, without CLI-only keys. */
export function mcpParamsSchema(verb: VerbDef): v.GenericSchema {
  const hidden = verb.cliOnly ?? [];
  if (hidden.length === 0) return verb.params;
  return v.strictObject(Object.fromEntries(Object.entries(verb.params.entries).filter(([key]) => !hidden.includes(key))));
}

export async function toolList(): Promise<ToolDescription[]> {
  if (cached) return cached;
  const { toJsonSchema } = await import("@valibot/to-json-schema");
  const convert = (schema: v.GenericSchema, typeMode: "input" | "output"): JsonSchema => {
    const { $schema: _, ...json } = toJsonSchema(schema, { errorMode: "ignore", typeMode }) as JsonSchema;
    return json;
  };
  cached = MCP_TOOL_VERBS.map((verb) => {
    const title = `grex ${verb.name}`;
    return {
      name: verb.name,
      title,
      description: verb.description,
      inputSchema: { ...convert(mcpParamsSchema(verb), "input"), additionalProperties: false },
      // A call that fails still carries structuredContent (isError: true), and clients
      // validate it against this schema, so the failure shape is one of the branches.
      outputSchema: { type: "object", anyOf: [convert(verb.result, "output"), FAILURE_SCHEMA] },
      annotations: {
        title,
        readOnlyHint: verb.readOnly,
        destructiveHint: verb.destructive,
        idempotentHint: verb.readOnly,
        // Anything that writes may reach git remotes or run pack commands.
        openWorldHint: !verb.readOnly,
      },
    };
  });
  return cached;
}
