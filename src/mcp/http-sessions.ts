// The sessions of `grex serve --http`: each client session (Mcp-Session-Id)
// is one SDK web-standard transport and one of our McpSessions; a plain JSON
// client's request is answered as one application/json body; a POST without a
// session (or any POST with --stateless) gets a fresh, already initialized
// session of its own. All of them share the server's scheduler.
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { json, rpcError } from "./http-guard.ts";
import { McpSession, PREFERRED_PROTOCOL_VERSION, type Id, type ServerOptions } from "./server.ts";
import { RPC } from "./wire/jsonrpc.ts";

type TransportClass = typeof WebStandardStreamableHTTPServerTransport;

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const isId = (v: unknown): v is Id => typeof v === "string" || typeof v === "number";
/** A request (has a method and an id) as opposed to a notification or a response. */
export const requestId = (msg: unknown): Id | undefined => (isObject(msg) && typeof msg.method === "string" && isId(msg.id) ? msg.id : undefined);
const isResponse = (m: object): m is { id: Id | null } => "id" in m && ("result" in m || "error" in m);

export interface Entry {
  transport: WebStandardStreamableHTTPServerTransport;
  session: McpSession;
  /** Who opened it: the remote address (the per-client cap counts these). */
  client: string;
  lastSeen: number;
  /** Request ids received and not yet answered: a session with any is never idle. */
  pending: Set<Id>;
  /** Requests answered as plain JSON (the client's Accept lacks text/event-stream): id → where the answer goes. */
  direct: Map<Id, (answer: object) => void>;
}

const shuttingDown = () => rpcError(503, RPC.httpRefused, "Service Unavailable: the server is shutting down.");

export class HttpSessions {
  /** Open sessions by Mcp-Session-Id. */
  readonly open = new Map<string, Entry>();
  /** Sessions of one POST each, while that POST is answered. */
  readonly oneShot = new Set<McpSession>();
  accepting = true;

  constructor(
    private readonly server: ServerOptions,
    private readonly Transport: TransportClass,
    private readonly debug: (m: string) => void,
  ) {}

  countFor(client: string): number {
    let n = 0;
    for (const e of this.open.values()) if (e.client === client) n++;
    return n;
  }

  /** A new session whose transport registers itself under its id once its initialize succeeds. */
  async create(client: string, jsonResponses: boolean): Promise<Entry> {
    const transport = new this.Transport({
      enableJsonResponse: jsonResponses,
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (sid) => {
        this.open.set(sid, entry);
        this.debug(`session ${sid} opened for ${client} (${this.open.size} open)`);
      },
    });
    const pending = new Set<Id>();
    const direct = new Map<Id, (answer: object) => void>();
    const session = new McpSession(this.server, (msg, related) => {
      if (isObject(msg) && isId(msg.id) && ("result" in msg || "error" in msg)) pending.delete(msg.id);
      if (related && direct.has(related.requestId)) {
        if (isResponse(msg) && msg.id === related.requestId) {
          direct.get(related.requestId)?.(msg);
          direct.delete(related.requestId);
        } else if (requestId(msg) !== undefined) {
          // A request to the client (elicitation) cannot travel in a plain JSON answer: refuse it at once.
          const message = "the client asked for a plain JSON answer (no text/event-stream), which cannot carry a request to it";
          const refusal = { jsonrpc: "2.0", id: requestId(msg), error: { code: RPC.clientUnreachable, message } };
          queueMicrotask(() => session.handleMessage(refusal));
        }
        return;
      }
      const options = related ? { relatedRequestId: related.requestId } : undefined;
      // A client that dropped its stream cannot get the answer: nothing to do but note it.
      transport.send(msg as JSONRPCMessage, options).catch((err: unknown) => this.debug(`undeliverable message: ${err instanceof Error ? err.message : String(err)}`));
    });
    const entry: Entry = { transport, session, client, lastSeen: Date.now(), pending, direct };
    transport.onmessage = (msg: unknown) => {
      entry.lastSeen = Date.now();
      const id = requestId(msg);
      if (id !== undefined) pending.add(id);
      session.handleMessage(msg);
    };
    transport.onclose = () => {
      const sid = transport.sessionId;
      if (sid !== undefined && this.open.get(sid) === entry) this.open.delete(sid);
      this.debug(`session ${sid ?? "(uninitialized)"} closed`);
      // Nobody is left to read answers: cancel what is still running.
      session.abortAll();
      void session.end();
    };
    // A `shutdown` request ends this client's session, never the whole server.
    void session.shutdownRequested.then(() => transport.close());
    await transport.start();
    return entry;
  }

  /**
   * Feed one message to a session and answer it as application/json: the
   * response to a request (progress notifications cannot travel in a JSON
   * answer and are dropped), 202 for a notification or a client response.
   */
  answerAsJson(entry: Entry, msg: unknown): Promise<Response> {
    const id = requestId(msg);
    if (id === undefined) {
      entry.session.handleMessage(msg);
      return Promise.resolve(new Response(null, { status: 202 }));
    }
    entry.pending.add(id);
    return new Promise((resolve) => {
      entry.direct.set(id, (answer) => resolve(json(200, answer)));
      entry.session.handleMessage(msg);
    });
  }

  /** One POST = one session, initialized unless it is the initialize itself, ended after its answer (--stateless, or no session id). */
  async answerOnItsOwn(msg: unknown): Promise<Response> {
    if (!this.accepting) return shuttingDown();
    let answered: ((m: object) => void) | undefined;
    const answer = new Promise<object>((r) => {
      answered = r;
    });
    const session = new McpSession(this.server, (m) => {
      if (isResponse(m)) answered?.(m);
    });
    this.oneShot.add(session);
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
      this.oneShot.delete(session);
    }
  }

  /** Close sessions idle for `idleMs` with nothing in flight (clients that never DELETE). */
  sweep(idleMs: number): void {
    const now = Date.now();
    for (const e of this.open.values()) if (e.pending.size === 0 && now - e.lastSeen > idleMs) void e.transport.close();
  }

  abortAll(): void {
    for (const e of this.open.values()) e.session.abortAll();
    for (const s of this.oneShot) s.abortAll();
  }

  /** Refuse new work, let in-flight calls finish (drain), then close every transport. */
  async stopAll(): Promise<void> {
    this.accepting = false;
    const open = [...this.open.values()];
    await Promise.all([...open.map((e) => e.session.end()), ...[...this.oneShot].map((s) => s.drain())]);
    await Promise.all(open.map((e) => e.transport.close()));
  }
}

export { shuttingDown };

/** Accept with both media types, for the SDK transport (which insists on them) once we chose to answer with JSON. */
export const withFullAccept = (req: Request): Request => {
  const headers = new Headers(req.headers);
  headers.set("accept", "application/json, text/event-stream");
  return new Request(req.url, { method: req.method, headers });
};

/**
 * An initialize without params (or without some of them) gets the defaults, so the
 * SDK transport, which insists on the full shape, opens a session for it.
 */
export function withInitializeDefaults(msg: Record<string, unknown>): Record<string, unknown> {
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
