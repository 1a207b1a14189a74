// The error type, its kinds and their exit and MCP codes, and the small
// constructors. A leaf: fs-errors.ts builds its sentences on it, and errors.ts
// (which every caller imports) adds toGrexError on top of both.
export type ErrorKind =
  | "generic"
  | "usage"
  | "integrity"
  | "pack_op"
  | "lock"
  | "mcp"
  | "drift"
  | "plugin"
  | "cancelled";

export const EXIT_CODES: Record<ErrorKind, number> = {
  generic: 1,
  usage: 2,
  integrity: 3,
  pack_op: 4,
  lock: 5,
  mcp: 6,
  drift: 7,
  plugin: 8,
  cancelled: 130,
};

/** JSON-RPC / grex-reserved codes used by the MCP adapter. */
export const MCP_CODES: Record<ErrorKind, number> = {
  generic: -32603,
  usage: -32602,
  integrity: -32001,
  pack_op: -32002,
  lock: -32003,
  mcp: -32603,
  drift: -32004,
  plugin: -32005,
  cancelled: -32800,
};

export class GrexError extends Error {
  readonly kind: ErrorKind;
  /** Extra machine-readable detail (e.g. the offending field for usage errors). */
  readonly data: Record<string, unknown> | undefined;

  constructor(kind: ErrorKind, message: string, data?: Record<string, unknown>) {
    super(message);
    this.name = "GrexError";
    this.kind = kind;
    this.data = data;
  }

  get exitCode(): number {
    return EXIT_CODES[this.kind];
  }
}

export const usageError = (msg: string, data?: Record<string, unknown>) => new GrexError("usage", msg, data);
export const integrityError = (msg: string, data?: Record<string, unknown>) =>
  new GrexError("integrity", msg, data);
export const packOpError = (msg: string, data?: Record<string, unknown>) => new GrexError("pack_op", msg, data);
export const lockError = (msg: string, data?: Record<string, unknown>) => new GrexError("lock", msg, data);
export const pluginError = (msg: string, data?: Record<string, unknown>) => new GrexError("plugin", msg, data);

/** Thrown when an AbortSignal fires (MCP cancellation, Ctrl-C). */
export class CancelledError extends GrexError {
  constructor(message = "The operation was cancelled.") {
    super("cancelled", message);
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new CancelledError();
}

/** Short description of an fs error code for one-sentence messages. */
export function errnoCode(err: unknown): string | undefined {
  if (err && typeof err === "object" && "code" in err && typeof err.code === "string") return err.code;
  return undefined;
}
