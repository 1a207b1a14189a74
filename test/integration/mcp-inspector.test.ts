// A real third-party MCP client: the MCP Inspector's CLI lists grex's tools and calls ls.
import { afterAll, expect, test } from "bun:test";
import { dirname, join } from "node:path";
import { MCP_TOOL_VERBS } from "../../src/verbs/index.ts";
import { everythingServer, serversPackYaml } from "../helpers/mcp-gateway.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

const inspector = join(dirname(require.resolve("@modelcontextprotocol/inspector-cli/package.json")), "build", "index.js");
const t = new TestWorkspace();
afterAll(() => t.cleanup());

// The inspector finds its own package.json relative to the working directory, so run it from its build dir.
function inspect(...args: string[]): unknown {
  const r = Bun.spawnSync(
    ["node", inspector, process.execPath, GREX_MAIN, "serve", "--manifest", join(t.ws, "grex.jsonl"), ...args],
    { cwd: dirname(inspector), env: t.env, stdout: "pipe", stderr: "pipe", timeout: 30_000 },
  );
  if (r.exitCode !== 0) throw new Error(`inspector failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString());
}

test("the inspector lists the 11 tools and calls ls", async () => {
  expect((await t.grex("init")).code).toBe(0);
  expect((await t.grex("add", t.repo("notes", { "n.md": "n\n" }))).code).toBe(0);
  const list = inspect("--method", "tools/list") as { tools: Array<{ name: string }> };
  expect(list.tools.map((x) => x.name).sort()).toEqual(MCP_TOOL_VERBS.map((v) => v.name).sort());
  expect(list.tools).toHaveLength(11);
  const call = inspect("--method", "tools/call", "--tool-name", "ls") as { structuredContent: unknown; content: Array<{ text: string }> };
  const cli = await t.grex("ls", "--json");
  expect(call.content[0]?.text).toBe(cli.stdout.trimEnd());
  expect(call.structuredContent).toEqual(cli.json);
}, 60_000);

test("with a pack-declared server, the inspector also lists and calls its tools", async () => {
  const pack = t.repo("with-servers", { ".grex/pack.yaml": serversPackYaml("with-servers", [everythingServer("everything", ["echo", "get-sum"])]) });
  expect((await t.grex("add", pack)).code).toBe(0);
  const list = inspect("--method", "tools/list") as { tools: Array<{ name: string }> };
  expect(list.tools.map((x) => x.name).sort()).toEqual([...MCP_TOOL_VERBS.map((v) => v.name), "everything__echo", "everything__get-sum"].sort());
  const call = inspect("--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=hi") as { content: Array<{ text: string }> };
  expect(call.content[0]?.text).toContain("hi");
}, 60_000);
