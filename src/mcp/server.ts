// grex's MCP protocol core: JSON-RPC 2.0 framing checks, the MCP lifecycle,
// tools generated from the verb table, cancellation and progress. It is
// transport-independent (stdio and HTTP feed it messages) and deliberately
// does not load the MCP SDK runtime: the first reply must be fast.
import { CancelledError, GrexError, toGrexError } from "../core/errors.ts";
import type { Scheduler } from "../core/scheduler.ts";
import { makeContext } from "../verbs/context.ts";
import { MCP_TOOL_VERBS } from "../verbs/index.ts";
import { failureDocument, toJsonDocument } from "../verbs/serialize.ts";
import type { Progress } from "../verbs/types.ts";
import { confineFileParams, parseParams } from "../verbs/validate.ts";
import { toolList } from "./tools.ts";

export const PREFERRED_PROTOCOL_VERSION = "2025-06-18";
/** Versions the MCP SDK of this release speaks; a client asking for one of these gets it back. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];

export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  initState: -32002,
  cancelled: -32800,
} as const;

export interface ServerOptions {
  /** The workspace directory (fixed at launch). */
  cwd: string;
  manifest: string | undefined;
  scheduler: Scheduler;
  env: Record<string, string | undefined>;
  version: string;
  log(message: string): void;
}

type Id = string | number;
export type Send = (message: object, related?: { requestId: Id }) => void;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export class McpSession {
  private initialized = false;
  private readonly inflight = new Map<Id, AbortController>();
  private readonly running = new Set<Promise<void>>();
  private ended = false;
  private endResolve!: (how: "shutdown") => void;
  /** Resolves when a `shutdown` request has been answered. */
  readonly shutdownRequested: Promise<"shutdown">;

  constructor(
    private readonly opts: ServerOptions,
    private readonly send: Send,
  ) {
    this.shutdownRequested = new Promise((r) => {
      this.endResolve = r;
    });
  }

  /** One line of newline-delimited JSON-RPC. */
  handleLine(line: string): void {
    if (line.trim() === "") return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this.error(null, RPC.parseError, "Parse error: the line is not valid JSON");
      return;
    }
    this.handleMessage(msg);
  }

  handleMessage(msg: unknown): void {
    if (Array.isArray(msg)) {
      this.error(null, RPC.invalidRequest, "Invalid Request: batches are not supported");
      return;
    }
    if (!isObject(msg) || msg.jsonrpc !== "2.0") {
      this.error(this.idOf(msg), RPC.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 message");
      return;
    }
    const hasId = "id" in msg;
    if (typeof msg.method !== "string") {
      // A response from the client (we never send requests), or garbage.
      if (hasId && ("result" in msg || "error" in msg)) return;
      this.error(this.idOf(msg), RPC.invalidRequest, "Invalid Request: 'method' must be a string");
      return;
    }
    if (!hasId) {
      this.notification(msg.method, msg.params);
      return;
    }
    const id = msg.id;
    if (typeof id !== "string" && typeof id !== "number") {
      this.error(null, RPC.invalidRequest, "Invalid Request: 'id' must be a string or a number");
      return;
    }
    if ("params" in msg && msg.params !== undefined && !isObject(msg.params) && !Array.isArray(msg.params)) {
      this.error(id, RPC.invalidRequest, "Invalid Request: 'params' must be an object");
      return;
    }
    this.request(id, msg.method, isObject(msg.params) ? msg.params : {});
  }

  /** Wait for every in-flight call to finish. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Abort every in-flight call (transport closing hard). */
  abortAll(): void {
    for (const c of this.inflight.values()) c.abort();
  }

  private idOf(msg: unknown): Id | null {
    return isObject(msg) && (typeof msg.id === "string" || typeof msg.id === "number") ? msg.id : null;
  }

  private reply(id: Id, result: object): void {
    this.send({ jsonrpc: "2.0", id, result }, { requestId: id });
  }

  private error(id: Id | null, code: number, message: string, data?: object): void {
    const error = data === undefined ? { code, message } : { code, message, data };
    this.send({ jsonrpc: "2.0", id, error }, id === null ? undefined : { requestId: id });
  }

  private notification(method: string, params: unknown): void {
    if (method === "notifications/cancelled" && isObject(params)) {
      const id = params.requestId;
      if (typeof id === "string" || typeof id === "number") this.inflight.get(id)?.abort();
    }
    // notifications/initialized and unknown notifications need no reply.
  }

  private request(id: Id, method: string, params: Record<string, unknown>): void {
    if (this.ended) {
      this.error(id, RPC.invalidRequest, "The server is shutting down");
      return;
    }
    if (method === "initialize") return this.initialize(id, params);
    if (method === "ping") return this.reply(id, {});
    if (!this.initialized) {
      this.error(id, RPC.initState, "Server not initialized: send initialize first", { kind: "init_state" });
      return;
    }
    switch (method) {
      case "tools/list":
        this.track(id, async () => {
          this.reply(id, { tools: await toolList() });
        });
        return;
      case "tools/call":
        this.track(id, (signal) => this.callTool(id, params, signal));
        return;
      case "shutdown":
        this.ended = true;
        void this.drain().then(() => {
          this.reply(id, {});
          this.endResolve("shutdown");
        });
        return;
      default:
        this.error(id, RPC.methodNotFound, `Method not found: ${method}`);
    }
  }

  private initialize(id: Id, params: Record<string, unknown>): void {
    if (this.initialized) {
      this.error(id, RPC.initState, "Server already initialized", { kind: "init_state" });
      return;
    }
    const asked = params.protocolVersion;
    const protocolVersion =
      typeof asked === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : PREFERRED_PROTOCOL_VERSION;
    this.initialized = true;
    this.reply(id, {
      protocolVersion,
      serverInfo: { name: "grex", version: this.opts.version },
      capabilities: { tools: { listChanged: false } },
      instructions:
        "grex manages a workspace of git repositories (packs). Use ls/status/doctor to inspect (read-only), sync/update to bring packs up to date, add/rm/import to change the set of packs, run/exec to act across packs.",
    });
  }

  /** Run a request with its own AbortController; answer -32800 if it was cancelled. */
  private track(id: Id, work: (signal: AbortSignal) => Promise<void>): void {
    const controller = new AbortController();
    this.inflight.set(id, controller);
    const p = (async () => {
      try {
        await work(controller.signal);
      } catch (err) {
        if (controller.signal.aborted || err instanceof CancelledError) this.error(id, RPC.cancelled, "Request cancelled");
        else {
          this.opts.log(`internal error in request ${String(id)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
          this.error(id, RPC.internalError, `Internal error: ${err instanceof Error ? err.message : String(err)}`);
        }
      } finally {
        this.inflight.delete(id);
      }
    })();
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  private async callTool(id: Id, params: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    const name = params.name;
    const verb = MCP_TOOL_VERBS.find((v) => v.name === name);
    if (typeof name !== "string" || !verb) {
      this.error(id, RPC.methodNotFound, `Unknown tool: ${String(name)}`);
      return;
    }
    const args = params.arguments ?? {};
    const ctx = makeContext({
      cwd: this.opts.cwd,
      manifest: this.opts.manifest,
      scheduler: this.opts.scheduler,
      env: { ...this.opts.env },
      surface: "mcp",
      warn: (m) => this.opts.log(`warning: ${m}`),
      debug: () => {},
    });
    let typed: object;
    try {
      typed = parseParams(verb, args, "mcp");
      confineFileParams(verb, typed as Record<string, unknown>, ctx);
    } catch (err) {
      const e = toGrexError(err);
      this.error(id, RPC.invalidParams, e.message, { field: e.data?.field ?? null });
      return;
    }
    const meta = isObject(params._meta) ? params._meta : undefined;
    const token = meta && (typeof meta.progressToken === "string" || typeof meta.progressToken === "number") ? meta.progressToken : undefined;
    const progress: Progress =
      token === undefined
        ? () => {}
        : (done, total, message) =>
            this.send(
              { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: done, total, ...(message ? { message } : {}) } },
              { requestId: id },
            );
    let result: object;
    try {
      result = await verb.run(ctx, typed as never, signal, progress);
    } catch (err) {
      if (signal.aborted) throw new CancelledError();
      if (!(err instanceof GrexError)) throw err;
      if (err.kind === "cancelled") throw err;
      if (err.kind === "usage") {
        this.error(id, RPC.invalidParams, err.message, { field: err.data?.field ?? null });
        return;
      }
      this.toolResult(id, failureDocument(verb.name, err, "mcp"), true);
      return;
    }
    if (signal.aborted) throw new CancelledError();
    const failure = verb.failure?.(result, typed as never);
    if (failure) this.toolResult(id, failureDocument(verb.name, failure, "mcp", result), true);
    else this.toolResult(id, result, false);
  }

  private toolResult(id: Id, doc: object, isError: boolean): void {
    this.reply(id, { content: [{ type: "text", text: toJsonDocument(doc) }], structuredContent: doc, isError });
  }
}
