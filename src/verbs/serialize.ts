// One serializer for results: the CLI's `--json` document and the MCP text /
// structuredContent are the same bytes.
import { EXIT_CODES, MCP_CODES, type GrexError } from "../core/base/errors.ts";

export const toJsonDocument = (value: object): string => JSON.stringify(value);

export interface ErrorBody {
  kind: string;
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** The `error` member of a failed verb's document; `code` is the exit code (CLI) or the grex MCP code. */
export function errorBody(err: GrexError, surface: "cli" | "mcp"): ErrorBody {
  const body: ErrorBody = {
    kind: err.kind,
    code: surface === "cli" ? EXIT_CODES[err.kind] : MCP_CODES[err.kind],
    message: err.message,
  };
  if (surface === "mcp") body.data = { kind: err.kind, ...err.data };
  return body;
}

/** Document for a verb that failed: its partial result (when it has one) plus `verb` and `error`. */
export function failureDocument(verb: string, err: GrexError, surface: "cli" | "mcp", result?: object): object {
  return { ...(result ?? {}), verb, error: errorBody(err, surface) };
}
