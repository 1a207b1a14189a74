// `grex serve --http`: MCP Streamable HTTP at /mcp on Bun.serve, one route
// per method. In front of the sessions (http-sessions.ts): Host/Origin checks
// (DNS rebinding), the bearer token, the media type and the body bounds
// (http-limits.ts).
import { GrexError, usageError } from "../core/base/errors.ts";
import { isLoopbackHost, makeAuth, makeHostGuard, parseAddr, rpcError, unauthorized } from "./http-guard.ts";
import { BodyBudget, type HttpLimits, isJsonContentType, MAX_BODY_BYTES, MAX_SESSIONS, readBody, DEFAULT_BODY_BUDGET, DEFAULT_SESSIONS_PER_CLIENT } from "./http-limits.ts";
import { type Entry, HttpSessions, isObject, shuttingDown, withFullAccept, withInitializeDefaults } from "./http-sessions.ts";
import { normalJitPolicy } from "./jit.ts";
import type { ServerOptions } from "./server.ts";
import { RPC } from "./wire/jsonrpc.ts";

export { isLoopbackHost, parseAddr } from "./http-guard.ts";
export { MAX_BODY_BYTES } from "./http-limits.ts";

export const MCP_PATH = "/mcp";
export const DEFAULT_PORT = 8080;
/** A session with no request in flight and no traffic for this long is closed (clients that never DELETE). */
const IDLE_SESSION_MS = 30 * 60_000;
const SWEEP_MS = 60_000;
/** How long stop() lets open responses flush before cutting connections. */
const FLUSH_MS = 2_000;

export interface HttpServeOptions {
  /** host:port ("[::1]:8080" for IPv6); a bare port means 127.0.0.1. Port 0 picks a free one. */
  addr: string;
  /** Bearer token every request must carry; required unless bound to loopback. */
  token: string | undefined;
  /** No sessions: every POST gets a fresh, already-initialized session and a JSON answer (no Mcp-Session-Id). */
  stateless?: boolean;
  /** The body budget and per-client session cap (defaults in http-limits.ts; `grex serve` reads them from its environment). */
  limits?: Partial<HttpLimits>;
  server: ServerOptions;
  log(message: string): void;
}

export interface HttpServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:8080/mcp. */
  url: string;
  /** Stop accepting sessions, let in-flight calls finish (session.drain), close every session and the listener. */
  stop(): Promise<void>;
  /** Cancel every in-flight call (they answer -32800); use before or during stop() for a fast exit. */
  abort(): void;
  /** Open sessions (for tests and diagnostics). */
  sessionCount(): number;
  /** Bytes of request bodies held right now, and how many requests the budget refused so far. */
  bodies(): { inUse: number; refused: number };
}

/** What the routes share. */
interface Routes {
  opts: HttpServeOptions;
  sessions: HttpSessions;
  budget: BodyBudget;
  sessionsPerClient: number;
  /** The remote address of a request: who the per-client cap counts. */
  clientOf(req: Request): string;
}

/** Start serving; resolves once listening. Refuses a non-loopback bind without a token. */
export async function serveHttp(opts: HttpServeOptions): Promise<HttpServer> {
  const { hostname, port: wantedPort } = parseAddr(opts.addr);
  const token = opts.token === "" ? undefined : opts.token;
  const loopback = isLoopbackHost(hostname);
  if (!loopback && token === undefined) {
    throw usageError(
      `Refusing to serve MCP on non-loopback address ${opts.addr} without a token; pass --token (or set GREX_MCP_TOKEN), or bind 127.0.0.1.`,
      { field: "token" },
    );
  }
  const { WebStandardStreamableHTTPServerTransport: Transport } = await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
  const sessions = new HttpSessions(opts.server, Transport, (m) => opts.server.debug?.(1, `http: ${m}`));
  let boundPort = wantedPort;
  const hostGuard = makeHostGuard(hostname, () => boundPort, loopback);
  const authorized = makeAuth(token);
  let server: ReturnType<typeof Bun.serve> | undefined;
  const routes: Routes = {
    opts,
    sessions,
    budget: new BodyBudget(Math.max(MAX_BODY_BYTES, opts.limits?.bodyBudget ?? DEFAULT_BODY_BUDGET)),
    sessionsPerClient: Math.max(1, opts.limits?.sessionsPerClient ?? DEFAULT_SESSIONS_PER_CLIENT),
    clientOf: (req) => server?.requestIP(req)?.address ?? "unknown",
  };

  /** Checks every request passes, then the route for its method. */
  async function handle(req: Request): Promise<Response> {
    const blocked = hostGuard(req);
    if (blocked) return blocked;
    const path = new URL(req.url).pathname;
    // /mcp is the documented endpoint; plain JSON-RPC clients often POST to the root.
    if (path !== MCP_PATH && path !== "/") return rpcError(404, RPC.httpRefused, `Not Found: the MCP endpoint is ${MCP_PATH}.`);
    if (!authorized(req)) return unauthorized();
    if (opts.stateless && req.method !== "POST") {
      return rpcError(405, RPC.httpRefused, "Method Not Allowed: this server is stateless (--stateless); send each message as a POST.", { Allow: "POST" });
    }
    if (req.method === "GET" || req.method === "DELETE") return routeStream(routes, req);
    if (req.method === "POST") return routePost(routes, req);
    return rpcError(405, RPC.httpRefused, "Method Not Allowed: use POST, GET or DELETE.", { Allow: "GET, POST, DELETE" });
  }

  try {
    server = Bun.serve({
      hostname,
      port: wantedPort,
      // SSE streams are kept alive by the transport's 15 s comments.
      idleTimeout: 60,
      // Backstop only: routePost answers 413 itself with a JSON-RPC body.
      maxRequestBodySize: MAX_BODY_BYTES * 2,
      fetch: (req) =>
        handle(req).catch((err: unknown) => {
          opts.log(`internal error handling ${req.method} ${new URL(req.url).pathname}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
          return rpcError(500, RPC.internalError, "Internal error.");
        }),
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new GrexError("generic", `Cannot listen on ${opts.addr} (${why.replace(/\.$/, "")}); pick another address with --http host:port.`);
  }
  const listening = server;
  boundPort = listening.port ?? wantedPort;
  normalJitPolicy(); // listening: from here on this process serves
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;
  const sweep = setInterval(() => sessions.sweep(IDLE_SESSION_MS), SWEEP_MS);
  sweep.unref();

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${boundPort}${MCP_PATH}`,
    sessionCount: () => sessions.open.size,
    bodies: () => ({ inUse: routes.budget.inUse(), refused: routes.budget.refusals }),
    abort: () => sessions.abortAll(),
    stop() {
      stopping ??= (async () => {
        sessions.accepting = false;
        clearInterval(sweep);
        // Stop listening; open connections stay so in-flight answers reach their clients.
        const closed = listening.stop(false);
        // New requests are refused, in-flight ones finish (drain), then the transports close.
        await sessions.stopAll();
        await Promise.race([closed, new Promise<void>((r) => setTimeout(r, FLUSH_MS).unref())]);
        await listening.stop(true);
      })();
      return stopping;
    },
  };
}

/** The session a request names, or the answer when it names none that is open. */
function namedSession(routes: Routes, req: Request): Entry | Response {
  const sid = req.headers.get("mcp-session-id");
  if (sid === null) return rpcError(400, RPC.sessionRequired, "Bad Request: Mcp-Session-Id header is required; send initialize first.");
  const entry = routes.sessions.open.get(sid);
  if (!entry) return rpcError(404, RPC.sessionNotFound, "Session not found: it was closed or expired; send initialize to open a new one.");
  entry.lastSeen = Date.now();
  return entry;
}

/** GET opens a session's server-to-client event stream; DELETE ends the session. */
function routeStream(routes: Routes, req: Request): Promise<Response> | Response {
  const entry = namedSession(routes, req);
  return entry instanceof Response ? entry : entry.transport.handleRequest(req);
}

/**
 * A POST: only `application/json` (a page in a browser cannot send that
 * without a CORS preflight, which is never granted), its body read within the
 * size cap and the shared budget, which it holds until it is answered.
 */
async function routePost(routes: Routes, req: Request): Promise<Response> {
  if (!isJsonContentType(req.headers.get("content-type"))) {
    return rpcError(415, RPC.unsupportedMediaType, "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json.");
  }
  const held = { bytes: 0 };
  try {
    const body = await readBody(req, MAX_BODY_BYTES, routes.budget, held);
    if ("refused" in body) {
      if (body.refused === "too_large") return rpcError(413, RPC.payloadTooLarge, `Payload Too Large: request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
      return rpcError(503, RPC.bodyBudget, `Service Unavailable: ${routes.budget.limit} bytes of request bodies are already in flight; retry shortly.`, { "Retry-After": "1" });
    }
    let msg: unknown;
    try {
      msg = JSON.parse(body.text);
    } catch {
      return rpcError(400, RPC.parseError, "Parse error: the body is not valid JSON.");
    }
    if (Array.isArray(msg)) return rpcError(400, RPC.invalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per request.");
    return await postMessage(routes, req, msg);
  } finally {
    routes.budget.give(held.bytes);
  }
}

/** Route a parsed POST: to its session, on its own (stateless, or no session and not initialize), or to a new session. */
async function postMessage(routes: Routes, req: Request, msg: unknown): Promise<Response> {
  const { sessions } = routes;
  const jsonOnly = !(req.headers.get("accept") ?? "").includes("text/event-stream");
  if (routes.opts.stateless) return sessions.answerOnItsOwn(msg);
  if (req.headers.get("mcp-session-id") !== null) {
    const entry = namedSession(routes, req);
    if (entry instanceof Response) return entry;
    return jsonOnly ? sessions.answerAsJson(entry, msg) : entry.transport.handleRequest(req, { parsedBody: msg });
  }
  // No session and not an initialize: answered on its own, like --stateless (plain JSON-RPC clients).
  if (!isObject(msg) || msg.method !== "initialize") return sessions.answerOnItsOwn(msg);
  return openSession(routes, req, msg, jsonOnly);
}

/** An initialize without a session id: a new session, within the server's and this client's caps. */
async function openSession(routes: Routes, req: Request, msg: Record<string, unknown>, jsonOnly: boolean): Promise<Response> {
  const { sessions } = routes;
  if (!sessions.accepting) return shuttingDown();
  if (sessions.open.size >= MAX_SESSIONS) {
    return rpcError(503, RPC.sessionLimit, `Service Unavailable: ${MAX_SESSIONS} sessions are open; close one (HTTP DELETE) and retry.`);
  }
  const client = routes.clientOf(req);
  if (sessions.countFor(client) >= routes.sessionsPerClient) {
    return rpcError(429, RPC.sessionLimit, `Too Many Requests: ${client} already has ${routes.sessionsPerClient} sessions open; close one (HTTP DELETE) and retry.`);
  }
  const entry = await sessions.create(client, jsonOnly);
  const res = await entry.transport.handleRequest(jsonOnly ? withFullAccept(req) : req, { parsedBody: withInitializeDefaults(msg) });
  // The transport refused the initialize (bad headers or params): no session came of it.
  if (entry.transport.sessionId === undefined) await entry.transport.close();
  return res;
}

/**
 * What `grex serve --http` runs: serve until SIGINT/SIGTERM, then stop
 * gracefully (in-flight calls drain); a second signal cancels them.
 */
export async function serveHttpUntilSignal(opts: HttpServeOptions): Promise<void> {
  const http = await serveHttp(opts);
  opts.log(`MCP over Streamable HTTP at ${http.url}${opts.token ? " (bearer token required)" : ""}; Ctrl-C to stop.`);
  await new Promise<void>((resolve) => {
    const onSignal = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  opts.log("stopping: finishing in-flight calls (signal again to cancel them).");
  const force = () => {
    opts.log("cancelling in-flight calls.");
    http.abort();
  };
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  try {
    await http.stop();
  } finally {
    process.off("SIGINT", force);
    process.off("SIGTERM", force);
  }
}
