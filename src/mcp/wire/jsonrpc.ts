// JSON-RPC error codes and the error a request handler throws, shared by the
// server core and the gateway.

export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  initState: -32002,
  cancelled: -32800,
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
