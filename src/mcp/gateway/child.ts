// One live connection to a child MCP server: JSON-RPC bookkeeping over a
// Channel. Answers are matched by id, so notifications that arrive before a
// response are handled as notifications; progress is routed by token; a
// cancelled call sends notifications/cancelled for the child's request id; a
// child that goes away fails every pending call with the exit status and the
// tail of its stderr.
import { CancelledError, runtimeWords } from "../../core/base/errors.ts";
import type { Channel, ExitInfo } from "./channel.ts";

export const CHILD_PROTOCOL_VERSION = "2025-06-18";

/** The child went away (exited, closed its pipe, or the HTTP connection failed). */
export class ChildGoneError extends Error {
  constructor(
    readonly server: string,
    readonly exit: ExitInfo | null,
    readonly stderrTail: string,
    reason?: string,
  ) {
    const status = reason ?? (exit === null ? "closed the connection" : exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`);
    const tail = stderrTail.split("\n").filter((l) => l.trim() !== "").slice(-3).join(" | ");
    super(`MCP server '${server}' ${status}${tail ? `; its stderr ended with: ${tail.slice(-400)}` : ""}`);
  }
}

/** A JSON-RPC error the child answered with. */
export class ChildRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }
}

interface Pending {
  resolve(result: Record<string, unknown>): void;
  reject(err: Error): void;
  progressToken?: string;
}

export interface RequestOptions {
  signal?: AbortSignal;
  onProgress?: (params: Record<string, unknown>) => void;
  /** Fails the request (not the child) when the child stays silent this long. */
  timeoutMs?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export class ChildConnection {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly progress = new Map<string, (params: Record<string, unknown>) => void>();
  private goneError: ChildGoneError | undefined;
  capabilities: Record<string, unknown> = {};
  /** Notifications the child sends that are not progress (tools/list_changed, logging). */
  onNotification?: (method: string, params: unknown) => void;
  /** Called once, synchronously, when the child goes: before any pending call learns of it. */
  onGone?: (err: ChildGoneError) => void;

  constructor(
    readonly server: string,
    private readonly channel: Channel,
  ) {
    channel.onmessage = (m) => this.receive(m);
    channel.onclose = (exit, reason) => this.closed(exit, reason);
  }

  get pid(): number | null {
    return this.channel.pid;
  }

  get isGone(): boolean {
    return this.goneError !== undefined;
  }

  get inflight(): number {
    return this.pending.size;
  }

  /** initialize + notifications/initialized. */
  async initialize(version: string, timeoutMs: number): Promise<void> {
    const result = await this.request(
      "initialize",
      { protocolVersion: CHILD_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "grex", version } },
      { timeoutMs },
    );
    this.capabilities = isObject(result.capabilities) ? result.capabilities : {};
    const negotiated = typeof result.protocolVersion === "string" ? result.protocolVersion : CHILD_PROTOCOL_VERSION;
    (this.channel as Partial<{ setProtocolVersion(v: string): void }>).setProtocolVersion?.(negotiated);
    await this.notify("notifications/initialized", {});
  }

  async notify(method: string, params: object): Promise<void> {
    await this.channel.send({ jsonrpc: "2.0", method, params }).catch(() => {});
  }

  request(method: string, params: Record<string, unknown>, opts: RequestOptions = {}): Promise<Record<string, unknown>> {
    if (this.goneError) return Promise.reject(this.goneError);
    if (opts.signal?.aborted) return Promise.reject(new CancelledError());
    const id = this.nextId++;
    let sendParams = params;
    let token: string | undefined;
    if (opts.onProgress) {
      token = `grex-${this.server}-${id}`;
      this.progress.set(token, opts.onProgress);
      const meta = isObject(params._meta) ? params._meta : {};
      sendParams = { ...params, _meta: { ...meta, progressToken: token } };
    }
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        void this.notify("notifications/cancelled", { requestId: id, reason: "cancelled by the client" });
        finish();
        reject(new CancelledError());
      };
      const finish = () => {
        this.pending.delete(id);
        if (token !== undefined) this.progress.delete(token);
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
      };
      this.pending.set(id, {
        resolve: (r) => {
          finish();
          resolve(r);
        },
        reject: (e) => {
          finish();
          reject(e);
        },
      });
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          finish();
          reject(new Error(`MCP server '${this.server}' did not answer ${method} within ${opts.timeoutMs} ms`));
        }, opts.timeoutMs);
      }
      this.channel.send({ jsonrpc: "2.0", id, method, params: sendParams }).catch((err: unknown) => {
        // A message that cannot be delivered means the connection is broken (a dead pipe, an HTTP
        // session the server dropped): fail everything pending and let the pool start afresh.
        if (!this.goneError) {
          this.closed(null, `cannot be reached (${runtimeWords(err instanceof Error ? err.message : String(err))})`);
          void this.channel.close(1000).catch(() => {});
        }
        this.pending.get(id)?.reject(this.goneError as ChildGoneError);
      });
    });
  }

  close(graceMs: number): Promise<void> {
    return this.channel.close(graceMs);
  }

  private receive(msg: unknown): void {
    if (!isObject(msg)) return;
    const method = msg.method;
    if (typeof method === "string") {
      if ("id" in msg && (typeof msg.id === "string" || typeof msg.id === "number")) {
        // The child asks us something (sampling, roots, elicitation): grex offers none of these.
        void this.channel.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `Method not found: ${method}.` } }).catch(() => {});
        return;
      }
      if (method === "notifications/progress" && isObject(msg.params) && typeof msg.params.progressToken === "string") {
        this.progress.get(msg.params.progressToken)?.(msg.params);
        return;
      }
      this.onNotification?.(method, msg.params);
      return;
    }
    if (typeof msg.id !== "number") return;
    const p = this.pending.get(msg.id);
    if (!p) return; // a late answer to a cancelled or timed-out request
    if (isObject(msg.error)) {
      const e = msg.error;
      p.reject(new ChildRpcError(typeof e.code === "number" ? e.code : -32603, typeof e.message === "string" ? e.message : "error", e.data));
    } else p.resolve(isObject(msg.result) ? msg.result : {});
  }

  private closed(exit: ExitInfo | null, reason?: string): void {
    if (this.goneError) return;
    const err = new ChildGoneError(this.server, exit, this.channel.stderrTail(), reason);
    this.goneError = err;
    this.onGone?.(err);
    for (const p of [...this.pending.values()]) p.reject(err);
  }
}
