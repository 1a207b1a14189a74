// The limits every transfer runs under: what a server may send (bytes, refs,
// objects, delta chains) and how slowly. Each is a documented default that an
// honest large repository never reaches, and each can be raised (or lowered)
// through its environment variable; the error that fires names it.
import { GrexError, packOpError } from "../../base/errors.ts";

export interface TransferLimits {
  /** Seconds to wait for a server's response to start (connection and headers). */
  connectTimeout: number;
  /** Bytes per second under which a transfer counts as stalled… */
  lowSpeedLimit: number;
  /** …for this many seconds in a row (0 turns the check off). */
  lowSpeedTime: number;
  /** Largest ref advertisement, in bytes (after any Content-Encoding is decoded). */
  maxRefsBytes: number;
  /** Largest pack, in bytes. */
  maxPackBytes: number;
  /** Most objects in one pack. */
  maxPackObjects: number;
  /** Largest object (whole or rebuilt from deltas), in bytes. */
  maxObjectBytes: number;
  /** Longest delta chain. */
  maxDeltaDepth: number;
  /** Memory for delta bases kept while resolving a pack, in bytes. */
  deltaCacheBytes: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export interface LimitSpec {
  env: string;
  def: number;
  unit: "bytes" | "seconds" | "count" | "bytes/s";
}

export const LIMIT_SPECS: Record<keyof TransferLimits, LimitSpec> = {
  connectTimeout: { env: "GREX_HTTP_CONNECT_TIMEOUT", def: 30, unit: "seconds" },
  lowSpeedLimit: { env: "GREX_HTTP_LOW_SPEED_LIMIT", def: 1 * KiB, unit: "bytes/s" },
  lowSpeedTime: { env: "GREX_HTTP_LOW_SPEED_TIME", def: 30, unit: "seconds" },
  maxRefsBytes: { env: "GREX_MAX_REFS_BYTES", def: 64 * MiB, unit: "bytes" },
  maxPackBytes: { env: "GREX_MAX_PACK_BYTES", def: 16 * GiB, unit: "bytes" },
  maxPackObjects: { env: "GREX_MAX_PACK_OBJECTS", def: 32_000_000, unit: "count" },
  maxObjectBytes: { env: "GREX_MAX_OBJECT_BYTES", def: 512 * MiB, unit: "bytes" },
  maxDeltaDepth: { env: "GREX_MAX_DELTA_DEPTH", def: 10_000, unit: "count" },
  deltaCacheBytes: { env: "GREX_DELTA_CACHE_BYTES", def: 96 * MiB, unit: "bytes" },
};

const SUFFIX: Record<string, number> = { "": 1, k: KiB, m: MiB, g: GiB };

/** A limit's value from its environment variable: a number with an optional k/m/g suffix for sizes. */
function parseValue(raw: string, spec: LimitSpec): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmg]?)i?b?\s*$/i.exec(raw);
  if (!m) return null;
  const suffix = (m[2] ?? "").toLowerCase();
  if (suffix !== "" && spec.unit !== "bytes" && spec.unit !== "bytes/s") return null;
  return Number(m[1]) * (SUFFIX[suffix] ?? 1);
}

/** The limits in force: each environment variable that is set overrides its default. */
export function transferLimits(env: Record<string, string | undefined> = process.env): TransferLimits {
  const out = {} as TransferLimits;
  for (const key of Object.keys(LIMIT_SPECS) as Array<keyof TransferLimits>) {
    out[key] = limitFromEnv(env, LIMIT_SPECS[key]);
  }
  return out;
}

/** One limit from its environment variable (its default when unset); a usage error naming the variable when unreadable. */
export function limitFromEnv(env: Record<string, string | undefined>, spec: LimitSpec): number {
  const raw = env[spec.env];
  if (raw === undefined || raw === "") return spec.def;
  const v = parseValue(raw, spec);
  if (v === null) throw new GrexError("usage", `${spec.env}=${raw} is not a valid ${spec.unit === "count" ? "count" : spec.unit === "seconds" ? "number of seconds" : "size"}; use a number${spec.unit === "bytes" || spec.unit === "bytes/s" ? " such as 512m or 2g" : ""}.`, { env: spec.env });
  return v;
}

/** A size for people: 1536 → "1.5 KiB". */
export function showBytes(n: number): string {
  if (n >= GiB) return `${+(n / GiB).toFixed(1)} GiB`;
  if (n >= MiB) return `${+(n / MiB).toFixed(1)} MiB`;
  if (n >= KiB) return `${+(n / KiB).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** The one-sentence error when `key` fires: what went over, by how much, and the variable that raises it. */
export function limitError(key: keyof TransferLimits, what: string, value: number): GrexError {
  const spec = LIMIT_SPECS[key];
  if (key === "lowSpeedLimit" || key === "lowSpeedTime") {
    const time = LIMIT_SPECS.lowSpeedTime.env;
    return packOpError(`${what} (${spec.env}, ${time}); if the server is only slow, lower ${spec.env} or raise ${time} (0 turns the check off).`, { limit: spec.env, value });
  }
  const shown = spec.unit === "bytes" ? showBytes(value) : spec.unit === "seconds" ? `${value} s` : String(value);
  if (key === "connectTimeout") return packOpError(`${what} (limit ${shown}, ${spec.env}); if the server is only slow, raise ${spec.env}.`, { limit: spec.env, value });
  return packOpError(`${what} (limit ${shown}, ${spec.env}); set ${spec.env} higher if the server is trusted and the repository really needs it.`, { limit: spec.env, value });
}
