// MCP test plumbing: an SDK Transport wired straight into our McpSession (in
// process, no framing), and a spawned `grex serve` driven line by line.
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import pkg from "../../package.json" with { type: "json" };
import { PermitScheduler } from "../../src/core/locks/scheduler.ts";
import { McpSession, type ServerOptions } from "../../src/mcp/server.ts";
import { GREX_MAIN } from "./workspace.ts";

/** Entry points that start `grex serve`: the full CLI, and the argv fast path on its own. */
export const SERVE_ENTRIES = {
  cli: GREX_MAIN,
  fast: new URL("./serve-fast.ts", import.meta.url).pathname,
} as const;
export type ServeEntry = keyof typeof SERVE_ENTRIES;

export const INIT_PARAMS = {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "grex-test", version: "1" },
};

/** Server options for an in-process session in `cwd`; `logs` collects what would go to stderr. */
export function serverOptions(cwd: string, env: Record<string, string | undefined>, logs: string[] = []): ServerOptions {
  return {
    cwd,
    manifest: undefined,
    scheduler: new PermitScheduler(4),
    env,
    version: pkg.version,
    log: (m) => logs.push(m),
  };
}

/** Messages cross as JSON copies, asynchronously, the way a real transport would deliver them. */
const copy = (m: object): JSONRPCMessage => JSON.parse(JSON.stringify(m)) as JSONRPCMessage;

/** The client half of an in-memory connection whose other end is an McpSession. */
export class SessionTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly session: McpSession;
  /** Every message the session sent, in order. */
  readonly received: JSONRPCMessage[] = [];

  constructor(opts: ServerOptions) {
    this.session = new McpSession(opts, (msg) => {
      const m = copy(msg);
      this.received.push(m);
      queueMicrotask(() => this.onmessage?.(m));
    });
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    const m = copy(message);
    queueMicrotask(() => this.session.handleMessage(m));
  }

  async close(): Promise<void> {
    await this.session.end();
    this.onclose?.();
  }
}

export interface Message {
  jsonrpc: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

/** Guard against hangs only; never a timing assertion. */
const WAIT_MS = 20_000;

/** `grex serve` as a real process, spoken to one raw line at a time. */
export class SpawnedServer {
  readonly proc;
  /** Every stdout line, raw. */
  readonly lines: string[] = [];
  stderr = "";
  private readonly queue: string[] = [];
  private waiter: (() => void) | undefined;
  private ended = false;
  private readonly pumped: Promise<void>;

  constructor(cwd: string, env: Record<string, string | undefined>, args: string[] = [], entry: ServeEntry = "cli") {
    this.proc = Bun.spawn([process.execPath, SERVE_ENTRIES[entry], "serve", ...args], { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    this.pumped = Promise.all([this.pumpStdout(), this.pumpStderr()]).then(() => {});
  }

  private async pumpStdout(): Promise<void> {
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of this.proc.stdout as ReadableStream<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let nl = buf.indexOf("\n");
      while (nl !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.lines.push(line);
        this.queue.push(line);
        nl = buf.indexOf("\n");
      }
      this.waiter?.();
    }
    if (buf !== "") {
      this.lines.push(buf);
      this.queue.push(buf);
    }
    this.ended = true;
    this.waiter?.();
  }

  private async pumpStderr(): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of this.proc.stderr as ReadableStream<Uint8Array>) this.stderr += decoder.decode(chunk, { stream: true });
  }

  /** Write raw text to stdin, exactly as given. */
  write(text: string | Uint8Array): void {
    this.proc.stdin.write(text);
    this.proc.stdin.flush();
  }

  send(message: object): void {
    this.write(`${JSON.stringify(message)}\n`);
  }

  /** The next stdout line, parsed; null once stdout has ended. */
  async next(): Promise<Message | null> {
    const deadline = Date.now() + WAIT_MS;
    while (this.queue.length === 0) {
      if (this.ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no output from grex serve within ${WAIT_MS} ms; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
    return JSON.parse(this.queue.shift() as string) as Message;
  }

  /** Send a request and return its response; notifications that arrive first are collected in `skipped`. */
  async request(id: string | number, method: string, params?: object, skipped: Message[] = []): Promise<Message> {
    this.send(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
    return this.responseTo(id, skipped);
  }

  async responseTo(id: string | number, skipped: Message[] = []): Promise<Message> {
    for (;;) {
      const m = await this.next();
      if (m === null) throw new Error(`grex serve ended before answering ${id}; stderr: ${this.stderr}`);
      if (m.id === id && m.method === undefined) return m;
      skipped.push(m);
    }
  }

  async initialize(): Promise<Message> {
    const r = await this.request("init", "initialize", INIT_PARAMS);
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return r;
  }

  /** Close stdin (EOF) and wait for the exit code. */
  async closeInput(): Promise<number> {
    this.proc.stdin.end();
    return this.exit();
  }

  async exit(): Promise<number> {
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), WAIT_MS);
    const code = await this.proc.exited;
    clearTimeout(timer);
    await this.pumped;
    return code;
  }

  kill(): void {
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
  }
}
