// The MCP protocol core on its own: envelope checks, lifecycle, tool-call
// error mapping. Messages go straight into a real McpSession.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { McpSession, PREFERRED_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "../../src/mcp/server.ts";
import { INIT_PARAMS, type Message, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

let tw: TestWorkspace;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-session-");
  expect((await tw.grex("init")).code).toBe(0);
});
afterAll(() => tw.cleanup());

function open(init = true) {
  const out: Message[] = [];
  const logs: string[] = [];
  const session = new McpSession(serverOptions(tw.ws, tw.env, logs), (m) => out.push(JSON.parse(JSON.stringify(m)) as Message));
  const send = (m: unknown) => session.handleMessage(m);
  if (init) {
    send({ jsonrpc: "2.0", id: 0, method: "initialize", params: INIT_PARAMS });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    out.length = 0;
  }
  /** Send a request and wait until it (and everything else in flight) is answered. */
  const call = async (id: string | number, method: string, params?: object): Promise<Message> => {
    send(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
    await session.drain();
    const r = out.find((m) => m.id === id && m.method === undefined);
    if (!r) throw new Error(`no response to ${id}`);
    return r;
  };
  return { session, out, logs, send, call };
}

describe("framing and envelope", () => {
  test("empty and blank lines are ignored", () => {
    const { session, out } = open();
    session.handleLine("");
    session.handleLine("   \t\r");
    expect(out).toEqual([]);
  });

  test("unparsable and truncated JSON → -32700 with id null", () => {
    const { session, out } = open();
    session.handleLine("not json at all");
    session.handleLine('{"jsonrpc":"2.0","id":1,"method":"pi');
    expect(out).toEqual([
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.any(String) } },
      { jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.any(String) } },
    ]);
  });

  test("batches (arrays, even empty) → -32600 with id null", () => {
    const { session, out } = open();
    session.handleLine('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]');
    session.handleLine("[]");
    expect(out.map((m) => [m.id, m.error?.code])).toEqual([
      [null, -32600],
      [null, -32600],
    ]);
  });

  test("bad envelopes → -32600, echoing a usable id", () => {
    const { send, out } = open();
    send({ jsonrpc: "1.0", id: 7, method: "ping" });
    send({ id: 8, method: "ping" });
    send({ jsonrpc: "2.0", id: 9, method: 42 });
    send({ jsonrpc: "2.0", id: null, method: "ping" });
    send({ jsonrpc: "2.0", id: { x: 1 }, method: "ping" });
    send({ jsonrpc: "2.0", id: true, method: "ping" });
    send("a string");
    send(12);
    expect(out.map((m) => [m.id, m.error?.code])).toEqual([
      [7, -32600],
      [8, -32600],
      [9, -32600],
      [null, -32600],
      [null, -32600],
      [null, -32600],
      [null, -32600],
      [null, -32600],
    ]);
  });

  test("params that are not an object → -32602", () => {
    const { send, out } = open();
    send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: [1, 2] });
    send({ jsonrpc: "2.0", id: 2, method: "ping", params: "x" });
    expect(out.map((m) => [m.id, m.error?.code])).toEqual([
      [1, -32602],
      [2, -32602],
    ]);
  });

  test("notifications are never answered, known or not; client responses are ignored", () => {
    const { send, out } = open();
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", method: "notifications/whatever", params: { a: 1 } });
    send({ jsonrpc: "2.0", method: "tools/list" });
    send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 12345 } });
    send({ jsonrpc: "2.0", id: 5, result: {} });
    send({ jsonrpc: "2.0", id: 6, error: { code: 1, message: "x" } });
    expect(out).toEqual([]);
  });

  test("ids may be strings or numbers and are echoed exactly", () => {
    const { send, out } = open();
    send({ jsonrpc: "2.0", id: "abc", method: "ping" });
    send({ jsonrpc: "2.0", id: 0, method: "ping" });
    send({ jsonrpc: "2.0", id: -3.5, method: "ping" });
    expect(out).toEqual([
      { jsonrpc: "2.0", id: "abc", result: {} },
      { jsonrpc: "2.0", id: 0, result: {} },
      { jsonrpc: "2.0", id: -3.5, result: {} },
    ]);
  });

  test("unknown methods → -32601", () => {
    const { send, out } = open();
    send({ jsonrpc: "2.0", id: 1, method: "resources/list" });
    send({ jsonrpc: "2.0", id: 2, method: "grex.sync" });
    expect(out.map((m) => m.error?.code)).toEqual([-32601, -32601]);
  });
});

describe("lifecycle", () => {
  test("requests before initialize → -32002 init_state; ping is allowed", () => {
    const { send, out } = open(false);
    send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ls" } });
    send({ jsonrpc: "2.0", id: 3, method: "ping" });
    expect(out).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: -32002, message: expect.stringContaining("not initialized"), data: { kind: "init_state" } } },
      { jsonrpc: "2.0", id: 2, error: { code: -32002, message: expect.stringContaining("not initialized"), data: { kind: "init_state" } } },
      { jsonrpc: "2.0", id: 3, result: {} },
    ]);
  });

  test("initialize answers server info and capabilities; a second one → -32002 init_state", () => {
    const { send, out } = open(false);
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS });
    send({ jsonrpc: "2.0", id: 2, method: "initialize", params: INIT_PARAMS });
    expect(out[0]?.result).toMatchObject({
      protocolVersion: "2025-06-18",
      serverInfo: { name: "grex", version: expect.any(String) },
      capabilities: { tools: { listChanged: false } },
    });
    expect(out[1]?.error).toEqual({ code: -32002, message: expect.stringContaining("already initialized"), data: { kind: "init_state" } });
  });

  test("protocol version: supported ones are echoed, anything else gets 2025-06-18", () => {
    expect(PREFERRED_PROTOCOL_VERSION).toBe("2025-06-18");
    for (const [asked, answered] of [
      ...SUPPORTED_PROTOCOL_VERSIONS.map((v) => [v, v]),
      ["1999-01-01", "2025-06-18"],
      ["", "2025-06-18"],
    ]) {
      const { send, out } = open(false);
      send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { ...INIT_PARAMS, protocolVersion: asked } });
      expect(out[0]?.result?.protocolVersion).toBe(answered as string);
    }
  });

  test("initialize without params gets the defaults; a protocolVersion that is not a string → -32602, still uninitialized", () => {
    const plain = open(false);
    plain.send({ jsonrpc: "2.0", id: 1, method: "initialize" });
    expect(plain.out[0]?.result).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "grex" } });
    const bad = open(false);
    bad.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 7 } });
    bad.send({ jsonrpc: "2.0", id: 2, method: "ping" });
    bad.send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
    expect(bad.out.map((m) => m.error?.code ?? "ok")).toEqual([-32602, "ok", -32002]);
  });

  test("shutdown drains, answers, closes the session and refuses later requests", async () => {
    const { session, send, out } = open();
    send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ls", arguments: {} } });
    send({ jsonrpc: "2.0", id: 2, method: "shutdown" });
    send({ jsonrpc: "2.0", id: 3, method: "ping" });
    expect(await session.closed).toBe("shutdown");
    // The in-flight call is answered before the shutdown reply.
    expect(out.map((m) => [m.id, m.error?.code ?? "ok"])).toEqual([
      [3, -32600],
      [1, "ok"],
      [2, "ok"],
    ]);
  });

  test("end() (EOF) drains in-flight calls, then closes", async () => {
    const { session, send, out } = open();
    send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ls", arguments: {} } });
    await session.end();
    expect(await session.closed).toBe("eof");
    expect(out.map((m) => m.id)).toEqual([1]);
  });

  test("a request id already in flight is refused", async () => {
    const { session, send, out } = open();
    send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ls", arguments: {} } });
    send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ls", arguments: {} } });
    await session.drain();
    expect(out.map((m) => [m.id, m.error?.code ?? "ok"])).toEqual([
      [1, -32600],
      [1, "ok"],
    ]);
  });
});

describe("tools/call error mapping", () => {
  test("unknown tool → -32601; missing name → -32602; serve is not a tool", async () => {
    const { call } = open();
    expect((await call(1, "tools/call", { name: "nope" })).error?.code).toBe(-32601);
    expect((await call(2, "tools/call", { name: "serve", arguments: {} })).error?.code).toBe(-32601);
    expect((await call(3, "tools/call", { arguments: {} })).error).toMatchObject({ code: -32602, data: { field: "name" } });
  });

  test("unknown, mistyped or CLI-only arguments → -32602 naming the field", async () => {
    const { call } = open();
    const cases: [string, unknown, string | null][] = [
      ["ls", { bogus: true }, "bogus"],
      ["ls", { long: "yes" }, "long"],
      ["rm", {}, "id"],
      ["exec", { cmd: "true", shell: true }, "shell"],
      ["doctor", { fix: true }, "fix"],
      ["ls", [1], null],
      ["ls", "x", null],
    ];
    let id = 10;
    for (const [name, args, field] of cases) {
      const r = await call(id++, "tools/call", { name, arguments: args });
      expect(r.error).toMatchObject({ code: -32602, data: { kind: "usage", field } });
    }
  });

  test("file arguments that escape the workspace → -32602", async () => {
    const { call } = open();
    const r = await call(1, "tools/call", { name: "import", arguments: { from_repos_json: join("..", "elsewhere", "REPOS.json") } });
    expect(r.error).toMatchObject({ code: -32602, data: { field: "from_repos_json" } });
  });

  test("valid arguments the verb refuses (an unknown pack id) → an isError result naming tools, not CLI commands", async () => {
    const { call } = open();
    const r = await call(1, "tools/call", { name: "rm", arguments: { id: "not-registered" } });
    expect(r.error).toBeUndefined();
    const result = r.result as { content: { type: string; text: string }[]; structuredContent: Record<string, unknown>; isError: boolean };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ verb: "rm", error: { kind: "usage", code: -32602, data: { kind: "usage", field: "id" } } });
    expect(result.content[0]?.text).toContain("the ls tool");
    expect(result.content[0]?.text).not.toContain("grex ls");
  });

  test("run with an unknown action → isError with code -32005 (kind plugin)", async () => {
    const { call } = open();
    const r = await call(1, "tools/call", { name: "run", arguments: { action: "nope" } });
    expect(r.result).toMatchObject({ isError: true, structuredContent: { error: { kind: "plugin", code: -32005, data: { kind: "plugin", field: "action" } } } });
  });

  test("a verb that fails → isError result whose structuredContent carries the grex code", async () => {
    const { call } = open();
    const r = await call(1, "tools/call", { name: "add", arguments: { url: join(tw.root, "no-such-repo") } });
    expect(r.error).toBeUndefined();
    const result = r.result as { content: { type: string; text: string }[]; structuredContent: Record<string, unknown>; isError: boolean };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ verb: "add", error: { kind: "pack_op", code: -32002, data: { kind: "pack_op" } } });
    const err = result.structuredContent.error as { message: string };
    expect(result.content).toEqual([
      { type: "text", text: err.message },
      { type: "text", text: JSON.stringify(result.structuredContent) },
    ]);
  });

  test("success → text is the --json document, structuredContent the same object", async () => {
    const { call } = open();
    const r = await call(1, "tools/call", { name: "ls", arguments: {} });
    expect(r.result).toEqual({ content: [{ type: "text", text: '{"packs":[]}' }], structuredContent: { packs: [] }, isError: false });
  });

  test("tools/call works without an arguments member", async () => {
    const { call } = open();
    expect((await call(1, "tools/call", { name: "ls" })).result?.isError).toBe(false);
  });
});
