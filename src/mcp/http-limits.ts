// The bounds of `grex serve --http` on what clients may make it hold: one
// request body's size, one byte budget shared by every body in flight, the
// sessions one client (remote address) may keep open, and the media type a
// POST must declare.

/** Request bodies larger than this are answered 413 without being read further. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Bytes of request bodies being read or handled at once, all clients together (8 bodies of the largest size). */
export const DEFAULT_BODY_BUDGET = 8 * MAX_BODY_BYTES;
/** Sessions kept at once, all clients together. */
export const MAX_SESSIONS = 256;
/** Sessions one client (one remote address; every local client shares the loopback one) may keep open. */
export const DEFAULT_SESSIONS_PER_CLIENT = 64;

export const BODY_BUDGET_ENV = "GREX_MCP_HTTP_BODY_BUDGET";
export const SESSIONS_PER_CLIENT_ENV = "GREX_MCP_HTTP_SESSIONS_PER_CLIENT";

export interface HttpLimits {
  /** Bytes of request bodies in flight at once; at least MAX_BODY_BYTES. */
  bodyBudget: number;
  /** Open sessions per remote address; at least 1. */
  sessionsPerClient: number;
}

/** The limits from `grex serve`'s environment; a value that is not a whole number in range is ignored with a warning. */
export function httpLimitsFromEnv(env: Record<string, string | undefined>, warn: (m: string) => void): HttpLimits {
  const read = (name: string, min: number, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (/^\d+$/.test(raw.trim()) && Number.isSafeInteger(n) && n >= min) return n;
    warn(`${name}='${raw}' is not a whole number of at least ${min}; using ${fallback}.`);
    return fallback;
  };
  return {
    bodyBudget: read(BODY_BUDGET_ENV, MAX_BODY_BYTES, DEFAULT_BODY_BUDGET),
    sessionsPerClient: read(SESSIONS_PER_CLIENT_ENV, 1, DEFAULT_SESSIONS_PER_CLIENT),
  };
}

/**
 * Bytes reserved by the request bodies in flight. A body reserves what it
 * declares (Content-Length) before a byte is read, or chunk by chunk as it
 * arrives, and gives it all back when its request has been answered.
 */
export class BodyBudget {
  private used = 0;
  /** Requests refused because the budget was spent (for tests and diagnostics). */
  refusals = 0;

  constructor(readonly limit: number) {}

  inUse(): number {
    return this.used;
  }

  /** Reserve `n` more bytes, or false (nothing reserved) when that would pass the limit. */
  take(n: number): boolean {
    if (this.used + n > this.limit) {
      this.refusals++;
      return false;
    }
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}

export type BodyRead = { text: string } | { refused: "too_large" | "budget" };

/**
 * The body as text, under both bounds: over `max` bytes (declared or
 * streamed) is "too_large"; more than the budget has left is "budget". What
 * it reserved is added to `held.bytes`, for the caller to give back once the
 * request is answered (also after a refusal).
 */
export async function readBody(req: Request, max: number, budget: BodyBudget, held: { bytes: number }): Promise<BodyRead> {
  const declared = req.headers.get("content-length");
  const declaredBytes = declared === null ? undefined : Number(declared);
  if (declaredBytes !== undefined && declaredBytes > max) return { refused: "too_large" };
  if (req.body === null) return { text: "" };
  // A declared length is reserved whole, up front: a burst of large bodies is refused before any of them is read.
  if (declaredBytes !== undefined && Number.isSafeInteger(declaredBytes) && declaredBytes > 0) {
    if (!budget.take(declaredBytes)) return { refused: "budget" };
    held.bytes += declaredBytes;
  }
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        void reader.cancel().catch(() => {});
        return { refused: "too_large" };
      }
      // Past what was declared (or with no length declared): reserve as it arrives.
      if (size > held.bytes) {
        const more = size - held.bytes;
        if (!budget.take(more)) {
          void reader.cancel().catch(() => {});
          return { refused: "budget" };
        }
        held.bytes += more;
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return { text: Buffer.concat(chunks, size).toString("utf8") };
}

/** `application/json`, with or without parameters (`; charset=utf-8`), any case. */
export function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const media = (value.split(";")[0] ?? "").trim().toLowerCase();
  return media === "application/json";
}
