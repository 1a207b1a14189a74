// Plain-HTTP MCP clients (curl and friends): a POST whose Accept lacks
// text/event-stream is answered with application/json; `--stateless` needs no
// session id; MCP_TOKEN stands in for GREX_MCP_TOKEN.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { serveHttp } from "../../src/mcp/http.ts";
import { HttpServeProcess, INIT_BODY, rawPost } from "../helpers/http-serve.ts";
import { serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(30_000);

let tw: TestWorkspace;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-plain-");
  expect((await tw.grex("init")).code).toBe(0);
});

afterAll(() => tw.cleanup());

const JSON_ONLY = { Accept: "application/json" };
const callLs = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "ls", arguments: {} } });

describe("--stateless with MCP_TOKEN (the curl flow)", () => {
  test("initialize, then tools/call, each a plain JSON POST with a bearer token and no session id", async () => {
    const env: Record<string, string | undefined> = { ...tw.env, MCP_TOKEN: "curl-secret" };
    delete env.GREX_MCP_TOKEN;
    const server = await HttpServeProcess.start(tw.ws, env, ["--stateless"]);
    try {
      const auth = { ...JSON_ONLY, Authorization: "Bearer curl-secret" };
      const init = await rawPost(server.url, JSON.stringify(INIT_BODY), auth);
      expect(init.status).toBe(200);
      expect(init.headers.get("content-type")).toContain("application/json");
      expect(init.headers.get("mcp-session-id")).toBeNull();
      const initBody = (await init.json()) as { result: { serverInfo: { name: string } } };
      expect(initBody.result.serverInfo.name).toBe("grex");

      const ls = await rawPost(server.url, callLs(2), auth);
      expect(ls.status).toBe(200);
      expect(ls.headers.get("content-type")).toContain("application/json");
      const body = (await ls.json()) as { id: number; result: { isError: boolean; structuredContent: Record<string, unknown> } };
      expect(body.id).toBe(2);
      expect(body.result.isError).toBe(false);
      expect(body.result.structuredContent).toHaveProperty("packs");

      const note = await rawPost(server.url, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), auth);
      expect(note.status).toBe(202);
      expect((await rawPost(server.url, callLs(3), JSON_ONLY)).status).toBe(401);
      expect((await rawPost(server.url, callLs(3), { ...JSON_ONLY, Authorization: "Bearer wrong" })).status).toBe(401);
      const get = await fetch(server.url, { headers: { Authorization: "Bearer curl-secret" } });
      expect(get.status).toBe(405);
    } finally {
      await server.stop();
    }
  });
});

describe("stateful sessions answered with JSON", () => {
  test("an initialize whose Accept lacks text/event-stream opens a session answered with JSON throughout", async () => {
    const s = await serveHttp({ addr: "127.0.0.1:0", token: undefined, server: serverOptions(tw.ws, tw.env), log: () => {} });
    try {
      const init = await rawPost(s.url, JSON.stringify(INIT_BODY), JSON_ONLY);
      expect(init.status).toBe(200);
      expect(init.headers.get("content-type")).toContain("application/json");
      const sid = init.headers.get("mcp-session-id");
      expect(sid).toBeString();
      const ls = await rawPost(s.url, callLs(2), { ...JSON_ONLY, "Mcp-Session-Id": sid as string, "Mcp-Protocol-Version": "2025-06-18" });
      expect(ls.status).toBe(200);
      expect(ls.headers.get("content-type")).toContain("application/json");
      expect(((await ls.json()) as { result: { isError: boolean } }).result.isError).toBe(false);
    } finally {
      await s.stop();
    }
  });

  test("a JSON-only POST in a session opened with SSE still gets a JSON answer", async () => {
    const s = await serveHttp({ addr: "127.0.0.1:0", token: undefined, server: serverOptions(tw.ws, tw.env), log: () => {} });
    try {
      const init = await rawPost(s.url, JSON.stringify(INIT_BODY));
      expect(init.headers.get("content-type")).toContain("text/event-stream");
      const sid = init.headers.get("mcp-session-id") as string;
      await init.text();
      const ls = await rawPost(s.url, callLs(2), { ...JSON_ONLY, "Mcp-Session-Id": sid });
      expect(ls.status).toBe(200);
      expect(ls.headers.get("content-type")).toContain("application/json");
      const body = (await ls.json()) as { id: number; result: { isError: boolean } };
      expect(body.id).toBe(2);
      expect(body.result.isError).toBe(false);
    } finally {
      await s.stop();
    }
  });
});
