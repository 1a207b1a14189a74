// The official MCP SDK Client talking to our McpSession in process: the
// handshake, the published tools, and tool results that match the CLI's --json
// output byte for byte on a real workspace.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { join } from "node:path";
import { MCP_TOOL_NAMES } from "../../src/mcp/tools.ts";
import { MCP_TOOL_VERBS } from "../../src/verbs/index.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

/** The design freezes exactly these 11 tools (teardown is a CLI verb, a lifecycle hook of rm). */
const SPEC_TOOLS = ["init", "add", "rm", "ls", "status", "sync", "update", "doctor", "import", "run", "exec"];

let tw: TestWorkspace;
let client: Client;
let transport: SessionTransport;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-sdk-");
  tw.repo("child-a");
  tw.repo("child-b");
  const meta = tw.repo("meta-basic");
  expect((await tw.grex("init")).code).toBe(0);
  const added = await tw.grex("add", meta, "--json");
  expect(added.code).toBe(0);
  transport = new SessionTransport(serverOptions(tw.ws, tw.env));
  client = new Client({ name: "grex-test", version: "1" });
  await client.connect(transport);
});

afterAll(async () => {
  await client.close();
  tw.cleanup();
});

type ToolResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };
const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;

async function rpcError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
  throw new Error("expected an MCP error");
}

describe("handshake", () => {
  test("server info, protocol version and capabilities", () => {
    expect(client.getServerVersion()).toEqual({ name: "grex", version: expect.any(String) });
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    expect(client.getInstructions()).toContain("grex");
  });

  test("ping", async () => {
    expect(await client.ping()).toEqual({});
  });
});

describe("tools/list", () => {
  test("exactly the 11 tools, driven by one constant", async () => {
    const { tools } = await client.listTools();
    expect(MCP_TOOL_VERBS.length).toBe(11);
    expect(MCP_TOOL_NAMES).toEqual(SPEC_TOOLS);
    expect(tools.map((t) => t.name)).toEqual(SPEC_TOOLS);
  });

  test("every tool has a description, closed input schema, output schema and both safety hints", async () => {
    const { tools } = await client.listTools();
    for (const t of tools) {
      expect(t.description?.length).toBeGreaterThan(10);
      expect(t.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
      expect(t.outputSchema?.type).toBe("object");
      expect(typeof t.annotations?.readOnlyHint).toBe("boolean");
      expect(typeof t.annotations?.destructiveHint).toBe("boolean");
      expect(t.annotations?.title).toBeString();
    }
    const hint = (k: "readOnlyHint" | "destructiveHint") =>
      tools.filter((t) => t.annotations?.[k]).map((t) => t.name).sort();
    expect(hint("readOnlyHint")).toEqual(["doctor", "ls", "status"]);
    expect(hint("destructiveHint")).toEqual(["exec", "rm", "run"]);
  });

  test("agent safety: exec has no shell, doctor has no fix, no tool takes a workspace path", async () => {
    const { tools } = await client.listTools();
    const props = (name: string) => Object.keys((tools.find((t) => t.name === name)?.inputSchema.properties ?? {}) as object);
    expect(props("exec")).not.toContain("shell");
    expect(props("doctor")).not.toContain("fix");
    for (const t of tools) {
      for (const k of Object.keys(t.inputSchema.properties ?? {})) expect(["manifest", "workspace", "cwd"]).not.toContain(k);
    }
  });

  test("arguments are the CLI flag names in snake_case", async () => {
    const { tools } = await client.listTools();
    const props = (name: string) => Object.keys((tools.find((t) => t.name === name)?.inputSchema.properties ?? {}) as object);
    expect(props("sync")).toEqual(expect.arrayContaining(["ids", "only", "ref", "force", "fail_fast", "recursive", "dry_run"]));
    expect(props("import")).toEqual(expect.arrayContaining(["from_repos_json", "scan", "default_type", "migrate_gitignore"]));
  });
});

describe("tools/call", () => {
  test("ls: text is byte-identical to `grex ls --json`, structuredContent is the same object", async () => {
    const cli = await tw.grex("ls", "--json");
    expect(cli.code).toBe(0);
    const r = await call("ls");
    expect(r.isError).toBe(false);
    expect(r.content).toHaveLength(1);
    expect(r.content[0]?.type).toBe("text");
    expect(`${r.content[0]?.text}\n`).toBe(cli.stdout);
    expect(r.structuredContent).toEqual(JSON.parse(cli.stdout));
    expect((r.structuredContent?.packs as unknown[]).length).toBe(3); // meta-basic and its two children
  });

  test("the same holds with arguments, and for status", async () => {
    const cli = await tw.grex("ls", "--long", "--filter", "depth=1", "--json");
    const r = await call("ls", { long: true, filter: "depth=1" });
    expect(`${r.content[0]?.text}\n`).toBe(cli.stdout);
    const st = await tw.grex("status", "--json");
    const rs = await call("status");
    expect(`${rs.content[0]?.text}\n`).toBe(st.stdout);
  });

  test("filter: an array is the union, the same bytes as repeated --filter; a static typo is an isError naming the closest; the description comes from the grammar", async () => {
    const cli = await tw.grex("ls", "--filter", "name=child-a", "--filter", "depth=0", "--json");
    const r = await call("ls", { filter: ["name=child-a", "depth=0"] });
    expect(`${r.content[0]?.text}\n`).toBe(cli.stdout);
    expect((r.structuredContent?.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["meta-basic", "meta-basic/child-a"]);
    const typo = await call("status", { filter: "name=chld-a" });
    expect(typo.isError).toBe(true);
    expect(typo.content[0]?.text).toContain("Did you mean 'child-a'?");
    const { tools } = await client.listTools();
    const { filterDescription } = await import("../../src/core/base/filter.ts");
    for (const name of ["ls", "status", "sync", "update", "exec", "run"]) {
      const props = tools.find((t) => t.name === name)?.inputSchema.properties as Record<string, { description?: string }>;
      expect(props.filter?.description).toContain(filterDescription().slice(0, 60));
    }
  });

  test("a failed operation is an isError result that the SDK accepts against the output schema", async () => {
    const r = await call("add", { url: join(tw.root, "no-such-repo") });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ verb: "add", error: { kind: "pack_op", code: -32002, data: { kind: "pack_op" } } });
    // First the message for the model, then the JSON document.
    expect(r.content[0]?.text).toBe((r.structuredContent?.error as { message: string }).message);
    expect(JSON.parse(r.content[1]?.text as string)).toEqual(r.structuredContent as object);
  });

  test("invalid params → JSON-RPC -32602; unknown tool → -32601", async () => {
    expect((await rpcError(call("ls", { bogus: 1 }))).code).toBe(-32602);
    expect((await rpcError(call("exec", { cmd: "true", shell: true }))).code).toBe(-32602);
    expect((await rpcError(call("nope"))).code).toBe(-32601);
  });

  test("progress: a call with a progress token gets notifications/progress as packs complete", async () => {
    const seen: { progress: number; total?: number }[] = [];
    const r = (await client.callTool({ name: "sync", arguments: {} }, undefined, { onprogress: (p) => seen.push(p) })) as ToolResult;
    expect(r.isError).toBe(false);
    expect(seen.length).toBeGreaterThan(0);
    // Three packs fetched, then the same three set up: one unit each.
    expect(seen.at(-1)?.total).toBe(6);
    expect(seen.at(-1)?.progress).toBe(6);
    for (let i = 1; i < seen.length; i++) expect(seen[i]?.progress).toBeGreaterThan(seen[i - 1]?.progress as number);
  });

  test("concurrent calls share the server and all complete", async () => {
    const results = await Promise.all([call("ls"), call("status"), call("doctor"), call("ls", { tree: true })]);
    expect(results.map((r) => r.isError)).toEqual([false, false, false, false]);
  });
});
