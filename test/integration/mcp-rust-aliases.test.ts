// An agent configured for the Rust grex's MCP server: its argument spellings
// (packRoot, dryRun, fromReposJson, lintConfig) work through the official SDK
// Client; the schemas list only the canonical names; teardown is a tool.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

let tw: TestWorkspace;
let client: Client;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-rust-");
  const teardownUrl = tw.repo("rust-compat/teardown");
  const other = tw.repo("other", { "README.md": "other\n" });
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", teardownUrl)).code).toBe(0);
  writeFileSync(join(tw.ws, "REPOS.json"), JSON.stringify([{ url: other, path: "other" }, { url: "", path: "scripts" }]));
  client = new Client({ name: "rust-configured-agent", version: "1" });
  await client.connect(new SessionTransport(serverOptions(tw.ws, tw.env)));
});

afterAll(async () => {
  await client.close();
  tw.cleanup();
});

type ToolResult = { structuredContent?: Record<string, unknown>; isError?: boolean };
const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;

describe("Rust argument spellings", () => {
  test("sync {packRoot, dryRun}", async () => {
    const r = await call("sync", { packRoot: tw.ws, dryRun: true });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent?.dry_run).toBe(true);
  });

  test("import {fromReposJson, dryRun}: the url-less entry is skipped", async () => {
    const r = await call("import", { fromReposJson: "REPOS.json", dryRun: true });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ dry_run: true, imported: [{ path: "other" }], skipped: [{ path: "scripts" }] });
  });

  test("doctor {lintConfig}", async () => {
    const r = await call("doctor", { lintConfig: true });
    expect(r.structuredContent?.findings).toBeArray();
  });

  test("a packRoot other than the served workspace is -32602 with a clear message", async () => {
    let err: unknown;
    try {
      await call("sync", { packRoot: "/somewhere/else" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32602);
    expect((err as McpError).message).toContain("but this server serves the workspace");
  });

  test("the schemas list only the canonical names", async () => {
    const { tools } = await client.listTools();
    const props = (name: string) => Object.keys((tools.find((t) => t.name === name)?.inputSchema.properties ?? {}) as object);
    expect(props("import")).toContain("from_repos_json");
    for (const t of tools) for (const k of Object.keys(t.inputSchema.properties ?? {})) expect(k).not.toMatch(/[A-Z]/);
    expect(props("sync")).not.toContain("packRoot");
  });
});

describe("teardown", () => {
  test("is a CLI verb, not a tool (a lifecycle hook of rm): not listed, not callable; the CLI still undoes the setup", async () => {
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "teardown")).toBeUndefined();
    const err = await call("teardown", { id: "teardown" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as McpError).code).toBe(-32601);
    expect(existsSync(join(tw.home, ".teardown/rc"))).toBe(true);
    const r = await tw.grex("teardown", "teardown", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ id: "teardown", teardown: "ok" });
    expect(existsSync(join(tw.home, ".teardown"))).toBe(false);
  });
});
