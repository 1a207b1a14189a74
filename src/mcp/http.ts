// `grex serve --http`: MCP Streamable HTTP at /mcp on Bun.serve. Each client
// session (Mcp-Session-Id) gets one SDK web-standard transport and one of our
// McpSessions; all sessions share the server's scheduler. In front of the
// transport: Host/Origin checks (DNS rebinding), the bearer token, a body cap.
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { GrexError, usageError } from "../core/base/errors.ts";
import { isLoopbackHost, json, makeAuth, makeHostGuard, parseAddr, rpcError, unauthorized } from "./http-guard.ts";
import { normalJitPolicy } from "./jit.ts";
import { McpSession, PREFERRED_PROTOCOL_VERSION, type Id, type ServerOptions } from "./server.ts";

export { isLoopbackHost, parseAddr } from "./http-guard.ts";

/** Request bodies larger than this are answered 413 without being read further. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
export const MCP_PATH = "/mcp";
export const DEFAULT_PORT = 8080;
/** Sessions kept at once; a new initialize beyond this is answered 503. */
const MAX_SESSIONS = 256;
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
}

/** The body as text, or "too large" once it passes `max` bytes (declared or streamed). */
async function readBody(req: Request, max: number): Promise<{ text: string } | { tooLarge: true }> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > max) return { tooLarge: true };
  if (req.body === null) return { text: "" };
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
        return { tooLarge: true };
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return { text: Buffer.concat(chunks, size).toString("utf8") };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

interface Entry {
  transport: WebStandardStreamableHTTPServerTransport;
  session: McpSession;
  lastSeen: number;
  /** Request ids received and not yet answered: a session with any is never idle. */
  pending: Set<Id>;
  /** Requests answered as plain JSON (the client's Accept lacks text/event-stream): id → where the answer goes. */
  direct: Map<Id, (answer: object) => void>;
}

const isResponse = (m: object): m is { id: Id | null } => "id" in m && ("result" in m || "error" in m);

/** Accept with both media types, for the SDK transport (which insists on them) once we chose to answer with JSON. */
const withFullAccept = (req: Request): Request => {
  const headers = new Headers(req.headers);
  headers.set("accept", "application/json, text/event-stream");
  return new Request(req.url, { method: req.method, headers });
};

/**
 * Feed one message to a session and answer it as application/json: the
 * response to a request (progress notifications cannot travel in a JSON
 * answer and are dropped), 202 for a notification or a client response.
 */
function answerAsJson(session: McpSession, direct: Map<Id, (answer: object) => void>, msg: unknown): Promise<Response> {
  const id = isObject(msg) && typeof msg.method === "string" && (typeof msg.id === "string" || typeof msg.id === "number") ? msg.id : undefined;
  if (id === undefined) {
    session.handleMessage(msg);
    return Promise.resolve(new Response(null, { status: 202 }));
  }
  return new Promise((resolve) => {
    direct.set(id, (answer) => resolve(json(200, answer)));
    session.handleMessage(msg);
  });
}

/**
 * An initialize without params (or without some of them) gets the defaults, so the
 * SDK transport, which insists on the full shape, opens a session for it.
 */
function withInitializeDefaults(msg: Record<string, unknown>): Record<string, unknown> {
  const params = isObject(msg.params) ? msg.params : {};
  return {
    ...msg,
    params: {
      ...params,
      protocolVersion: params.protocolVersion ?? PREFERRED_PROTOCOL_VERSION,
      capabilities: isObject(params.capabilities) ? params.capabilities : {},
      clientInfo: isObject(params.clientInfo) ? params.clientInfo : { name: "unknown", version: "0" },
    },
  };
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
  const debug = (m: string) => opts.server.debug?.(1, `http: ${m}`);
  const sessions = new Map<string, Entry>();
  const stateless = new Set<McpSession>();
  let accepting = true;
  let boundPort = wantedPort;
  const hostGuard = makeHostGuard(hostname, () => boundPort, loopback);
  const authorized = makeAuth(token);

  async function newSession(jsonResponses = false): Promise<Entry> {
    const transport = new Transport({
      enableJsonResponse: jsonResponses,
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sid) => {
        sessions.set(sid, entry);
        debug(`session ${sid} opened (${sessions.size} open)`);
      },
    });
    const pending = new Set<Id>();
    const direct = new Map<Id, (answer: object) => void>();
    const session = new McpSession(opts.server, (msg, related) => {
      if (isObject(msg) && (typeof msg.id === "string" || typeof msg.id === "number") && ("result" in msg || "error" in msg)) pending.delete(msg.id);
      if (related && direct.has(related.requestId)) {
        if (isResponse(msg) && msg.id === related.requestId) {
          direct.get(related.requestId)?.(msg);
          direct.delete(related.requestId);
        } else if (isObject(msg) && typeof msg.method === "string" && (typeof msg.id === "string" || typeof msg.id === "number")) {
          // A request to the client (elicitation) cannot travel in a plain JSON answer: refuse it at once.
          const refusal = { jsonrpc: "2.0", id: msg.id, error: { code: -32000, message: "the client asked for a plain JSON answer (no text/event-stream), which cannot carry a request to it" } };
          queueMicrotask(() => session.handleMessage(refusal));
        }
        return;
      }
      const options = related ? { relatedRequestId: related.requestId } : undefined;
      // A client that dropped its stream cannot get the answer: nothing to do but note it.
      transport.send(msg as JSONRPCMessage, options).catch((err: unknown) => debug(`undeliverable message: ${err instanceof Error ? err.message : String(err)}`));
    });
    const entry: Entry = { transport, session, lastSeen: Date.now(), pending, direct };
    transport.onmessage = (msg: unknown) => {
      entry.lastSeen = Date.now();
      if (isObject(msg) && typeof msg.method === "string" && (typeof msg.id === "string" || typeof msg.id === "number")) pending.add(msg.id);
      session.handleMessage(msg);
    };
    transport.onclose = () => {
      const sid = transport.sessionId;
      if (sid !== undefined && sessions.get(sid) === entry) sessions.delete(sid);
      debug(`session ${sid ?? "(uninitialized)"} closed`);
      // Nobody is left to read answers: cancel what is still running.
      session.abortAll();
      void session.end();
    };
    // A `shutdown` request ends this client's session, never the whole server.
    void session.shutdownRequested.then(() => transport.close());
    await transport.start();
    return entry;
  }

  /** --stateless: one POST = one session, initialized unless it is the initialize itself, ended after its answer. */
  async function answerStateless(msg: unknown): Promise<Response> {
    if (!accepting) return rpcError(503, -32000, "Service Unavailable: the server is shutting down.");
    let answered: ((m: object) => void) | undefined;
    const answer = new Promise<object>((r) => {
      answered = r;
    });
    const session = new McpSession(opts.server, (m) => {
      if (isResponse(m)) answered?.(m);
    });
    stateless.add(session);
    try {
      if (!(isObject(msg) && msg.method === "initialize")) session.assumeInitialized();
      const isRequest = isObject(msg) && typeof msg.method === "string" && "id" in msg;
      session.handleMessage(msg);
      if (!isRequest) {
        // A notification or a client response: nothing comes back unless the message itself was invalid (answered at once).
        const quick = await Promise.race([answer, Promise.resolve(undefined)]);
        return quick === undefined ? new Response(null, { status: 202 }) : json(400, quick);
      }
      return json(200, await answer);
    } finally {
      await session.end();
      stateless.delete(session);
    }
  }

  async function handle(req: Request): Promise<Response> {
    const blocked = hostGuard(req);
    if (blocked) return blocked;
    const path = new URL(req.url).pathname;
    // /mcp is the documented endpoint; plain JSON-RPC clients often POST to the root.
    if (path !== MCP_PATH && path !== "/") return rpcError(404, -32000, `Not Found: the MCP endpoint is ${MCP_PATH}.`);
    if (!authorized(req)) return unauthorized();
    const sid = req.headers.get("mcp-session-id");
    const existing = () => {
      if (sid === null) return rpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required; send initialize first.");
      const entry = sessions.get(sid);
      if (!entry) return rpcError(404, -32001, "Session not found");
      entry.lastSeen = Date.now();
      return entry;
    };
    if (opts.stateless && req.method !== "POST") {
      return rpcError(405, -32000, "Method Not Allowed: this server is stateless (--stateless); send each message as a POST.", { Allow: "POST" });
    }
    if (req.method === "GET" || req.method === "DELETE") {
      const entry = existing();
      return entry instanceof Response ? entry : entry.transport.handleRequest(req);
    }
    if (req.method !== "POST") {
      return rpcError(405, -32000, "Method Not Allowed: use POST, GET or DELETE.", { Allow: "GET, POST, DELETE" });
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if ("tooLarge" in body) return rpcError(413, -32000, `Payload Too Large: request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
    let msg: unknown;
    try {
      msg = JSON.parse(body.text);
    } catch {
      return rpcError(400, -32700, "Parse error: the body is not valid JSON.");
    }
    if (Array.isArray(msg)) return rpcError(400, -32600, "Invalid Request: JSON-RPC batches are not supported; send one message per request.");
    const jsonOnly = !(req.headers.get("accept") ?? "").includes("text/event-stream");
    if (opts.stateless) return answerStateless(msg);
    if (sid !== null) {
      const entry = existing();
      if (entry instanceof Response) return entry;
      if (!jsonOnly) return entry.transport.handleRequest(req, { parsedBody: msg });
      if (isObject(msg) && (typeof msg.id === "string" || typeof msg.id === "number") && typeof msg.method === "string") entry.pending.add(msg.id);
      return answerAsJson(entry.session, entry.direct, msg);
    }
    // No session and not an initialize: answered on its own, like --stateless (plain JSON-RPC clients).
    if (!isObject(msg) || msg.method !== "initialize") return answerStateless(msg);
    if (!accepting) return rpcError(503, -32000, "Service Unavailable: the server is shutting down.");
    if (sessions.size >= MAX_SESSIONS) return rpcError(503, -32000, `Service Unavailable: ${MAX_SESSIONS} sessions are open; close one (HTTP DELETE) and retry.`);
    const entry = await newSession(jsonOnly);
    const res = await entry.transport.handleRequest(jsonOnly ? withFullAccept(req) : req, { parsedBody: withInitializeDefaults(msg) });
    // The transport refused the initialize (bad headers or params): no session came of it.
    if (entry.transport.sessionId === undefined) await entry.transport.close();
    return res;
  }

  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      hostname,
      port: wantedPort,
      // SSE streams are kept alive by the transport's 15 s comments.
      idleTimeout: 60,
      // Backstop only: handle() answers 413 itself with a JSON-RPC body.
      maxRequestBodySize: MAX_BODY_BYTES * 2,
      fetch: (req) =>
        handle(req).catch((err: unknown) => {
          opts.log(`internal error handling ${req.method} ${new URL(req.url).pathname}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
          return rpcError(500, -32603, "Internal error.");
        }),
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new GrexError("generic", `Cannot listen on ${opts.addr} (${why.replace(/\.$/, "")}); pick another address with --http host:port.`);
  }
  boundPort = server.port ?? wantedPort;
  normalJitPolicy(); // listening: from here on this process serves
  const urlHost = hostname.includes(":") ? `[${hostname}]` : hostname;

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const e of sessions.values()) {
      if (e.pending.size === 0 && now - e.lastSeen > IDLE_SESSION_MS) void e.transport.close();
    }
  }, SWEEP_MS);
  sweep.unref();

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${boundPort}${MCP_PATH}`,
    sessionCount: () => sessions.size,
    abort() {
      for (const e of sessions.values()) e.session.abortAll();
      for (const s of stateless) s.abortAll();
    },
    stop() {
      stopping ??= (async () => {
        accepting = false;
        clearInterval(sweep);
        // Stop listening; open connections stay so in-flight answers reach their clients.
        const closed = server.stop(false);
        const open = [...sessions.values()];
        // end(): new requests are refused, in-flight ones finish (drain).
        await Promise.all([...open.map((e) => e.session.end()), ...[...stateless].map((s) => s.drain())]);
        await Promise.all(open.map((e) => e.transport.close()));
        await Promise.race([closed, new Promise<void>((r) => setTimeout(r, FLUSH_MS).unref())]);
        await server.stop(true);
      })();
      return stopping;
    },
  };
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
