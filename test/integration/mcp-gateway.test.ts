// The gateway: MCP servers declared in pack.yaml served behind `grex serve`.
// Real child processes (a fixture server that misbehaves on demand, and the
// official server-everything), an SDK Client over an in-process duplex and
// against a spawned `grex serve`, and a streamable-http child on loopback.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Gateway } from "../../src/mcp/gateway/gateway.ts";
import type { GatewayOptions } from "../../src/mcp/gateway/types.ts";
import { serveHttp, type HttpServer } from "../../src/mcp/http.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { FIXTURE_SERVER, everythingServer, gatewayOptions, serversPackYaml as packYaml } from "../helpers/mcp-gateway.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";
import { running } from "../helpers/process.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(30_000);


type ToolResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

let tw: TestWorkspace;
let logFile: string;
const gateways: Gateway[] = [];
const clients: Client[] = [];

function fixtureServer(id: string, extra = ""): string {
  return [
    `    - id: ${id}`,
    "      transport: stdio",
    `      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(FIXTURE_SERVER)}]`,
    `      env: { FIXTURE_NAME: ${id}, FIXTURE_LOG: ${JSON.stringify(logFile)}, FROM_GREX: "$GATEWAY_TEST_VALUE" }`,
    ...(extra ? [extra] : []),
  ].join("\n");
}

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-gateway-");
  logFile = join(tw.root, "fixture.log");
  const tools = tw.repo("tools-pack", {
    ".grex/pack.yaml": packYaml("tools-pack", [
      fixtureServer("fix-a", "      approval: [write]"),
      fixtureServer("fix-b"),
      fixtureServer("fix-c"),
      everythingServer("everything", ["echo", "get-sum", "trigger-long-running-operation"]),
    ]),
  });
  expect((await tw.grex("init")).code).toBe(0);
  const added = await tw.grex("add", tools);
  expect(added.stderr).toBe("");
  expect(added.code).toBe(0);
});

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  tw.cleanup();
});

function gateway(over: Partial<GatewayOptions> = {}, logs: string[] = []): Gateway {
  const g = new Gateway(gatewayOptions(tw, logs, { env: { ...tw.env, GATEWAY_TEST_VALUE: "expanded", REMOTE_TOKEN: "remote-secret" }, ...over }));
  gateways.push(g);
  return g;
}

async function connect(g: Gateway, opts: { elicit?: "accept" | "decline" | "cancel"; readOnly?: boolean } = {}): Promise<Client> {
  const transport = new SessionTransport({ ...serverOptions(tw.ws, tw.env), gateway: g, readOnly: opts.readOnly === true });
  const client = new Client({ name: "gateway-test", version: "1" }, { capabilities: opts.elicit ? { elicitation: {} } : {} });
  if (opts.elicit) {
    const action = opts.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      expect(req.params.message).toContain("fix-a");
      return action === "accept" ? { action, content: { approve: true } } : { action };
    });
  }
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown> = {}, options?: Parameters<Client["callTool"]>[2]) =>
  client.callTool({ name, arguments: args }, undefined, options) as Promise<ToolResult>;
const textOf = (r: ToolResult) => r.content.map((c) => c.text).join("\n");
const fixtureLog = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");

/** Poll `cond` until it holds (a guard against hangs, not a timing assertion). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const alive = running;

describe("tools/list", () => {
  test("grex's tools plus each declared server's allow-listed tools as server__tool, schemas and annotations passed through", async () => {
    const client = await connect(gateway());
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names.slice(0, 11)).toEqual(["init", "add", "rm", "ls", "status", "sync", "update", "doctor", "import", "run", "exec"]);
    for (const id of ["fix-a", "fix-b", "fix-c"]) expect(names).toContain(`${id}__echo`);
    expect(names.filter((n) => n.startsWith("everything__")).sort()).toEqual(["everything__echo", "everything__get-sum", "everything__trigger-long-running-operation"]);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_-]+$/);
    const echo = tools.find((t) => t.name === "fix-a__echo");
    expect(echo?.inputSchema).toEqual({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
    expect(echo?.annotations).toEqual({ readOnlyHint: true });
    expect(echo?.description).toContain("'fix-a'");
    expect(echo?.description).toContain("tools-pack");
    const sum = tools.find((t) => t.name === "everything__get-sum");
    expect(sum?.annotations?.readOnlyHint).toBe(true);
    expect(sum?.inputSchema.properties).toHaveProperty("a");
  });

  test("the tool lists are cached under .grex/.state: a new gateway lists them without spawning anything", async () => {
    const cacheDir = join(tw.ws, ".grex", ".state", "mcp-tools");
    expect(readdirSync(cacheDir).filter((f) => !f.endsWith(".status.json")).sort()).toEqual(["everything.json", "fix-a.json", "fix-b.json", "fix-c.json"]);
    const before = fixtureLog().split("\n").filter((l) => l.includes("started")).length;
    const g = gateway();
    const tools = await g.listTools(false);
    expect(tools.map((t) => t.name)).toContain("fix-b__echo");
    expect(g.liveCount()).toBe(0);
    expect(fixtureLog().split("\n").filter((l) => l.includes("started")).length).toBe(before);
  });

  test("--read-only lists and allows only read-only tools, grex's and the children's", async () => {
    const client = await connect(gateway(), { readOnly: true });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("ls");
    expect(names).toContain("fix-a__echo");
    expect(names).not.toContain("sync");
    expect(names).not.toContain("fix-a__write");
    const refused = await call(client, "fix-a__write", { text: "x" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).message).toContain("--read-only");
    const sync = await call(client, "sync").catch((e: unknown) => e);
    expect((sync as McpError).message).toContain("--read-only");
  });
});

describe("tools/call", () => {
  test("calls are routed to the right child, under server__tool and server:tool; notifications before replies are skipped", async () => {
    const client = await connect(gateway());
    const r = await call(client, "fix-b__echo", { text: "hello" });
    expect(r.isError).toBeUndefined();
    expect(textOf(r)).toBe("hello");
    expect(textOf(await call(client, "fix-c:echo", { text: "colon" }))).toBe("colon");
    expect(textOf(await call(client, "everything__get-sum", { a: 2, b: 3 }))).toContain("5");
    expect(fixtureLog()).toContain('fix-b call echo {"text":"hello"}');
    expect(fixtureLog()).toContain('fix-c call echo {"text":"colon"}');
  });

  test("the child gets only its declared env (expanded) plus PATH, HOME and LANG", async () => {
    const client = await connect(gateway());
    expect(textOf(await call(client, "fix-b__env", { name: "FROM_GREX" }))).toBe("expanded");
    expect(textOf(await call(client, "fix-b__env", { name: "GATEWAY_TEST_VALUE" }))).toBe("(unset)");
    expect(textOf(await call(client, "fix-b__env", { name: "HOME" }))).toBe(tw.home);
  });

  test("a tool outside the allow-list or unknown is -32601", async () => {
    const client = await connect(gateway());
    const err = await call(client, "everything__get-env").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32601);
  });

  test("a crash mid-call is an isError naming the server, exit status and stderr; the next call respawns", async () => {
    const g = gateway();
    const client = await connect(g);
    const firstPid = Number(textOf(await call(client, "fix-a__pid")));
    const crashed = await call(client, "fix-a__crash", { code: 7 });
    expect(crashed.isError).toBe(true);
    expect(textOf(crashed)).toContain("'fix-a'");
    expect(textOf(crashed)).toContain("status 7");
    expect(textOf(crashed)).toContain("crashing on demand");
    const again = Number(textOf(await call(client, "fix-a__pid")));
    expect(again).not.toBe(firstPid);
    expect(alive(firstPid)).toBe(false);
  });

  test("a server that keeps crashing is held back (status error) instead of respawned at once", async () => {
    const g = gateway();
    const client = await connect(g);
    for (let i = 0; i < 3; i++) {
      const crashed = await call(client, "fix-c__crash", { code: 1 });
      expect(crashed.isError).toBe(true);
      expect(textOf(crashed)).toContain(i < 2 ? "The next call starts it again." : "grex waits");
    }
    expect(g.status("fix-c")).toBe("error");
    const held = await call(client, "fix-c__echo", { text: "x" });
    expect(held.isError).toBe(true);
    expect(textOf(held)).toContain("3 times in a row");
  });

  test("a server that cannot start: an isError naming it, status error; every other tool keeps working", async () => {
    const logs: string[] = [];
    const g = gateway({ env: { ...tw.env } }, logs);
    const client = await connect(g);
    const r = await call(client, "fix-a__echo", { text: "x" });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain("'fix-a'");
    expect(textOf(r)).toContain("$GATEWAY_TEST_VALUE");
    expect(g.status("fix-a")).toBe("error");
    expect(textOf(await call(client, "everything__echo", { message: "still here" }))).toContain("still here");
    expect((await call(client, "ls")).isError).toBe(false);
  });

  test("cancellation reaches the child's request", async () => {
    const client = await connect(gateway());
    const abort = new AbortController();
    const pending = call(client, "fix-b__hang", {}, { signal: abort.signal }).catch((e: unknown) => e);
    await until(() => fixtureLog().includes("fix-b hanging"), "the hang call to reach the child");
    const hangId = /fix-b hanging (\d+)/.exec(fixtureLog())?.[1];
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => fixtureLog().includes(`fix-b cancelled ${hangId}`), "the cancellation to reach the child");
  });

  test("the child's progress reaches the client under the client's token", async () => {
    const client = await connect(gateway());
    const seen: number[] = [];
    const r = await call(client, "fix-b__progress", { steps: 3 }, { onprogress: (p) => seen.push(p.progress) });
    expect(textOf(r)).toBe("did 3 steps");
    expect(seen).toEqual([1, 2, 3]);
    const seenEverything: number[] = [];
    await call(client, "everything__trigger-long-running-operation", { duration: 0.2, steps: 2 }, { onprogress: (p) => seenEverything.push(p.progress) });
    expect(seenEverything.length).toBeGreaterThan(0);
  });
});

describe("approvals", () => {
  test("accepted through elicitation: the call runs", async () => {
    const client = await connect(gateway(), { elicit: "accept" });
    expect(textOf(await call(client, "fix-a__write", { text: "ok" }))).toBe("wrote ok");
  });

  test("declined or cancelled: isError 'not approved', nothing runs", async () => {
    for (const action of ["decline", "cancel"] as const) {
      const client = await connect(gateway(), { elicit: action });
      const r = await call(client, "fix-a__write", { text: `no-${action}` });
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain("not approved");
      expect(fixtureLog()).not.toContain(`no-${action}`);
    }
  });

  test("a client without elicitation gets an isError that says how to pre-approve; --approve lets it through", async () => {
    const client = await connect(gateway());
    const r = await call(client, "fix-a__write", { text: "blocked" });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain("grex serve --approve fix-a:write");
    const approved = await connect(gateway({ approve: ["fix-a:*"] }));
    expect(textOf(await call(approved, "fix-a__write", { text: "pre" }))).toBe("wrote pre");
  });
});

describe("connection cache", () => {
  test("LRU eviction at the cap closes the least recently used child", async () => {
    const g = gateway({ maxChildren: 2 });
    const client = await connect(g);
    const pidA = Number(textOf(await call(client, "fix-a__pid")));
    await call(client, "fix-b__pid");
    await call(client, "fix-a__pid");
    const pidB = g.pidOf("fix-b") as number;
    await call(client, "fix-c__pid");
    await until(() => !alive(pidB), "fix-b to be evicted and reaped");
    expect(g.liveCount()).toBe(2);
    expect(g.pidOf("fix-a")).toBe(pidA);
    expect(g.pidOf("fix-b")).toBeNull();
  });

  test("a child idle for the timeout is closed and reaped; the next call respawns it", async () => {
    const g = gateway({ idleMs: 50 });
    const client = await connect(g);
    const pid = Number(textOf(await call(client, "fix-b__pid")));
    await until(() => g.liveCount() === 0 && !alive(pid), "the idle child to be closed");
    expect(g.status("fix-b")).toBe("idle");
    expect(Number(textOf(await call(client, "fix-b__pid")))).not.toBe(pid);
  });

  test("a child that ignores SIGTERM is killed with SIGKILL on close", async () => {
    const g = gateway();
    const client = await connect(g);
    const pid = Number(textOf(await call(client, "fix-a__pid")));
    expect(textOf(await call(client, "fix-a__ignore-term"))).toBe("ignoring SIGTERM");
    await g.close();
    expect(alive(pid)).toBe(false);
    expect(fixtureLog()).toContain("fix-a ignored SIGTERM");
  });

  test("close() stops every child and reaps it", async () => {
    const g = gateway();
    const client = await connect(g);
    const pids = [Number(textOf(await call(client, "fix-a__pid"))), Number(textOf(await call(client, "fix-b__pid")))];
    await g.close();
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });
});

describe("a streamable-http child and tools/list_changed", () => {
  let remote: HttpServer;
  let remoteWs: TestWorkspace;

  beforeAll(async () => {
    remoteWs = new TestWorkspace("grex-mcp-gateway-remote-");
    expect((await remoteWs.grex("init")).code).toBe(0);
    remote = await serveHttp({ addr: "127.0.0.1:0", token: "remote-secret", server: serverOptions(remoteWs.ws, remoteWs.env), log: () => {} });
  });

  afterAll(async () => {
    await remote.stop();
    remoteWs.cleanup();
  });

  test("`grex add` of a pack that declares a server sends list_changed; its tools are then listed and callable over HTTP", async () => {
    const logs: string[] = [];
    const g = gateway({}, logs);
    const client = await connect(g);
    await client.listTools();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++;
    });
    const pack = tw.repo("remote-pack", {
      ".grex/pack.yaml": packYaml("remote-pack", [
        ["    - id: remote", "      transport: streamable-http", `      url: ${remote.url}`, '      headers: { Authorization: "Bearer $REMOTE_TOKEN" }', "      tools: [ls, status]"].join("\n"),
      ]),
    });
    const added = await call(client, "add", { url: pack });
    expect(added.isError).toBe(false);
    await until(() => changed > 0, "notifications/tools/list_changed");
    expect(logs.filter((l) => !l.startsWith("[everything]"))).toEqual([]);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names.filter((n) => n.startsWith("remote__")).sort()).toEqual(["remote__ls", "remote__status"]);
    const ls = await call(client, "remote__ls");
    expect(ls.isError).toBe(false);
    expect(ls.structuredContent).toHaveProperty("packs");

    // The remote restarts (same address, its sessions gone): one call fails naming the server, the next reconnects.
    const port = new URL(remote.url).port;
    await remote.stop();
    remote = await serveHttp({ addr: `127.0.0.1:${port}`, token: "remote-secret", server: serverOptions(remoteWs.ws, remoteWs.env), log: () => {} });
    const lost = await call(client, "remote__ls");
    expect(lost.isError).toBe(true);
    expect(textOf(lost)).toContain("'remote'");
    expect((await call(client, "remote__ls")).isError).toBe(false);
  });
});

describe("over Streamable HTTP", () => {
  test("approval by elicitation and progress reach an HTTP client through its SSE stream", async () => {
    const g = gateway();
    const http = await serveHttp({ addr: "127.0.0.1:0", token: undefined, server: { ...serverOptions(tw.ws, tw.env), gateway: g }, log: () => {} });
    const client = new Client({ name: "gateway-http-test", version: "1" }, { capabilities: { elicitation: {} } });
    let asked = "";
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked = req.params.message;
      return { action: "accept", content: { approve: true } };
    });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      expect(textOf(await call(client, "fix-a__write", { text: "over http" }))).toBe("wrote over http");
      expect(asked).toContain("'write'");
      const seen: number[] = [];
      await call(client, "fix-b__progress", { steps: 2 }, { onprogress: (p) => seen.push(p.progress) });
      expect(seen).toEqual([1, 2]);
    } finally {
      await client.close();
      await http.stop();
    }
  });
});

describe("over plain JSON HTTP", () => {
  test("a call that needs approval fails at once with an explanation when the answer must be plain JSON", async () => {
    const g = gateway();
    const http = await serveHttp({ addr: "127.0.0.1:0", token: undefined, server: { ...serverOptions(tw.ws, tw.env), gateway: g }, log: () => {} });
    try {
      const post = (body: object, sid?: string) =>
        fetch(http.url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json", ...(sid ? { "Mcp-Session-Id": sid } : {}) },
          body: JSON.stringify(body),
        });
      const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: { elicitation: {} }, clientInfo: { name: "raw", version: "1" } } });
      const sid = init.headers.get("mcp-session-id") as string;
      await init.json();
      const res = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "fix-a__write", arguments: { text: "json" } } }, sid);
      const body = (await res.json()) as { result: ToolResult };
      expect(body.result.isError).toBe(true);
      expect(textOf(body.result)).toContain("plain JSON");
      expect(textOf(body.result)).toContain("--approve fix-a:write");
    } finally {
      await http.stop();
    }
  });
});

describe("changes made outside this server", () => {
  test("`grex add` run elsewhere (the CLI) sends list_changed too", async () => {
    const g = gateway();
    const client = await connect(g);
    const before = (await client.listTools()).tools.length;
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++;
    });
    const pack = tw.repo("cli-added", { ".grex/pack.yaml": packYaml("cli-added", [fixtureServer("fix-cli")]) });
    expect((await tw.grex("add", pack)).code).toBe(0);
    await until(() => changed > 0, "notifications/tools/list_changed after the CLI's add");
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names.length).toBeGreaterThan(before);
    expect(names).toContain("fix-cli__echo");

    // rm takes the server away again: list_changed, its tools gone, its running child stopped.
    const pid = Number(textOf(await call(client, "fix-cli__pid")));
    const seen = changed;
    expect((await tw.grex("rm", "cli-added")).code).toBe(0);
    await until(() => changed > seen, "notifications/tools/list_changed after rm");
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain("fix-cli__echo");
    await until(() => !alive(pid), "the removed server's child to be stopped");
  });

  test("a workspace whose manifest cannot be read still serves grex's own tools", async () => {
    const broken = new TestWorkspace("grex-mcp-gateway-broken-");
    try {
      expect((await broken.grex("init")).code).toBe(0);
      await Bun.write(join(broken.ws, "grex.lock.jsonl"), "not json\nnot json either\n");
      const logs: string[] = [];
      const g = new Gateway({ cwd: broken.ws, manifest: undefined, env: broken.env, version: "t", maxChildren: 2, idleMs: 1000, approve: [], log: (m) => logs.push(m), childStderr: () => {} });
      gateways.push(g);
      expect(await g.listTools(false)).toEqual([]);
      expect(logs.join("\n")).toContain("serving grex's own tools only");
    } finally {
      broken.cleanup();
    }
  });
});

describe("grex mcp servers | status <server> | call <server:tool>", () => {
  test("servers lists the declared servers with pack, transport, status and tool count", async () => {
    const r = await tw.grex("mcp", "servers", "--json");
    expect(r.code).toBe(0);
    const servers = r.json.servers as { pack: string; id: string; transport: string; status: string; tool_count: number | null }[];
    const fixB = servers.find((s) => s.id === "fix-b");
    expect(fixB).toMatchObject({ pack: "tools-pack", transport: "stdio", tool_count: 8 });
    expect(["live", "idle", "error"]).toContain(fixB?.status as string);
    expect(servers.find((s) => s.id === "everything")?.tool_count).toBe(3);
    const text = await tw.grex("mcp", "servers");
    expect(text.stdout).toContain("tools-pack");
    expect(text.stdout).toContain("fix-b");
  });

  test("status <server> and call <server:tool> spawn the declared server for one command", async () => {
    const status = await tw.grex("mcp", "status", "everything", "--json");
    expect(status.code).toBe(0);
    expect((status.json.tools as { name: string }[]).map((t) => t.name)).toContain("get-sum");
    const called = await tw.grex("mcp", "call", "everything:echo", "--args", '{"message":"from the cli"}');
    expect(called.code).toBe(0);
    expect(called.stdout).toContain("from the cli");
    const unset = await tw.grex("mcp", "status", "fix-b");
    expect(unset.code).toBe(4);
    expect(unset.stderr).toContain("$GATEWAY_TEST_VALUE");
    const unknown = await tw.grex("mcp", "call", "nope:echo");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("No MCP server 'nope'");
  });
});

/** `grex serve [args]` as a process with an SDK client over stdio; GATEWAY_TEST_VALUE set to `value`. */
async function spawnServe(args: string[], value: string) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GREX_MAIN, "serve", ...args],
    cwd: tw.ws,
    env: Object.fromEntries(Object.entries({ ...tw.env, GATEWAY_TEST_VALUE: value }).filter((e): e is [string, string] => e[1] !== undefined)),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const client = new Client({ name: "gateway-process-test", version: "1" });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

describe("grex serve as a process", () => {
  test("an SDK client over stdio lists and calls a child tool; the children are reaped when the client closes", async () => {
    const served = await spawnServe([], "spawned");
    const client = served.client;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("fix-b__echo");
    expect(names).toContain("fix-a__write");
    const pid = Number(textOf(await call(client, "fix-b__pid")));
    expect(alive(pid)).toBe(true);
    expect(textOf(await call(client, "fix-b__env", { name: "FROM_GREX" }))).toBe("spawned");
    await call(client, "fix-b__crash", { code: 5 });
    await client.close();
    await until(() => !alive(pid), "the child to be reaped");
    expect(served.stderr()).toContain("[fix-b] fixture: crashing on demand");
  });

  test("SIGTERM to grex serve stops and reaps its children before it exits", async () => {
    const { client, transport } = await spawnServe([], "term");
    const childPid = Number(textOf(await call(client, "fix-b__pid")));
    const grexPid = transport.pid as number;
    process.kill(grexPid, "SIGTERM");
    await until(() => !alive(grexPid), "grex serve to exit");
    expect(alive(childPid)).toBe(false);
    await client.close().catch(() => {});
  });

  test("bad serve flags are usage errors", async () => {
    const approve = await tw.grex("serve", "--approve", "fix-a");
    expect(approve.code).toBe(2);
    expect(approve.stderr).toContain("Invalid --approve 'fix-a'");
    const stateless = await tw.grex("serve", "--stateless");
    expect(stateless.code).toBe(2);
    expect(stateless.stderr).toContain("--http only");
  });

  test("serve flags: --read-only, --approve, --max-children, --child-idle", async () => {
    const { client } = await spawnServe(["--read-only", "--approve", "fix-a:*", "--max-children", "1", "--child-idle", "60000"], "flags");
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("ls");
    expect(names).toContain("fix-a__echo");
    expect(names).not.toContain("sync");
    expect(names).not.toContain("fix-a__write");
    const pidA = Number(textOf(await call(client, "fix-a__pid")));
    await call(client, "fix-b__pid");
    await until(() => !alive(pidA), "fix-a to be evicted (cap 1)");
    await client.close();
  });
});
