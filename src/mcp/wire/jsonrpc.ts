// JSON-RPC error codes and the error a request handler throws, shared by the
// server core and the gateway.

/**
 * Every JSON-RPC error code grex answers with, in one table (docs/mcp.md
 * "Errors" lists them). -32001…-32005 are the grex kinds of a tool result
 * (core/base/grex-error.ts MCP_CODES: integrity, pack_op/init_state, lock,
 * drift, plugin) and are never used for anything else; the HTTP layer and its
 * sessions have codes of their own, from -32010 on.
 */
export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** A request before initialize, or a second initialize (data.kind "init_state"); the seed's dual use of -32002. */
  initState: -32002,
  cancelled: -32800,
  /** HTTP: a request refused before it reaches a session (wrong path or method, Host/Origin, shutting down); the SDK transport's own refusals use it too. */
  httpRefused: -32000,
  /** HTTP 401: missing or wrong bearer token. */
  unauthorized: -32010,
  /** HTTP 404: the Mcp-Session-Id names no open session (closed, expired, or never opened): initialize again. */
  sessionNotFound: -32011,
  /** HTTP 400: GET/DELETE (or a session's POST) without Mcp-Session-Id. */
  sessionRequired: -32012,
  /** HTTP 429 (this client's cap) or 503 (the server's): no new session now; close one with DELETE. */
  sessionLimit: -32013,
  /** HTTP 413: one request body over the size cap. */
  payloadTooLarge: -32014,
  /** HTTP 503: the bytes of request bodies in flight are at their budget; retry after Retry-After. */
  bodyBudget: -32015,
  /** HTTP 415: a POST whose Content-Type is not application/json. */
  unsupportedMediaType: -32016,
  /** A request to the client (elicitation) on a call whose client asked for a plain JSON answer, which cannot carry it. */
  clientUnreachable: -32017,
} as const;

/** A JSON-RPC error to answer a request with (thrown inside a request handler). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}
