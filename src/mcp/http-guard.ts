// What stands in front of `grex serve --http`'s MCP endpoint: the --http
// address, the Host/Origin guard against DNS rebinding, the constant-time
// bearer check, and the JSON-RPC error responses they answer with.
import { createHash, timingSafeEqual } from "node:crypto";
import { usageError } from "../core/base/errors.ts";
import { RPC } from "./wire/jsonrpc.ts";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** "127.0.0.1:8080", "[::1]:0", "8080" → hostname and port; a usage error for anything else. */
export function parseAddr(addr: string): { hostname: string; port: number } {
  const bad = () => usageError(`Invalid --http address '${addr}': use host:port such as 127.0.0.1:8080 ([::1]:8080 for IPv6).`, { field: "http" });
  const text = addr.trim();
  let hostname: string;
  let portText: string;
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:(\d+)$/.exec(text);
  if (v6) {
    hostname = v6[1] as string;
    portText = v6[2] as string;
  } else if (/^\d+$/.test(text)) {
    hostname = "127.0.0.1";
    portText = text;
  } else {
    const parts = text.split(":");
    if (parts.length !== 2 || parts[0] === "" || !/^\d+$/.test(parts[1] as string)) throw bad();
    hostname = parts[0] as string;
    portText = parts[1] as string;
  }
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw bad();
  return { hostname, port };
}

export const json = (status: number, body: object, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/** Transport-level errors have no request to answer: id null, like the SDK's own. */
export const rpcError = (status: number, code: number, message: string, headers?: Record<string, string>) =>
  json(status, { jsonrpc: "2.0", id: null, error: { code, message } }, headers);

export const unauthorized = () => rpcError(401, RPC.unauthorized, "Unauthorized", { "WWW-Authenticate": 'Bearer realm="grex"' });

/** Split a Host header ("name:port", "[v6]:port", "name") into hostname and port (80 when absent). */
function splitHost(host: string): { hostname: string; port: number } | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d+))?$/.exec(host.trim());
  if (!m) return undefined;
  return { hostname: (m[1] as string).toLowerCase(), port: m[2] === undefined ? 80 : Number(m[2]) };
}

/**
 * DNS-rebinding guard. Bound to loopback: Host must name a loopback address (or
 * the bound name) with our port, and a browser Origin must be a loopback origin.
 * Bound elsewhere the token is the protection; a cross-origin browser request
 * (Origin host differing from Host) is still refused.
 */
export function makeHostGuard(boundHost: string, port: () => number, loopback: boolean) {
  const bound = boundHost.includes(":") ? `[${boundHost.toLowerCase()}]` : boundHost.toLowerCase();
  const forbidden = (what: string, value: string | null) => rpcError(403, RPC.httpRefused, `Forbidden: invalid ${what} header${value === null ? "" : ` '${value}'`}.`);
  return (req: Request): Response | undefined => {
    const host = req.headers.get("host");
    const origin = req.headers.get("origin");
    if (loopback) {
      const h = host === null ? undefined : splitHost(host);
      if (!h || !(isLoopbackHost(h.hostname) || h.hostname === bound) || h.port !== port()) return forbidden("Host", host);
      if (origin !== null) {
        let o: URL | undefined;
        try {
          o = new URL(origin);
        } catch {
          o = undefined;
        }
        if (!o || (o.protocol !== "http:" && o.protocol !== "https:") || !isLoopbackHost(o.hostname)) return forbidden("Origin", origin);
      }
      return undefined;
    }
    if (origin !== null) {
      let originHost: string | undefined;
      try {
        originHost = new URL(origin).host.toLowerCase();
      } catch {
        originHost = undefined;
      }
      if (originHost === undefined || originHost !== host?.toLowerCase()) return forbidden("Origin", origin);
    }
    return undefined;
  };
}

/** Constant-time bearer check: both sides hashed to equal-length digests first. */
export function makeAuth(token: string | undefined): (req: Request) => boolean {
  if (token === undefined) return () => true;
  const expected = createHash("sha256").update(token, "utf8").digest();
  return (req) => {
    const header = req.headers.get("authorization") ?? "";
    const m = /^Bearer +(\S.*)$/i.exec(header.trim());
    const given = createHash("sha256").update(m ? (m[1] as string) : "", "utf8").digest();
    return timingSafeEqual(given, expected) && m !== null;
  };
}
