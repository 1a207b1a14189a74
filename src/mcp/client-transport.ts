// The client side's transport wrapper and its small helpers: TrackedTransport
// records what client.ts reports (negotiated version, the spawned server's pid,
// whether it went away) and makes close() idempotent and bounded.
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { normaliseCallResult, normaliseTool } from "./gateway/normalise.ts";

/** The protocol version the SDK client asks for (its LATEST_PROTOCOL_VERSION), assumed when a server names none. */
export const LATEST_ASKED_VERSION = "2025-11-25";

/** Bytes of the spawned server's stderr kept for error messages. */
const STDERR_TAIL = 4096;
/** How long a polite session DELETE may take before we just drop the connection. */
const CLOSE_GRACE_MS = 1000;
/** How long a failed server gets to exit on SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 500;

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Wraps the SDK transport: records the negotiated protocol version, the spawned
 * server's pid and whether it has gone away, and makes close() idempotent.
 */
export class TrackedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  protocolVersion: string | undefined;
  kind: "http" | "sse" | "stdio" = "stdio";
  /** The server's initialize result named no protocolVersion (grex assumed the one it asked for). */
  versionMissing = false;
  closed = false;
  /** Methods of our requests in flight, by id: their answers may need normalising. */
  private readonly asked = new Map<string | number, string>();
  private pid: number | null = null;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly inner: Transport & { pid?: number | null; setProtocolVersion?(v: string): void },
    private readonly terminate?: () => Promise<void>,
  ) {
    inner.onmessage = (m) => this.onmessage?.(this.tolerate(m));
    inner.onerror = (e) => this.onerror?.(e);
    inner.onclose = () => {
      this.closed = true;
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  async start(): Promise<void> {
    await this.inner.start();
    this.pid = this.inner.pid ?? null;
  }

  send(message: JSONRPCMessage, options?: Parameters<Transport["send"]>[1]): Promise<void> {
    if ("method" in message && "id" in message && (message.method === "initialize" || message.method === "tools/list" || message.method === "tools/call")) this.asked.set(message.id, message.method);
    return this.inner.send(message, options);
  }

  /**
   * Accept what the gateway accepts: an initialize result without protocolVersion
   * (or capabilities, serverInfo) gets the defaults, and tools/list entries are
   * normalised (a missing inputSchema, `input_schema`) or dropped (invalid names)
   * before the SDK's strict validation sees them.
   */
  private tolerate(m: JSONRPCMessage): JSONRPCMessage {
    if (!("id" in m) || !("result" in m) || !isObject(m.result)) return m;
    const method = this.asked.get(m.id);
    if (method === undefined) return m;
    this.asked.delete(m.id);
    const r: Record<string, unknown> = { ...m.result };
    if (method === "initialize") {
      if (typeof r.protocolVersion !== "string") {
        this.versionMissing = true;
        r.protocolVersion = LATEST_ASKED_VERSION;
      }
      if (!isObject(r.capabilities)) r.capabilities = {};
      if (!isObject(r.serverInfo)) r.serverInfo = { name: "", version: "" };
    } else if (method === "tools/call") {
      return { ...m, result: normaliseCallResult(r) } as JSONRPCMessage;
    } else if (Array.isArray(r.tools)) {
      const tools: Record<string, unknown>[] = [];
      for (const raw of r.tools) {
        const n = normaliseTool(raw);
        if ("tool" in n) tools.push(n.tool);
        else this.dropped.push(n.dropped);
      }
      r.tools = tools;
    }
    return { ...m, result: r } as JSONRPCMessage;
  }

  /** tools/list entries left out (see tolerate). */
  readonly dropped: string[] = [];

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
    this.inner.setProtocolVersion?.(version);
  }

  /** Stop a spawned server now (it failed us; no point waiting for it to notice EOF): SIGTERM, then SIGKILL after a grace. */
  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid === null || this.closed) return;
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    };
    signal("SIGTERM");
    for (let waited = 0; waited < KILL_GRACE_MS && !this.closed; waited += 25) await sleep(25);
    if (!this.closed) signal("SIGKILL");
  }

  /** Close once: end the HTTP session politely (bounded), or end stdin and reap the child (the SDK escalates to SIGKILL). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.terminate && !this.closed) {
        await Promise.race([this.terminate().catch(() => {}), sleep(CLOSE_GRACE_MS, false)]);
      }
      await this.inner.close();
    })();
    return this.closing;
  }
}

/** `keepAlive: false` for a timer that only bounds another wait and must not hold the process open by itself. */
const sleep = (ms: number, keepAlive = true) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    if (!keepAlive) (t as { unref?: () => void }).unref?.();
  });

/** The last non-empty line of the server's stderr, for error messages. */
export class StderrTail {
  private text = "";
  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-STDERR_TAIL);
  }
  lastLine(): string | undefined {
    const lines = this.text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    const last = lines.at(-1);
    return last === undefined ? undefined : last.length > 200 ? `${last.slice(0, 200)}…` : last;
  }
}
