// The MCP client behind `grex mcp`: connect to any MCP server (Streamable HTTP
// with a bearer token, or a spawned stdio server), initialize, then list tools
// or call one. Every wait is bounded by a timeout, and a spawned server is
// always reaped. The SDK is loaded lazily, on the first connection.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import pkg from "../../package.json" with { type: "json" };
import { CancelledError, GrexError, errnoCode } from "../core/base/errors.ts";
import { StderrTail, TrackedTransport, isObject } from "./client-transport.ts";

export interface ClientTarget {
  /** Streamable HTTP endpoint (http/https), or a legacy SSE endpoint (see `sse`). Exactly one of `url` and `command`. */
  url?: string;
  /** `url` is a legacy HTTP+SSE endpoint (a declared `transport: sse` server); otherwise Streamable HTTP is tried first, then SSE. */
  sse?: boolean;
  /** Bearer token sent with every HTTP request. */
  token?: string;
  /** Other HTTP headers (a pack-declared server's `headers`). */
  headers?: Record<string, string>;
  /** argv of a stdio server to spawn. */
  command?: readonly string[];
  /** Directory and environment the spawned server runs in. */
  cwd: string;
  env: Record<string, string | undefined>;
  /** How long to wait for each answer (a call's progress notifications restart it). */
  timeoutMs: number;
  /** Diagnostics (the spawned server's stderr lines at level 2). */
  debug?(level: number, message: string): void;
}

export interface ToolInfo {
  name: string;
  title?: string;
  description?: string;
  /** Effective hints: the server's annotations with MCP's defaults applied. */
  read_only: boolean;
  destructive: boolean;
  idempotent: boolean;
  open_world: boolean;
  input_schema: Record<string, unknown>;
  output_schema?: Record<string, unknown>;
}

export interface StatusResult {
  transport: "http" | "sse" | "stdio";
  /** The URL, or the spawned command line. */
  endpoint: string;
  server: { name: string; version: string; title?: string };
  protocol_version: string;
  capabilities: Record<string, unknown>;
  instructions?: string;
  tools: ToolInfo[];
}

export interface CallResult {
  tool: string;
  is_error: boolean;
  /** The result's content items as the server sent them. */
  content: Record<string, unknown>[];
  structured_content?: Record<string, unknown>;
}

/** tools/list pages followed at most (a server that never stops paginating must not loop us forever). */
const MAX_PAGES = 100;

type Sdk = Awaited<ReturnType<typeof loadSdk>>;

async function loadSdk() {
  const [client, stdio, http, sse, types, auth] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
    import("@modelcontextprotocol/sdk/types.js"),
    import("@modelcontextprotocol/sdk/client/auth.js"),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    SSEClientTransport: sse.SSEClientTransport,
    SseError: sse.SseError,
    UnauthorizedError: auth.UnauthorizedError,
    McpError: types.McpError,
    ErrorCode: types.ErrorCode,
  };
}

interface Connection {
  sdk: Sdk;
  client: Client;
  transport: TrackedTransport;
  where: string;
  stderr: StderrTail;
}

/** An argv as a shell would need it typed (for messages). */
const shellWords = (argv: readonly string[]) =>
  argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`)).join(" ");

const describeTarget = (t: ClientTarget) => (t.url !== undefined ? t.url : shellWords(t.command ?? []));

/** Turn whatever the SDK threw into one sentence that says what failed, where, and what to do. */
function failure(err: unknown, step: string, target: ClientTarget, conn: Partial<Connection> & { sdk: Sdk }): GrexError {
  if (err instanceof GrexError) return err;
  const { sdk } = conn;
  const where = describeTarget(target);
  const server = target.url !== undefined ? `The MCP server at ${where}` : `The MCP server \`${where}\``;
  const stderrLine = conn.stderr?.lastLine();
  const tail = stderrLine ? ` (its stderr ended with: ${stderrLine})` : "";
  const mcp = (message: string, data?: Record<string, unknown>) => new GrexError("mcp", message, { step, ...data });
  if (err instanceof sdk.McpError) {
    if (err.code === sdk.ErrorCode.RequestTimeout) {
      return mcp(`${server} did not answer ${step} within ${target.timeoutMs} ms; check that it is an MCP server, or raise --timeout.`);
    }
    if (err.code === sdk.ErrorCode.ConnectionClosed) {
      return mcp(`${server} closed the connection during ${step}${tail}; check that the command starts an MCP stdio server.`);
    }
    const msg = err.message.replace(/^MCP error -?\d+: /, "").replace(/\.$/, "");
    return mcp(`${server} answered ${step} with JSON-RPC error ${err.code}: ${msg}.`, { code: err.code, error_data: err.data ?? null });
  }
  if (err instanceof sdk.UnauthorizedError || (err instanceof sdk.StreamableHTTPError && err.code === 401)) {
    return mcp(`${server} rejected the request as unauthorized (HTTP 401); pass the right --token or set GREX_MCP_TOKEN.`, { http_status: 401 });
  }
  if (err instanceof sdk.SseError && typeof err.code === "number" && err.code >= 400) {
    if (err.code === 401) return mcp(`${server} rejected the request as unauthorized (HTTP 401); pass the right --token or set GREX_MCP_TOKEN.`, { http_status: 401 });
    return mcp(`${server} answered the SSE stream's GET with HTTP ${err.code}; check that the URL is an MCP endpoint.`, { http_status: err.code });
  }
  if (err instanceof sdk.StreamableHTTPError) {
    const detail = err.message.replace(/^Streamable HTTP error: /, "").replace(/\s+/g, " ").slice(0, 200).replace(/\.$/, "");
    const hint = err.code === 404 ? "check the URL (grex serves MCP at /mcp)" : "check that the URL is an MCP Streamable HTTP endpoint";
    return mcp(`${server} answered ${step} with HTTP ${err.code} (${detail}); ${hint}.`, { http_status: err.code });
  }
  const code = errnoCode(err);
  if (target.command !== undefined && (code === "ENOENT" || code === "EACCES")) {
    const reason = code === "ENOENT" ? "not found" : "not executable";
    return mcp(`Cannot start the MCP server: command '${target.command[0]}' ${reason}; check the command after \`--\`.`);
  }
  // First sentence only: runtimes append advice of their own ("For more information, pass `verbose: true`…").
  const raw = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ");
  const msg = (raw.split(/(?<=[a-z)])\. /)[0] ?? raw).slice(0, 300).replace(/\.$/, "");
  if (target.url !== undefined) {
    if (code === "ECONNREFUSED" || code === "ConnectionRefused") {
      return mcp(`Cannot reach the MCP server at ${where} (connection refused); check that it is running and the URL is right.`);
    }
    if (code === "ECONNRESET" || code === "ConnectionClosed" || code === "UND_ERR_SOCKET") {
      return mcp(`${server} dropped the connection during ${step} (${msg}); check that the server is still running.`);
    }
    if (err instanceof TypeError) return mcp(`Cannot reach the MCP server at ${where} (${msg}); check that it is running and the URL is right.`);
  }
  if (conn.transport?.closed) return mcp(`${server} went away during ${step}${tail}; check that it is a working MCP server.`);
  return mcp(`${server} gave an invalid answer to ${step} (${msg}); check that it speaks MCP.`);
}

function stringEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Connect, initialize, run `work`, and always close: a spawned server is
 * reaped, an HTTP session is ended. A failed or cancelled run kills the
 * spawned server at once instead of waiting for it to notice EOF.
 */
async function withClient<T>(target: ClientTarget, signal: AbortSignal, work: (conn: Connection, step: (name: string) => void) => Promise<T>): Promise<T> {
  if (signal.aborted) throw new CancelledError();
  const sdk = await loadSdk();
  if (target.url === undefined || target.sse === true) return withTransport(sdk, target, target.url === undefined ? "stdio" : "sse", signal, work);
  try {
    return await withTransport(sdk, target, "http", signal, work);
  } catch (err) {
    // The SDK's documented pattern: a server that refuses the Streamable HTTP initialize
    // with an HTTP 4xx (404, 405, 400) may speak the legacy HTTP+SSE transport instead.
    const status = err instanceof GrexError ? err.data?.http_status : undefined;
    const refusedInit = err instanceof GrexError && err.data?.step === "initialize" && typeof status === "number" && status >= 400 && status < 500 && status !== 401 && status !== 403;
    if (!refusedInit || signal.aborted) throw err;
    target.debug?.(1, `Streamable HTTP refused (HTTP ${String(status)}); trying the legacy SSE transport`);
    try {
      return await withTransport(sdk, target, "sse", signal, work);
    } catch (sseErr) {
      if (sseErr instanceof GrexError && sseErr.data?.step === "initialize") throw err; // neither: report the Streamable HTTP answer
      throw sseErr;
    }
  }
}

async function withTransport<T>(
  sdk: Sdk,
  target: ClientTarget,
  kind: "http" | "sse" | "stdio",
  signal: AbortSignal,
  work: (conn: Connection, step: (name: string) => void) => Promise<T>,
): Promise<T> {
  const stderr = new StderrTail();
  let inner: ConstructorParameters<typeof TrackedTransport>[0];
  let terminate: (() => Promise<void>) | undefined;
  if (kind !== "stdio") {
    const headers: Record<string, string> = { ...target.headers };
    if (target.token !== undefined) headers.Authorization = `Bearer ${target.token}`;
    const url = new URL(target.url ?? "");
    if (kind === "sse") inner = new sdk.SSEClientTransport(url, { requestInit: { headers } });
    else {
      const http = new sdk.StreamableHTTPClientTransport(url, {
        requestInit: { headers },
        // A dropped stream is not worth reconnect attempts: the call times out or fails.
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
      });
      inner = http;
      terminate = () => http.terminateSession();
    }
  } else {
    const [command, ...args] = target.command ?? [];
    if (command === undefined) throw new GrexError("usage", "No MCP server given; pass --url URL or a command after `--`.");
    const stdio = new sdk.StdioClientTransport({ command, args, cwd: target.cwd, env: stringEnv(target.env), stderr: "pipe" });
    stdio.stderr?.on("data", (chunk: Buffer | string) => {
      const text = chunk.toString();
      stderr.push(text);
      for (const line of text.split("\n")) if (line.trim() !== "") target.debug?.(2, `server: ${line}`);
    });
    inner = stdio;
  }
  const transport = new TrackedTransport(inner, terminate);
  transport.kind = kind;
  const client = new sdk.Client({ name: "grex", version: pkg.version }, { capabilities: {} });
  // Errors also surface through the pending request; this only keeps them off the console.
  client.onerror = (e) => target.debug?.(3, `transport: ${e.message}`);
  const conn: Connection = { sdk, client, transport, where: describeTarget(target), stderr };
  let step = "initialize";
  let failed = true;
  const onAbort = () => void transport.kill();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    await client.connect(transport, { timeout: target.timeoutMs, signal });
    const result = await work(conn, (name) => {
      step = name;
    });
    failed = false;
    return result;
  } catch (err) {
    if (signal.aborted) throw new CancelledError();
    throw failure(err, step, target, conn);
  } finally {
    signal.removeEventListener("abort", onAbort);
    if (failed) await transport.kill();
    await transport.close().catch(() => {});
  }
}

/** MCP's annotation defaults: not read-only, destructive (when not read-only), not idempotent, open world. */
function toolInfo(t: Record<string, unknown>): ToolInfo {
  const a = isObject(t.annotations) ? t.annotations : {};
  const readOnly = a.readOnlyHint === true;
  const info: ToolInfo = {
    name: String(t.name),
    read_only: readOnly,
    destructive: !readOnly && a.destructiveHint !== false,
    idempotent: a.idempotentHint === true,
    open_world: a.openWorldHint !== false,
    input_schema: isObject(t.inputSchema) ? t.inputSchema : {},
  };
  const title = typeof t.title === "string" ? t.title : typeof a.title === "string" ? a.title : undefined;
  if (title !== undefined) info.title = title;
  if (typeof t.description === "string") info.description = t.description;
  if (isObject(t.outputSchema)) info.output_schema = t.outputSchema;
  return info;
}

/** `grex mcp status`: initialize and list every tool (following pagination). */
export function mcpStatus(target: ClientTarget, signal: AbortSignal): Promise<StatusResult> {
  return withClient(target, signal, async ({ client, transport }, step) => {
    const info = client.getServerVersion();
    const capabilities = client.getServerCapabilities() ?? {};
    const tools: ToolInfo[] = [];
    // A server without the tools capability has no tools to list (tools/list would be -32601).
    if (capabilities.tools !== undefined) {
      step("tools/list");
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const res = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: target.timeoutMs, signal });
        for (const t of res.tools) tools.push(toolInfo(t as Record<string, unknown>));
        cursor = res.nextCursor;
        if (cursor === undefined) break;
      }
    }
    const result: StatusResult = {
      transport: transport.kind,
      endpoint: describeTarget(target),
      server: { name: info?.name ?? "", version: info?.version ?? "" },
      // "" when the server named none (grex then spoke the version it asked for).
      protocol_version: transport.versionMissing ? "" : (transport.protocolVersion ?? ""),
      capabilities: capabilities as Record<string, unknown>,
      tools,
    };
    if (typeof info?.title === "string") result.server.title = info.title;
    const instructions = client.getInstructions();
    if (instructions !== undefined) result.instructions = instructions;
    return result;
  });
}

/** `grex mcp call`: initialize and call one tool; a tool-level failure comes back as `is_error`, not a throw. */
export function mcpCall(target: ClientTarget, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallResult> {
  return withClient(target, signal, async ({ client }, step) => {
    step(`tools/call ${tool}`);
    // Progress notifications restart the timeout: a long sync that reports progress is not "silent".
    const res = await client.callTool({ name: tool, arguments: args }, undefined, {
      timeout: target.timeoutMs,
      resetTimeoutOnProgress: true,
      onprogress: () => {},
      signal,
    });
    const content = Array.isArray(res.content) ? (res.content.filter(isObject) as Record<string, unknown>[]) : [];
    const result: CallResult = { tool, is_error: res.isError === true, content };
    if (isObject(res.structuredContent)) result.structured_content = res.structuredContent;
    return result;
  });
}
