// What a child server lists, made safe to pass on: tolerant towards the child,
// strict towards the client. Used by the gateway and by `grex mcp status|call`
// (which accepts the same servers the gateway accepts).

type Tool = Record<string, unknown>;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A child's tool name grex can list: printable ASCII without spaces, 1–128 characters ('.', '/' and the like become '_'). */
export const LISTABLE_NAME = /^[\x21-\x7e]{1,128}$/;

/**
 * One child tool as grex passes it on, or a reason to drop it. Tolerant towards the
 * child, strict towards the client: a missing or non-object inputSchema becomes the
 * child's `input_schema` when that is an object, else {"type":"object"}; a schema
 * without "type" gets type object; fields of the wrong type are left out (never invented).
 */
/** A tools/call result as MCP spells it: some servers answer `is_error` (snake_case) for `isError`. */
export function normaliseCallResult(result: Record<string, unknown>): Record<string, unknown> {
  if (typeof result.isError === "boolean" || typeof result.is_error !== "boolean") return result;
  const { is_error: isError, ...rest } = result;
  return { ...rest, isError };
}

export function normaliseTool(raw: unknown): { tool: Tool } | { dropped: string } {
  if (!isObject(raw)) return { dropped: "a tools/list entry that is not an object" };
  const name = raw.name;
  if (typeof name !== "string" || !LISTABLE_NAME.test(name)) {
    return { dropped: `tool ${typeof name === "string" ? JSON.stringify(name.slice(0, 80)) : "without a name"} (names must be 1-128 printable characters without spaces)` };
  }
  const { input_schema: snake, output_schema: snakeOut, ...rest } = raw;
  const tool: Tool = { ...rest, name };
  const input = isObject(raw.inputSchema) ? raw.inputSchema : isObject(snake) ? snake : { type: "object" };
  // MCP requires an object schema; one of another type says nothing usable about the arguments.
  tool.inputSchema = input.type === "object" ? input : input.type === undefined ? { ...input, type: "object" } : { type: "object" };
  const output = isObject(raw.outputSchema) ? raw.outputSchema : isObject(snakeOut) ? snakeOut : undefined;
  if (output && output.type === "object") tool.outputSchema = output;
  else delete tool.outputSchema;
  for (const k of ["description", "title"]) if (tool[k] !== undefined && typeof tool[k] !== "string") delete tool[k];
  if (tool.annotations !== undefined && !isObject(tool.annotations)) delete tool.annotations;
  return { tool };
}

