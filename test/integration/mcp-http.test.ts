// grex's MCP server over Streamable HTTP (serveHttp on 127.0.0.1, port 0),
// driven by the official SDK client and by raw requests: sessions, the bearer
// token, body cap, DNS-rebinding checks, DELETE, graceful stop; then the
// `grex serve --http` process with `grex mcp --url` as its client.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { serveHttp, type HttpServer, MAX_BODY_BYTES, parseAddr } from "../../src/mcp/http.ts";
import { HttpServeProcess, INIT_BODY, httpClient, rawPost } from "../helpers/http-serve.ts";
import { serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

type ToolResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

let tw: TestWorkspace;
const servers: HttpServer[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-http-");
  tw.repo("child-a");
  tw.repo("child-b");
  const meta = tw.repo("meta-basic");
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", meta)).code).toBe(0);
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

afterAll(() => tw.cleanup());

async function start(token?: string, logs: string[] = []): Promise<HttpServer> {
  const s = await serveHttp({ addr: "127.0.0.1:0", token, server: serverOptions(tw.ws, tw.env, logs), log: (m) => logs.push(m) });
  servers.push(s);
  return s;
}

async function connect(url: string, token?: string) {
  const c = await httpClient(url, token);
  clients.push(c.client);
  return c;
}

const call = (client: Client, name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;

describe("sessions", () => {
  test("a full session: initialize, tools/list, tools/call ls, sync with progress", async () => {
    const s = await start();
    const { client, transport } = await connect(s.url);
    expect(transport.sessionId).toBeString();
    expect(client.getServerVersion()?.name).toBe("grex");
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(11);
    const ls = await call(client, "ls");
    expect(ls.isError).toBe(false);
    expect(ls.content[0]?.text).toBe((await tw.grex("ls", "--json")).stdout.trim());
    const progress: number[] = [];
    const sync = (await client.callTool({ name: "sync", arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) })) as ToolResult;
    expect(sync.isError).toBe(false);
    // Progress notifications travel on the call's own SSE stream (related-request routing).
    expect(progress.length).toBeGreaterThan(0);
    expect(await client.ping()).toEqual({});
  });

  test("two concurrent sessions share the server", async () => {
    const s = await start();
    const a = await connect(s.url);
    const b = await connect(s.url);
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    expect(s.sessionCount()).toBe(2);
    const results = await Promise.all([call(a.client, "ls"), call(b.client, "status"), call(a.client, "status"), call(b.client, "ls")]);
    for (const r of results) expect(r.isError).toBe(false);
    expect(results[0]?.content[0]?.text).toBe(results[3]?.content[0]?.text);
    expect(results[1]?.content[0]?.text).toBe(results[2]?.content[0]?.text);
  });

  test("DELETE ends the session; its id is then unknown (404)", async () => {
    const s = await start();
    const { transport } = await connect(s.url);
    const sid = transport.sessionId as string;
    expect(s.sessionCount()).toBe(1);
    await transport.terminateSession();
    expect(s.sessionCount()).toBe(0);
    const res = await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }), { "Mcp-Session-Id": sid });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32011, message: "Session not found: it was closed or expired; send initialize to open a new one." } });
  });

  test("stop() lets an in-flight call finish before closing", async () => {
    const s = await start();
    const { client } = await connect(s.url);
    const marker = join(tw.root, "drain-marker");
    mkdirSync(marker, { recursive: true });
    const flag = join(marker, "started");
    const running = call(client, "exec", { cmd: "sh", args: ["-c", `touch '${flag}'; sleep 1`] });
    while (!existsSync(flag)) await Bun.sleep(20);
    const stopped = s.stop();
    const r = await running;
    expect(r.isError).toBe(false);
    await stopped;
    expect(s.sessionCount()).toBe(0);
  });
});

describe("bearer token", () => {
  // Its own code: -32001 is the integrity kind of a tool result.
  const UNAUTHORIZED = { jsonrpc: "2.0", id: null, error: { code: -32010, message: "Unauthorized" } };

  test("missing or wrong token → 401 with a JSON-RPC error body", async () => {
    const s = await start("s3cret-token");
    const none = await rawPost(s.url, JSON.stringify(INIT_BODY));
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual(UNAUTHORIZED);
    const wrong = await rawPost(s.url, JSON.stringify(INIT_BODY), { Authorization: "Bearer s3cret-tokeN" });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual(UNAUTHORIZED);
    const prefix = await rawPost(s.url, JSON.stringify(INIT_BODY), { Authorization: "Bearer s3cret" });
    expect(prefix.status).toBe(401);
    const scheme = await rawPost(s.url, JSON.stringify(INIT_BODY), { Authorization: "Basic s3cret-token" });
    expect(scheme.status).toBe(401);
    expect(s.sessionCount()).toBe(0);
  });

  test("the right token opens a session; the SDK client fails cleanly without it", async () => {
    const s = await start("s3cret-token");
    const { client } = await connect(s.url, "s3cret-token");
    expect((await call(client, "ls")).isError).toBe(false);
    await expect(httpClient(s.url, "nope")).rejects.toThrow(/Unauthorized/);
  });

  test("a non-loopback bind without a token is refused", async () => {
    let err: unknown;
    try {
      await serveHttp({ addr: "0.0.0.0:0", token: undefined, server: serverOptions(tw.ws, tw.env), log: () => {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).kind).toBe("usage");
    expect((err as GrexError).message).toContain("without a token");
  });
});

describe("request checks", () => {
  test("a body over 4 MiB → 413 (declared length, and streamed without one)", async () => {
    const s = await start();
    const big = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${"x".repeat(MAX_BODY_BYTES)}"}}`;
    const declared = await rawPost(s.url, big);
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { error: { code: number } }).error.code).toBe(-32014);
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 1 << 20) c.enqueue(bytes.subarray(i, i + (1 << 20)));
        c.close();
      },
    });
    const streamed = await rawPost(s.url, stream);
    expect(streamed.status).toBe(413);
  });

  test("forged Host and foreign Origin → 403; loopback names and origins pass", async () => {
    const s = await start();
    const port = new URL(s.url).port;
    const body = JSON.stringify(INIT_BODY);
    expect((await rawPost(s.url, body, { Host: "evil.example.com" })).status).toBe(403);
    expect((await rawPost(s.url, body, { Host: `evil.example.com:${port}` })).status).toBe(403);
    expect((await rawPost(s.url, body, { Host: "localhost:1" })).status).toBe(403);
    expect((await rawPost(s.url, body, { Origin: "http://evil.example.com" })).status).toBe(403);
    expect((await rawPost(s.url, body, { Origin: "null" })).status).toBe(403);
    const fine: Record<string, string>[] = [{ Host: `localhost:${port}` }, { Host: `[::1]:${port}` }, { Origin: "http://localhost:5173" }, {}];
    for (const headers of fine) {
      const res = await rawPost(s.url, body, headers);
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
  });

  test("wrong path, batches, missing or unknown session, other methods", async () => {
    const s = await start();
    const other = s.url.replace(/\/mcp$/, "/other");
    expect((await rawPost(other, JSON.stringify(INIT_BODY))).status).toBe(404);
    const batch = await rawPost(s.url, JSON.stringify([INIT_BODY]));
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as { error: { code: number } }).error.code).toBe(-32600);
    const bad = await rawPost(s.url, "{not json");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
    // A POST without a session that is not initialize is answered on its own (plain JSON-RPC clients).
    const sessionless = await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }));
    expect(sessionless.status).toBe(200);
    expect(await sessionless.json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    expect((await fetch(s.url, { method: "GET", headers: { Accept: "text/event-stream" } })).status).toBe(400);
    expect((await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), { "Mcp-Session-Id": "nope" })).status).toBe(404);
    expect((await fetch(s.url, { method: "PUT" })).status).toBe(405);
  });
});

describe("parseAddr", () => {
  test("host:port, [v6]:port, a bare port; bad ones are usage errors", () => {
    expect(parseAddr("127.0.0.1:8080")).toEqual({ hostname: "127.0.0.1", port: 8080 });
    expect(parseAddr("[::1]:0")).toEqual({ hostname: "::1", port: 0 });
    expect(parseAddr("9000")).toEqual({ hostname: "127.0.0.1", port: 9000 });
    for (const bad of ["", "::1", "host:", "host:99999", "a:b:c", ":80"]) expect(() => parseAddr(bad)).toThrow(GrexError);
  });
});

describe("grex serve --http (process) with grex mcp --url", () => {
  test("a server killed mid-call: grex mcp fails with a clear error, well before its timeout", async () => {
    const server = await HttpServeProcess.start(tw.ws, tw.env);
    const flag = join(tw.root, "killed-mid-call");
    try {
      const args = JSON.stringify({ cmd: "sh", args: ["-c", `touch '${flag}'; sleep 3`] });
      const running = tw.grex("mcp", "call", "exec", "--args", args, "--timeout", "60000", "--url", server.url);
      while (!existsSync(flag)) await Bun.sleep(20);
      server.kill();
      const r = await running;
      expect(r.code).toBe(6);
      expect(r.stderr).toContain("during tools/call exec");
    } finally {
      server.kill();
      await server.stop();
    }
  });

  test("token from env, status and call over HTTP, graceful exit on SIGTERM", async () => {
    const server = await HttpServeProcess.start(tw.ws, { ...tw.env, GREX_MCP_TOKEN: "env-token" });
    try {
      expect((await rawPost(server.url, JSON.stringify(INIT_BODY))).status).toBe(401);
      const status = await tw.grex("mcp", "status", "--json", "--url", server.url, "--token", "env-token");
      expect(status.code).toBe(0);
      expect(status.json.transport).toBe("http");
      expect((status.json.tools as unknown[]).length).toBe(11);
      const ls = await tw.grex("mcp", "call", "ls", "--json", "--url", server.url, "--token", "env-token");
      expect(ls.code).toBe(0);
      expect(JSON.stringify(ls.json.structured_content)).toBe((await tw.grex("ls", "--json")).stdout.trim());
      const denied = await tw.grex("mcp", "status", "--url", server.url, "--token", "wrong");
      expect(denied.code).toBe(6);
      expect(denied.stderr).toContain("HTTP 401");
    } finally {
      const code = await server.stop("SIGTERM");
      expect(code).toBe(0);
      expect(server.stderr).toContain("stopping");
    }
  });
});
