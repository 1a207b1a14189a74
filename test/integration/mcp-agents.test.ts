// grex serve as agents and MCP clients drive it: the SDK Client over stdio and
// over HTTP (a session, and --stateless) with a deliberately non-conformant
// child and a legacy-SSE child (server-everything in sse mode) declared; plain
// JSON-RPC clients that POST to / without a session; `grex mcp` against the
// servers the gateway accepts, falling back to SSE.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { join } from "node:path";
import { EVERYTHING, serversPackYaml } from "../helpers/mcp-gateway.ts";
import { HttpServeProcess } from "../helpers/http-serve.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(60_000);

const HOSTILE = join(import.meta.dir, "..", "helpers", "mcp-hostile-server.ts");
const GREX_TOOLS = ["init", "add", "rm", "ls", "status", "sync", "update", "doctor", "import", "run", "exec"];

let tw: TestWorkspace;
let sse: ReturnType<typeof Bun.spawn>;
let sseUrl: string;
const clients: Client[] = [];
const servers: HttpServeProcess[] = [];

/** server-everything in legacy SSE mode on a free loopback port; resolves once it listens. */
async function startSseServer(): Promise<void> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const port = probe.port;
  await probe.stop(true);
  sse = Bun.spawn(["node", EVERYTHING, "sse"], { env: { ...process.env, PORT: String(port) }, stdout: "ignore", stderr: "pipe" });
  let err = "";
  const dec = new TextDecoder();
  const reader = (sse.stderr as ReadableStream<Uint8Array>).getReader();
  const deadline = Date.now() + 30_000;
  while (!err.includes(`running on port ${port}`)) {
    if (Date.now() > deadline || sse.exitCode !== null) throw new Error(`server-everything sse did not start: ${err}`);
    const { value, done } = await reader.read();
    if (done) break;
    err += dec.decode(value, { stream: true });
  }
  reader.releaseLock();
  void (sse.stderr as ReadableStream<Uint8Array>).pipeTo(new WritableStream()).catch(() => {});
  sseUrl = `http://127.0.0.1:${port}/sse`;
}

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-agents-");
  await startSseServer();
  const pack = tw.repo("agents-pack", {
    ".grex/pack.yaml": serversPackYaml("agents-pack", [
      ["    - id: odd", "      transport: stdio", `      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(HOSTILE)}]`, "      env: { FIXTURE_NAME: odd }"].join("\n"),
      ["    - id: legacy", "      transport: sse", `      url: ${sseUrl}`, "      tools: [echo, get-sum]"].join("\n"),
    ]),
  });
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", pack)).code).toBe(0);
});

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  sse.kill();
  await sse.exited;
  tw.cleanup();
});

type ToolResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

/** What every transport must show: all tools listed despite the odd child, both children callable, tool errors as results. */
async function drive(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  expect(names.slice(0, 11)).toEqual(GREX_TOOLS);
  expect(names.filter((n) => n.startsWith("odd__")).sort()).toEqual(["odd__bare", "odd__echo", "odd__fails", "odd__flood", "odd__fork", "odd__hang", "odd__ignore-term", "odd__pid", "odd__snake", "odd__stringy"]);
  expect(names.filter((n) => n.startsWith("legacy__")).sort()).toEqual(["legacy__echo", "legacy__get-sum"]);
  const tool = (n: string) => tools.find((t) => t.name === n);
  expect(tool("odd__snake")?.inputSchema).toEqual({ type: "object", properties: { q: { type: "string" } }, required: ["q"] });
  expect(tool("odd__bare")?.inputSchema).toEqual({ type: "object" });
  expect(tool("odd__stringy")?.inputSchema).toEqual({ type: "object" });
  expect(tool("odd__snake")?.annotations).toBeUndefined(); // never invented
  expect(tool("odd__echo")?.annotations).toEqual({ readOnlyHint: true });
  for (const t of tools.slice(0, 11)) for (const p of Object.values(t.inputSchema.properties ?? {})) expect((p as { description?: string }).description).toBeString();
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;
  expect((await call("odd__snake", { q: "x" })).content[0]?.text).toBe("q=x");
  expect(await call("odd__fails", {})).toMatchObject({ isError: true, content: [{ type: "text", text: "it failed" }] });
  expect((await call("legacy__echo", { message: "hi" })).content[0]?.text).toContain("hi");
  const rm = await call("rm", { id: "nope" });
  expect(rm.isError).toBe(true);
  expect(rm.structuredContent?.error).toMatchObject({ kind: "usage", code: -32602, data: { kind: "usage", field: "id" } });
  expect(rm.content[0]?.text).toContain("ls tool");
}

describe("the SDK Client lists every tool despite a non-conformant child, and reaches an SSE child", () => {
  test("over stdio", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [GREX_MAIN, "serve"], cwd: tw.ws, env: tw.env as Record<string, string>, stderr: "pipe" });
    const client = new Client({ name: "agents-test", version: "1" });
    clients.push(client);
    await client.connect(transport);
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    await drive(client);
  });

  test("over HTTP with a session", async () => {
    const s = await HttpServeProcess.start(tw.ws, tw.env);
    servers.push(s);
    const client = new Client({ name: "agents-test", version: "1" });
    clients.push(client);
    const transport = new StreamableHTTPClientTransport(new URL(s.url));
    await client.connect(transport);
    expect(transport.sessionId).toBeString();
    await drive(client);
  });

  test("over HTTP, stateless", async () => {
    const s = await HttpServeProcess.start(tw.ws, tw.env, ["--stateless"]);
    servers.push(s);
    const client = new Client({ name: "agents-test", version: "1" });
    clients.push(client);
    const transport = new StreamableHTTPClientTransport(new URL(s.url));
    await client.connect(transport);
    expect(transport.sessionId).toBeUndefined();
    await drive(client);
  });
});

test("no spurious tools/list_changed: a sync that changes no declared server sends none, listed or not", async () => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [GREX_MAIN, "serve"], cwd: tw.ws, env: tw.env as Record<string, string>, stderr: "pipe" });
  const client = new Client({ name: "agents-test", version: "1" });
  clients.push(client);
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    changes++;
  });
  await client.connect(transport);
  expect((await client.callTool({ name: "sync", arguments: {} })).isError).toBe(false);
  await Bun.sleep(500); // the re-read is debounced by 50 ms: give a notification every chance to show
  await client.listTools();
  expect((await client.callTool({ name: "sync", arguments: {} })).isError).toBe(false);
  await Bun.sleep(500);
  expect(changes).toBe(0);
});

describe("plain JSON-RPC clients (curl)", () => {
  const post = (url: string, body: object, headers: Record<string, string> = {}) =>
    fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });

  test("POST to / works: initialize without params, then tools/list and tools/call without a session; a bad token is 401", async () => {
    const s = await HttpServeProcess.start(tw.ws, { ...tw.env, GREX_MCP_TOKEN: "", MCP_TOKEN: "secret" });
    servers.push(s);
    const root = s.url.replace(/\/mcp$/, "/");
    const auth = { Authorization: "Bearer secret" };
    const init = await post(root, { jsonrpc: "2.0", method: "initialize", id: 1 }, auth);
    expect(init.status).toBe(200);
    expect(await init.json()).toMatchObject({ id: 1, result: { protocolVersion: "2025-06-18", serverInfo: { name: "grex" }, capabilities: { tools: { listChanged: true } } } });
    const list = await post(root, { jsonrpc: "2.0", method: "tools/list", id: 2 }, auth);
    expect(list.status).toBe(200);
    const names = ((await list.json()) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);
    expect(names.slice(0, 11)).toEqual(GREX_TOOLS);
    const unknown = await post(root, { jsonrpc: "2.0", method: "tools/call", id: 3, params: { name: "analyze", arguments: { file_path: "examples/hello.py" } } }, auth);
    expect(await unknown.json()).toMatchObject({ id: 3, error: { code: -32601 } });
    const ls = await post(root, { jsonrpc: "2.0", method: "tools/call", id: 4, params: { name: "ls", arguments: {} } }, auth);
    expect(await ls.json()).toMatchObject({ id: 4, result: { isError: false, structuredContent: { packs: [{ id: "agents-pack" }] } } });
    const denied = await post(root, { jsonrpc: "2.0", method: "tools/list", id: 5 }, { Authorization: "Bearer wrong" });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32010, message: "Unauthorized" } });
  });
});

describe("grex mcp accepts what the gateway accepts", () => {
  test("a server whose initialize names no protocolVersion and whose tools are non-conformant", async () => {
    const r = await tw.grex("mcp", "status", "--json", "--", "env", "FIXTURE_NO_VERSION=1", process.execPath, HOSTILE);
    expect(r.code).toBe(0);
    expect(r.json.protocol_version).toBe("");
    const tools = r.json.tools as { name: string; input_schema: object }[];
    expect(tools.map((t) => t.name)).not.toContain("has space");
    expect(tools.find((t) => t.name === "snake")?.input_schema).toEqual({ type: "object", properties: { q: { type: "string" } }, required: ["q"] });
    const call = await tw.grex("mcp", "call", "snake", "--args", '{"q":"y"}', "--json", "--", "env", "FIXTURE_NO_VERSION=1", process.execPath, HOSTILE);
    expect(call.code).toBe(0);
    expect(call.json.content).toEqual([{ type: "text", text: "q=y" }]);
    const failed = await tw.grex("mcp", "call", "fails", "--json", "--", process.execPath, HOSTILE);
    expect(failed.json.is_error).toBe(true);
    expect(failed.code).toBe(4);
  });

  test("--url tries Streamable HTTP, then falls back to the legacy SSE transport", async () => {
    const r = await tw.grex("mcp", "status", "--json", "--url", sseUrl);
    expect(r.code).toBe(0);
    expect(r.json.transport).toBe("sse");
    expect((r.json.tools as { name: string }[]).map((t) => t.name)).toContain("echo");
    const call = await tw.grex("mcp", "call", "echo", "--args", '{"message":"over sse"}', "--json", "--url", sseUrl);
    expect(call.code).toBe(0);
    expect(JSON.stringify(call.json.content)).toContain("over sse");
  });

  test("a declared sse server by name; grex mcp servers reports the odd child's dropped tool", async () => {
    const call = await tw.grex("mcp", "call", "legacy:echo", "--args", '{"message":"declared"}', "--json");
    expect(call.code).toBe(0);
    expect(JSON.stringify(call.json.content)).toContain("declared");
    const servers = await tw.grex("mcp", "servers", "--json");
    const odd = (servers.json.servers as { id: string; transport: string; dropped?: string[] }[]).find((x) => x.id === "odd");
    expect(odd?.dropped?.join("\n")).toContain('"has space"');
    expect((servers.json.servers as { id: string; transport: string }[]).find((x) => x.id === "legacy")?.transport).toBe("sse");
  });
});
