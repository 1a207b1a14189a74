// `grex serve` as a real process: raw wire behaviour line by line, exit on EOF
// and shutdown, and the SDK's own stdio client against it.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { INIT_PARAMS, type Message, type ServeEntry, SpawnedServer } from "../helpers/mcp.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let tw: TestWorkspace;
const servers: SpawnedServer[] = [];

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-stdio-");
  expect((await tw.grex("init")).code).toBe(0);
});
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
});
afterAll(() => tw.cleanup());

function serveVia(cwd: string, args: string[], entry: ServeEntry): SpawnedServer {
  const s = new SpawnedServer(cwd, tw.env, args, entry);
  servers.push(s);
  return s;
}

/** Every stdout line is one JSON-RPC 2.0 message: nothing else ever reaches stdout. */
function expectCleanWire(s: SpawnedServer): void {
  expect(s.lines.length).toBeGreaterThan(0);
  for (const line of s.lines) {
    const m = JSON.parse(line) as Message;
    expect(m.jsonrpc).toBe("2.0");
    expect("result" in m || "error" in m || typeof m.method === "string").toBe(true);
  }
}

// Both ways of starting the server: through the CLI adapter, and the argv fast path.
for (const entry of ["cli", "fast"] as const) describe(`raw wire (${entry})`, () => {
  const serve = (cwd = tw.ws, args: string[] = []) => serveVia(cwd, args, entry);

  test("bad input of every kind is answered and the server keeps serving", async () => {
    const s = serve();
    s.write("garbage\n");
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32700 } });
    s.write('{"jsonrpc":"2.0","id":1,"method":"initi\n');
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32700 } });
    s.write('[{"jsonrpc":"2.0","id":2,"method":"ping"}]\n');
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32600 } });
    s.write('{"jsonrpc":"1.0","id":3,"method":"ping"}\n');
    expect(await s.next()).toMatchObject({ id: 3, error: { code: -32600 } });
    s.write("\n\r\n   \n"); // empty lines: ignored
    s.send({ jsonrpc: "2.0", method: "notifications/unknown-thing" }); // never answered
    expect(await s.request(4, "tools/list")).toMatchObject({ error: { code: -32002, data: { kind: "init_state" } } });
    expect(await s.request(5, "ping")).toEqual({ jsonrpc: "2.0", id: 5, result: {} });
    const init = await s.initialize();
    expect(init.result).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "grex" }, capabilities: { tools: { listChanged: true } } });
    expect(await s.request(6, "initialize", INIT_PARAMS)).toMatchObject({ error: { code: -32002, data: { kind: "init_state" } } });
    expect(await s.request(7, "no/such/method")).toMatchObject({ error: { code: -32601 } });
    // A line over 10 MiB, written in pieces: refused with id null, then business as usual.
    const piece = "x".repeat(1024 * 1024);
    s.write('{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"');
    for (let i = 0; i < 11; i++) s.write(piece);
    s.write('"}}\n');
    expect(await s.next()).toMatchObject({ id: null, error: { code: -32600 } });
    s.write('{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n');
    expect(await s.next()).toEqual({ jsonrpc: "2.0", id: "crlf", result: {} });
    const ls = await s.request(9, "tools/call", { name: "ls", arguments: {} });
    expect(ls.result).toMatchObject({ isError: false, structuredContent: { packs: [] } });
    expect(await s.closeInput()).toBe(0);
    expectCleanWire(s);
    expect(s.lines.length).toBe(12); // exactly one line per answered request, none for notifications or empty lines
  });

  test("EOF with a call in flight: the call is answered, then exit 0", async () => {
    const s = serve();
    await s.initialize();
    s.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "status", arguments: {} } });
    expect(await s.closeInput()).toBe(0);
    const last = JSON.parse(s.lines.at(-1) as string) as Message;
    expect(last).toMatchObject({ id: 1, result: { isError: false } });
    expectCleanWire(s);
  });

  test("shutdown: drained, answered, exit 0 with stdin still open", async () => {
    const s = serve();
    await s.initialize();
    s.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ls", arguments: {} } });
    s.send({ jsonrpc: "2.0", id: 2, method: "shutdown" });
    const ids: unknown[] = [];
    for (let m = await s.next(); m !== null; m = await s.next()) ids.push(m.id);
    expect(ids).toEqual([1, 2]);
    expect(await s.exit()).toBe(0);
  });

  test("stdin closed at once: exit 0, nothing on stdout", async () => {
    const s = serve();
    expect(await s.closeInput()).toBe(0);
    expect(s.lines).toEqual([]);
  });

  test("started below the workspace root, the server serves that workspace", async () => {
    const sub = join(tw.ws, "deep", "er");
    mkdirSync(sub, { recursive: true });
    const s = serve(sub);
    await s.initialize();
    const r = await s.request(1, "tools/call", { name: "init", arguments: {} });
    expect(r.result?.structuredContent).toMatchObject({ workspace: tw.ws, created: [] });
    expect(existsSync(join(sub, "grex.jsonl"))).toBe(false);
    expect(await s.closeInput()).toBe(0);
  });

  test("started outside any workspace, init over MCP creates one in the launch directory", async () => {
    const dir = join(tw.root, `fresh-${entry}`);
    mkdirSync(dir);
    const s = serve(dir);
    await s.initialize();
    // No workspace yet: a tool result telling the model to call init, not a protocol error.
    const before = await s.request(1, "tools/call", { name: "ls", arguments: {} });
    expect(before.result).toMatchObject({ isError: true, structuredContent: { error: { kind: "usage", code: -32602 } } });
    expect(JSON.stringify(before.result)).toContain("the init tool");
    const r = await s.request(2, "tools/call", { name: "init", arguments: {} });
    expect(r.result).toMatchObject({ isError: false, structuredContent: { workspace: dir } });
    expect((await s.request(3, "tools/call", { name: "ls", arguments: {} })).result?.isError).toBe(false);
    expect(await s.closeInput()).toBe(0);
    expectCleanWire(s);
  });

  test("--manifest (made absolute at launch), --parallel=N and -v are accepted", async () => {
    const elsewhere = join(tw.root, "elsewhere");
    mkdirSync(elsewhere, { recursive: true });
    const s = serve(elsewhere, ["--manifest", join("..", "ws", "grex.jsonl"), "--parallel=2", "-v", "--json"]);
    await s.initialize();
    const r = await s.request(1, "tools/call", { name: "init", arguments: {} });
    expect(r.result?.structuredContent).toMatchObject({ workspace: tw.ws });
    expect(await s.closeInput()).toBe(0);
    expectCleanWire(s);
  });
});

describe("startup cost", () => {
  test("the fast path answers initialize without loading the verb table, cac, valibot, the SDK, zod, isomorphic-git, yaml, or what reads the filesystem", async () => {
    const s = new SpawnedServer(tw.ws, { ...tw.env, GREX_TEST_MODULES: "1" }, [], "fast");
    servers.push(s);
    expect((await s.initialize()).result?.protocolVersion).toBe("2025-06-18");
    expect(await s.closeInput()).toBe(0);
    const loaded = JSON.parse(/MODULES (.*)/.exec(s.stderr)?.[1] ?? "null") as string[];
    expect(loaded.length).toBeGreaterThan(0);
    // workspace.ts and locks.ts stand for node:fs (a builtin, not in the module cache): the workspace is found on the first tool request.
    for (const heavy of ["/cac/", "/valibot/", "@modelcontextprotocol", "/zod/", "isomorphic-git", "/yaml/", "src/verbs/", "src/cli/", "src/mcp/serve-verb.ts", "src/core/base/workspace.ts", "src/core/locks/locks.ts"]) {
      expect(loaded.filter((m) => m.includes(heavy))).toEqual([]);
    }
  });
});

describe("SDK stdio client", () => {
  test("connect, list tools, call ls, close", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [GREX_MAIN, "serve"],
      cwd: tw.ws,
      env: tw.env as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe("grex");
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(11);
      const r = (await client.callTool({ name: "ls", arguments: {} })) as { content: { text: string }[]; isError: boolean };
      expect(r.isError).toBe(false);
      expect(`${r.content[0]?.text}\n`).toBe((await tw.grex("ls", "--json")).stdout);
    } finally {
      await client.close();
    }
  });
});
