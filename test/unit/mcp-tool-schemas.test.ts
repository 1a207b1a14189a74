// What an agent sees in tools/list: the design's 11 tools, every input
// property described, enums published as enums, no parameter that means
// nothing for the tool; messages in tool words; child tools normalised.
import { expect, test } from "bun:test";
import { normaliseTool } from "../../src/mcp/gateway/normalise.ts";
import { inToolWords } from "../../src/mcp/tool-words.ts";
import { MCP_TOOL_NAMES, toolList } from "../../src/mcp/tools.ts";
import { MCP_TOOL_VERBS } from "../../src/verbs/index.ts";

type Schema = { type?: unknown; properties?: Record<string, Schema>; items?: Schema; description?: unknown; enum?: unknown };

test("the 11 tools of the design, teardown not among them", () => {
  expect(MCP_TOOL_NAMES).toEqual(["init", "add", "rm", "ls", "status", "sync", "update", "doctor", "import", "run", "exec"]);
});

test("every property of every tool's inputSchema has a description an agent can act on", async () => {
  const missing: string[] = [];
  let count = 0;
  for (const tool of await toolList()) {
    const props = (tool.inputSchema as Schema).properties ?? {};
    for (const [key, schema] of Object.entries(props)) {
      count++;
      const d = schema.description;
      // A sentence, not a label: long enough to say syntax or default.
      if (typeof d !== "string" || d.length < 25) missing.push(`${tool.name}.${key}`);
      if (/\bdefault\b/i.test(String(d)) === false && schema.type === "boolean") missing.push(`${tool.name}.${key} (no default named)`);
    }
  }
  expect(missing).toEqual([]);
  expect(count).toBeGreaterThan(40);
});

test("enums are published as enums; status and doctor offer no dry_run; CLI-only params stay hidden", async () => {
  const tools = new Map((await toolList()).map((t) => [t.name, t.inputSchema as Schema]));
  const prop = (tool: string, key: string) => tools.get(tool)?.properties?.[key];
  expect(prop("run", "action")?.enum).toEqual(["symlink", "env", "mkdir", "rmdir", "require", "when", "exec"]);
  for (const [tool, key] of [["add", "type"], ["ls", "type"], ["import", "default_type"]] as const) {
    expect(prop(tool, key)?.enum).toEqual(["meta", "declarative", "scripted"]);
  }
  expect(prop("status", "dry_run")).toBeUndefined();
  expect(prop("doctor", "dry_run")).toBeUndefined();
  expect(prop("exec", "shell")).toBeUndefined();
  expect(prop("sync", "allow_outside_home")).toBeUndefined();
  expect(prop("status", "stale_after")?.description).toContain("7d");
  expect(prop("sync", "filter")?.description).toContain("depth<=");
});

test("CLI command lines in messages become tool calls; others stay command lines, marked", () => {
  const tools = MCP_TOOL_VERBS;
  expect(inToolWords("No pack 'x' is registered. See `grex ls`.", tools)).toBe("No pack 'x' is registered. See the ls tool.");
  expect(inToolWords("run `grex rm tools --keep-files` first", tools)).toBe('call the rm tool (id: "tools", keep_files: true) first');
  expect(inToolWords("use `grex add <url>`", tools)).toBe("use the add tool (url)");
  // A quoted argument is one argument; more words than the verb takes leave the line as written.
  expect(inToolWords("give the path: `grex add 'not a url at all' <path>`", tools)).toBe('give the path: the add tool (url: "not a url at all", path)');
  expect(inToolWords("`grex add not a url <path>`", tools)).toBe("`grex add not a url <path>` (on the command line)");
  expect(inToolWords("run `grex init` first", tools)).toBe("call the init tool first");
  expect(inToolWords("run `grex doctor --fix`", tools)).toBe("run `grex doctor --fix` (on the command line)");
  expect(inToolWords("run `grex teardown x`", tools)).toBe("run `grex teardown x` (on the command line)");
  expect(inToolWords("see grex status for what to run", tools)).toBe("see the status tool for what to run");
  expect(inToolWords("commit or stash them, or pass --force", tools)).toBe("commit or stash them, or pass force: true");
  expect(inToolWords("or pass --manifest <path>", tools)).toBe("or pass --manifest <path>");
  expect(inToolWords("(--allow-outside-home)", tools)).toBe("(--allow-outside-home)");
});

test("child tools: a missing or snake_case schema is repaired, annotations never invented, bad names dropped", () => {
  const ok = (raw: unknown) => {
    const n = normaliseTool(raw);
    if (!("tool" in n)) throw new Error(n.dropped);
    return n.tool;
  };
  expect(ok({ name: "a" })).toEqual({ name: "a", inputSchema: { type: "object" } });
  const snake = ok({ name: "b", input_schema: { type: "object", properties: { q: { type: "string" } } } });
  expect(snake).toEqual({ name: "b", inputSchema: { type: "object", properties: { q: { type: "string" } } } });
  expect(ok({ name: "c", inputSchema: "nope", description: 3, annotations: "x" })).toEqual({ name: "c", inputSchema: { type: "object" } });
  expect(ok({ name: "d", inputSchema: { properties: {} } }).inputSchema).toEqual({ properties: {}, type: "object" });
  expect(ok({ name: "e", inputSchema: { type: "string" } }).inputSchema).toEqual({ type: "object" });
  expect(ok({ name: "f.g", annotations: { readOnlyHint: true } })).toEqual({ name: "f.g", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } });
  for (const bad of [{ name: "" }, { name: "has space" }, { name: "x".repeat(129) }, { title: "no name" }, 7]) {
    expect("dropped" in normaliseTool(bad)).toBe(true);
  }
});

test("every tool's input and output schema is valid JSON Schema 2020-12 (no `items: [...]` tuple form)", async () => {
  const { default: Ajv2020 } = await import("ajv/dist/2020.js");
  const ajv = new Ajv2020({ strict: false });
  const invalid: string[] = [];
  for (const tool of await toolList()) {
    for (const [which, schema] of [["input", tool.inputSchema], ["output", tool.outputSchema]] as const) {
      if (!ajv.validateSchema(schema as object)) invalid.push(`${tool.name} ${which}: ${ajv.errorsText(ajv.errors)}`);
    }
  }
  expect(invalid).toEqual([]);
  const doctor = (await toolList()).find((t) => t.name === "doctor");
  expect(JSON.stringify(doctor?.outputSchema)).toContain('"minItems":2');
});

test("status publishes the topic facts and the lockfile warnings in its output schema", async () => {
  const status = (await toolList()).find((t) => t.name === "status");
  const text = JSON.stringify(status?.outputSchema);
  for (const key of ["topic", "upstream", "pushed", "warnings"]) expect(text).toContain(`"${key}"`);
  expect(status?.description).toContain("topic");
});
