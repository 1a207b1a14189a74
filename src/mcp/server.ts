// grex's MCP protocol core: JSON-RPC 2.0 envelope checks, the MCP lifecycle,
// tools generated from the verb table, cancellation and progress. It is
// transport-independent (stdio and HTTP feed it messages) and does not load
// the MCP SDK runtime. The verb table is loaded on the first tool request, so
// `initialize` can be answered before any verb module is evaluated.
import type { ActivitySink } from "../core/base/activity.ts";
import type { ActivityBoard } from "../verbs/activity-board.ts";
import { CancelledError, GrexError } from "../core/base/errors.ts";
import type { Scheduler } from "../core/locks/scheduler.ts";
import type { Outcome } from "../verbs/invoke.ts";
import type { Progress, VerbDef } from "../verbs/types.ts";
import { mapRustAliases } from "./aliases.ts";
import { ClientRequests } from "./client-requests.ts";
import type { GatewayPort } from "./gateway/types.ts";
import { normalJitPolicy } from "./jit.ts";
import { RPC, RpcError } from "./wire/jsonrpc.ts";

export { RPC, RpcError };

export const PREFERRED_PROTOCOL_VERSION = "2025-06-18";
/** The versions the bundled MCP SDK speaks (its SUPPORTED_PROTOCOL_VERSIONS): a client asking for one gets it back. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];


export interface ServerOptions {
  /** The directory tool calls run from: the workspace root (fixed for the server's life), or where `init` would create one. */
  cwd: string;
  manifest: string | undefined;
  /** One scheduler for the whole server: concurrent calls share its permits. */
  scheduler: Scheduler;
  env: Record<string, string | undefined>;
  version: string;
  /** Diagnostics (stderr): warnings and internal errors. */
  log(message: string): void;
  /** Verbose diagnostics at -v level `level`; dropped when absent. */
  debug?(level: number, message: string): void;
  /** The pack-declared MCP servers served next to grex's tools (src/mcp/gateway). */
  gateway?: GatewayPort;
  /** `--read-only`: only read-only tools are listed and callable. */
  readOnly?: boolean;
}

export type Id = string | number;
/** Hands one outgoing message to the transport; `related` names the request it belongs to (HTTP routes by it). */
export type Send = (message: object, related?: { requestId: Id }) => void;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const isId = (v: unknown): v is Id => typeof v === "string" || typeof v === "number";

/** The verb machinery, loaded once on first use (keeps `initialize` cheap). */
async function loadRuntime() {
  const [index, context, invoke, serialize, tools, validate, words] = await Promise.all([
    import("../verbs/index.ts"),
    import("../verbs/context.ts"),
    import("../verbs/invoke.ts"),
    import("../verbs/serialize.ts"),
    import("./tools.ts"),
    import("../verbs/validate.ts"),
    import("./tool-words.ts"),
  ]);
  return {
    tools: index.MCP_TOOL_VERBS,
    parseParams: validate.parseParams,
    confineFileParams: validate.confineFileParams,
    inToolWords: words.inToolWords,
    makeContext: context.makeContext,
    invoke: invoke.invoke,
    toJsonDocument: serialize.toJsonDocument,
    toolList: tools.toolList,
  };
}
type Runtime = Awaited<ReturnType<typeof loadRuntime>>;
let runtime: Promise<Runtime> | undefined;
const getRuntime = (): Promise<Runtime> => (runtime ??= loadRuntime());


const invalidParams = (err: GrexError, words: (text: string) => string = (t) => t) =>
  new RpcError(RPC.invalidParams, words(err.message), { kind: "usage", field: err.data?.field ?? null });

/** One MCP client session: feed it messages, it answers through `send`. */
export class McpSession {
  private initialized = false;
  private ending = false;
  private readonly inflight = new Map<Id, AbortController>();
  /** In-flight calls to pack-declared servers: cancelled at EOF (a child may never answer). */
  private readonly childCalls = new Set<Id>();
  private readonly running = new Set<Promise<void>>();
  private clientCapabilities: Record<string, unknown> = {};
  /** Requests we sent the client (elicitation). */
  private readonly outgoing = new ClientRequests();
  private unsubscribe: (() => void) | undefined;
  private resolveClosed!: (how: "eof" | "shutdown") => void;
  /** Resolves once the session is over: a `shutdown` was answered, or `end()` drained after EOF. */
  readonly closed: Promise<"eof" | "shutdown">;
  /** Resolves when a `shutdown` request has been answered (the transport then stops). */
  readonly shutdownRequested: Promise<"shutdown">;

  constructor(
    private readonly opts: ServerOptions,
    private readonly send: Send,
  ) {
    this.closed = new Promise((r) => {
      this.resolveClosed = r;
    });
    this.shutdownRequested = this.closed.then((how) => (how === "shutdown" ? how : new Promise<never>(() => {})));
  }

  /** One line of newline-delimited JSON-RPC (no trailing newline). */
  handleLine(line: string): void {
    if (line.trim() === "") return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this.error(null, RPC.parseError, "Parse error: the message is not valid JSON.");
      return;
    }
    this.handleMessage(msg);
  }

  /** One already-parsed message. */
  handleMessage(msg: unknown): void {
    if (Array.isArray(msg)) {
      this.error(null, RPC.invalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per line.");
      return;
    }
    if (!isObject(msg) || msg.jsonrpc !== "2.0") {
      this.error(this.idOf(msg), RPC.invalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message (needs "jsonrpc": "2.0").');
      return;
    }
    if (typeof msg.method !== "string") {
      // A response from the client to one of our requests (elicitation).
      if (isId(msg.id) && ("result" in msg || "error" in msg)) {
        this.outgoing.answered(msg.id, msg);
        return;
      }
      this.error(this.idOf(msg), RPC.invalidRequest, 'Invalid Request: "method" must be a string.');
      return;
    }
    if (!("id" in msg)) {
      this.notification(msg.method, msg.params);
      return;
    }
    const id = msg.id;
    if (!isId(id)) {
      this.error(null, RPC.invalidRequest, 'Invalid Request: "id" must be a string or a number.');
      return;
    }
    if (msg.params !== undefined && !isObject(msg.params)) {
      this.error(id, RPC.invalidParams, 'Invalid params: "params" must be an object.');
      return;
    }
    this.request(id, msg.method, msg.params ?? {});
  }

  /** A stateless HTTP request: the session is used for one message and needs no initialize handshake. */
  assumeInitialized(): void {
    this.initialized = true;
  }

  /** Resolves when every in-flight request has been answered. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** The client is gone or the input ended (EOF): refuse new requests, let in-flight ones finish, then close. */
  async end(): Promise<void> {
    this.ending = true;
    // Nobody waits on a child that may never answer: its calls are cancelled, grex's own calls finish.
    for (const id of this.childCalls) this.inflight.get(id)?.abort();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.drain();
    this.resolveClosed("eof");
  }

  /** Abort every in-flight call (the transport is closing hard, e.g. on a signal). */
  abortAll(): void {
    for (const c of this.inflight.values()) c.abort();
  }

  private idOf(msg: unknown): Id | null {
    return isObject(msg) && isId(msg.id) ? msg.id : null;
  }

  private reply(id: Id, result: object): void {
    this.send({ jsonrpc: "2.0", id, result }, { requestId: id });
  }

  private error(id: Id | null, code: number, message: string, data?: object): void {
    const error = data === undefined ? { code, message } : { code, message, data };
    this.send({ jsonrpc: "2.0", id, error }, id === null ? undefined : { requestId: id });
  }

  private notification(method: string, params: unknown): void {
    if (method === "notifications/cancelled" && isObject(params) && isId(params.requestId)) {
      this.inflight.get(params.requestId)?.abort();
    }
    // notifications/initialized and unknown notifications: never answered.
  }

  private request(id: Id, method: string, params: Record<string, unknown>): void {
    if (this.ending) {
      this.error(id, RPC.invalidRequest, "Invalid Request: the server is shutting down.");
      return;
    }
    if (this.inflight.has(id)) {
      this.error(id, RPC.invalidRequest, `Invalid Request: request id ${JSON.stringify(id)} is already in flight.`);
      return;
    }
    if (method === "initialize") return this.initialize(id, params);
    if (method === "ping") return this.reply(id, {});
    if (!this.initialized) {
      this.error(id, RPC.initState, "Server not initialized: send initialize first.", { kind: "init_state" });
      return;
    }
    switch (method) {
      case "tools/list":
        this.track(id, async () => {
          const rt = await getRuntime();
          const readOnly = this.opts.readOnly === true;
          const own = (await rt.toolList()).filter((t) => !readOnly || t.annotations.readOnlyHint);
          const children = this.opts.gateway ? await this.opts.gateway.listTools(readOnly) : [];
          this.reply(id, { tools: [...own, ...children] });
        });
        return;
      case "tools/call":
        this.track(id, (signal) => this.callTool(id, params, signal));
        return;
      case "shutdown":
        this.ending = true;
        void this.drain().then(() => {
          this.reply(id, {});
          this.resolveClosed("shutdown");
        });
        return;
      default:
        this.error(id, RPC.methodNotFound, `Method not found: ${method}.`);
    }
  }

  private initialize(id: Id, params: Record<string, unknown>): void {
    if (this.initialized) {
      this.error(id, RPC.initState, "Server already initialized: initialize may be sent once per session.", { kind: "init_state" });
      return;
    }
    // A plain JSON-RPC client may send initialize without params: it gets the defaults.
    const asked = params.protocolVersion ?? PREFERRED_PROTOCOL_VERSION;
    if (typeof asked !== "string") {
      this.error(id, RPC.invalidParams, 'Invalid params: "protocolVersion" must be a string such as "2025-06-18".', { field: "protocolVersion" });
      return;
    }
    this.initialized = true;
    this.clientCapabilities = isObject(params.capabilities) ? params.capabilities : {};
    const gateway = this.opts.gateway;
    if (gateway) this.unsubscribe = gateway.subscribe(() => this.send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }));
    this.reply(id, {
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : PREFERRED_PROTOCOL_VERSION,
      serverInfo: { name: "grex", version: this.opts.version },
      capabilities: { tools: { listChanged: gateway !== undefined } },
      instructions:
        "grex manages one workspace of git repositories (packs). Inspect with ls, status and doctor (read-only); bring packs up to date with sync and update; change the set of packs with add, rm and import; act across packs with run and exec.",
    });
    normalJitPolicy(); // the reply is out: from here on this process serves
  }

  /** Run a request under its own AbortController; answer -32800 if it was cancelled. */
  private track(id: Id, work: (signal: AbortSignal) => Promise<void>): void {
    const controller = new AbortController();
    this.inflight.set(id, controller);
    const p = (async () => {
      try {
        await work(controller.signal);
      } catch (err) {
        if (controller.signal.aborted || err instanceof CancelledError) this.error(id, RPC.cancelled, "Request cancelled.");
        else if (err instanceof RpcError) this.error(id, err.code, err.message, err.data);
        else {
          this.opts.log(`internal error in request ${JSON.stringify(id)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
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
    const rt = await getRuntime();
    const name = params.name;
    if (typeof name !== "string") throw new RpcError(RPC.invalidParams, 'Invalid params: tools/call needs "name" (a string).', { field: "name" });
    const verb: VerbDef | undefined = rt.tools.find((v) => v.name === name);
    if (!verb) {
      this.childCalls.add(id);
      try {
        return await this.callChildTool(id, name, params, signal);
      } finally {
        this.childCalls.delete(id);
      }
    }
    if (this.opts.readOnly && !verb.readOnly) {
      throw new RpcError(RPC.methodNotFound, `Tool ${name} is not available: grex serve runs with --read-only and ${name} changes the workspace.`, { tool: name });
    }
    const { log, debug } = this.opts;
    const ctx = rt.makeContext({
      cwd: this.opts.cwd,
      manifest: this.opts.manifest,
      scheduler: this.opts.scheduler,
      env: this.opts.env,
      surface: "mcp",
      warn: (m) => log(`warning: ${m}`),
      debug: (level, m) => debug?.(level, m),
    });
    const words = (text: string) => rt.inToolWords(text, rt.tools);
    // Protocol faults first (JSON-RPC -32602): arguments the schema refuses, a file argument
    // outside the workspace. Anything that goes wrong with valid arguments is a tool result.
    let args: unknown;
    try {
      args = mapRustAliases(verb, params.arguments, ctx.cwd);
      const parsed = rt.parseParams(verb, args, "mcp");
      if (verb.fileParams) {
        let inWorkspace = true;
        try {
          ctx.workspace();
        } catch {
          inWorkspace = false; // no workspace: the verb itself reports that, as a tool result
        }
        if (inWorkspace) rt.confineFileParams(verb, parsed, ctx);
      }
    } catch (err) {
      if (err instanceof GrexError && err.kind === "usage") throw invalidParams(err, words);
      throw err;
    }
    let finished = false;
    // The board that turns git work in flight into progress text loads only for a call that asked for progress.
    const wantsProgress = isObject(params._meta) && isId(params._meta.progressToken);
    const board = wantsProgress ? new (await import("../verbs/activity-board.ts")).ActivityBoard() : null;
    const { progress, activity } = this.progressFor(id, params._meta, () => finished, board);
    let outcome: Outcome;
    try {
      const call = () => rt.invoke(verb, args, { surface: "mcp", ctx, signal, progress });
      outcome = activity ? await (await import("../core/base/activity.ts")).withActivitySink(activity, call) : await call();
    } finally {
      finished = true;
      if (!verb.readOnly) this.opts.gateway?.afterWrite();
    }
    if (outcome.ok) return this.toolResult(id, outcome.document, false, rt.toJsonDocument);
    // The model reads the first text: the message, in tool words; the JSON document follows.
    const doc = outcome.document as Record<string, unknown> & { error: Record<string, unknown> };
    const message = words(outcome.error.message);
    const failed = { ...doc, error: { ...doc.error, message } };
    this.reply(id, { content: [{ type: "text", text: message }, { type: "text", text: rt.toJsonDocument(failed) }], structuredContent: failed, isError: true });
  }

  /** A tool of a pack-declared server, routed through the gateway. */
  private async callChildTool(id: Id, name: string, params: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    const meta = params._meta;
    const token = isObject(meta) && isId(meta.progressToken) ? meta.progressToken : undefined;
    const elicits = isObject(this.clientCapabilities.elicitation);
    const result = await this.opts.gateway?.call(name, params.arguments, {
      signal,
      progressToken: token,
      sendProgress: (p) => this.send({ jsonrpc: "2.0", method: "notifications/progress", params: p }, { requestId: id }),
      elicit: elicits ? (p) => this.outgoing.request(this.send, "elicitation/create", p, id, signal) : undefined,
      readOnly: this.opts.readOnly === true,
    });
    if (!result) throw new RpcError(RPC.methodNotFound, `Unknown tool: ${name}; tools/list shows the tools.`, { tool: name });
    if (signal.aborted) throw new CancelledError();
    this.reply(id, result);
  }

  /**
   * notifications/progress for a call that carries `_meta.progressToken`; a
   * no-op otherwise, and after the call ended. Between two packs done, the
   * work in flight (objects, deltas, files: core/base/activity.ts) moves the
   * value on by fractions, never to the next whole pack, at most 4 times a second.
   */
  private progressFor(id: Id, meta: unknown, finished: () => boolean, board: ActivityBoard | null): { progress: Progress; activity: ActivitySink | null } {
    const token = isObject(meta) && isId(meta.progressToken) ? meta.progressToken : undefined;
    if (token === undefined || board === null) return { progress: () => {}, activity: null };
    let last = -Infinity;
    const send = (progress: number, total: number, message?: string) => {
      if (finished() || progress <= last) return; // MCP: progress must increase
      last = progress;
      const params = message ? { progressToken: token, progress, total, message } : { progressToken: token, progress, total };
      this.send({ jsonrpc: "2.0", method: "notifications/progress", params }, { requestId: id });
    };
    let packs = { done: 0, total: 0, message: undefined as string | undefined };
    let sentAt = 0;
    const progress: Progress = (done, total, message) => {
      packs = { done, total, message };
      send(done, total, message);
    };
    const activity: ActivitySink = (subject, report) => {
      const now = Date.now();
      // At once when a phase starts (or its count becomes known), else at most four times a second.
      const fresh = board.update(subject, report, now);
      if (report === null || board.size === 0 || (!fresh && now - sentAt < 250)) return;
      sentAt = now;
      const work = board.text();
      // Nudged past the last value sent (a phase's start adds no fraction yet), and never up to the next whole pack.
      const value = Math.max(packs.done + board.fraction(), last + 0.001);
      if (value >= packs.done + 0.999) return;
      send(value, Math.max(packs.total, packs.done + 1), packs.message ? `${packs.message}: ${work}` : work);
    };
    return { progress, activity };
  }

  private toolResult(id: Id, doc: object, isError: boolean, toJson: (doc: object) => string): void {
    this.reply(id, { content: [{ type: "text", text: toJson(doc) }], structuredContent: doc, isError });
  }
}
