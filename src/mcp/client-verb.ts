// `grex mcp status|call`: a small MCP client for any server, over Streamable
// HTTP (--url, bearer --token) or a stdio server spawned from the command
// after `--`. Not an MCP tool itself. The client (and the SDK) load lazily.
import * as v from "valibot";
import { packOpError, usageError } from "../core/base/errors.ts";
import { findWorkspace } from "../core/base/workspace.ts";
import type { CallResult, ClientTarget, StatusResult, ToolInfo } from "./client.ts";
import { envToken } from "./serve-verb.ts";
import { defineVerb, type RenderStyle, type VerbContext, READS_ONLY } from "../verbs/types.ts";

export const DEFAULT_CLIENT_TIMEOUT_MS = 10_000;
/** Where `grex mcp status|call` looks when given neither --url nor a command: `grex serve --http`'s default address. */
export const DEFAULT_CLIENT_URL = "http://127.0.0.1:8080/mcp";

const Tool = v.object({
  name: v.string(),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  read_only: v.boolean(),
  destructive: v.boolean(),
  idempotent: v.boolean(),
  open_world: v.boolean(),
  input_schema: v.record(v.string(), v.unknown()),
  output_schema: v.optional(v.record(v.string(), v.unknown())),
});

const Status = v.object({
  transport: v.picklist(["http", "sse", "stdio"]),
  endpoint: v.string(),
  server: v.object({ name: v.string(), version: v.string(), title: v.optional(v.string()) }),
  protocol_version: v.string(),
  capabilities: v.record(v.string(), v.unknown()),
  instructions: v.optional(v.string()),
  tools: v.array(Tool),
});

const Call = v.object({
  tool: v.string(),
  is_error: v.boolean(),
  content: v.array(v.record(v.string(), v.unknown())),
  structured_content: v.optional(v.record(v.string(), v.unknown())),
});

const Servers = v.object({
  servers: v.array(
    v.object({
      pack: v.string(),
      id: v.string(),
      transport: v.string(),
      status: v.picklist(["live", "idle", "error"]),
      tool_count: v.nullable(v.number()),
      error: v.optional(v.string()),
      dropped: v.optional(v.array(v.string())),
    }),
  ),
});
type ServersResult = v.InferOutput<typeof Servers>;

type McpResult = StatusResult | CallResult | ServersResult;

const isStatus = (r: McpResult): r is StatusResult => "tools" in r;
const isServers = (r: McpResult): r is ServersResult => "servers" in r;

function renderServers(r: ServersResult): string {
  if (r.servers.length === 0) return "No MCP servers are declared by the installed packs (pack.yaml mcp.servers).";
  const rows = [["PACK", "SERVER", "TRANSPORT", "STATUS", "TOOLS"], ...r.servers.map((s) => [s.pack, s.id, s.transport, s.status, s.tool_count === null ? "?" : String(s.tool_count)])];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  const lines = rows.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  "));
  for (const s of r.servers) if (s.error) lines.push(`${s.id}: ${s.error}`);
  for (const s of r.servers) for (const d of s.dropped ?? []) lines.push(`${s.id}: left out ${d}`);
  return lines.join("\n");
}

/** `--args '{"long":true}'` → the arguments object (usage error otherwise). */
export function parseToolArgs(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/\.$/, "") : "not JSON";
    throw usageError(`Invalid --args: not valid JSON (${why}); pass a JSON object such as '{"long":true}'.`, { field: "args" });
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw usageError(`Invalid --args: tool arguments must be a JSON object such as '{"long":true}'.`, { field: "args" });
  }
  return parsed as Record<string, unknown>;
}

function hints(t: ToolInfo): string {
  const h = [t.read_only ? "read-only" : t.destructive ? "destructive" : "non-destructive"];
  if (t.idempotent) h.push("idempotent");
  if (!t.open_world) h.push("closed-world");
  return h.join(", ");
}

function renderStatus(r: StatusResult, style: RenderStyle): string {
  const bullet = style.plain ? "-" : "•";
  const caps = Object.entries(r.capabilities);
  const out = [
    `Server: ${r.server.name} ${r.server.version}${r.server.title ? ` (${r.server.title})` : ""}`,
    `Protocol: ${r.protocol_version}`,
    `Transport: ${r.transport} ${r.endpoint}`,
    `Capabilities:${caps.length === 0 ? " none" : ""}`,
    ...caps.map(([k, val]) => `  - ${k}: ${JSON.stringify(val)}`),
  ];
  if (r.instructions) {
    const lines = r.instructions.trim().split("\n");
    out.push(lines.length === 1 ? `Instructions: ${lines[0]}` : ["Instructions:", ...lines.map((l) => (l === "" ? "" : `  ${l}`))].join("\n"));
  }
  out.push("", `Tools (${r.tools.length}):`);
  for (const t of r.tools) {
    out.push(`  ${bullet} ${t.name}${t.title ? ` - ${t.title}` : ""}  [${hints(t)}]`);
    if (t.description) out.push(`    ${t.description.replace(/\s*\n\s*/g, " ")}`);
  }
  if (r.tools.length === 0) out.push("  (none)");
  return out.join("\n");
}

export const mcpVerb = defineVerb({
  name: "mcp",
  description:
    "Talk to any MCP server: `mcp status` initializes and lists its tools, `mcp call <tool> [--args JSON]` calls one; connect with --url (Streamable HTTP, bearer --token or env GREX_MCP_TOKEN) or spawn a stdio server given after `--`, or name a server the workspace's packs declare (`mcp status <server>`, `mcp call <server:tool>`; `mcp servers` lists them).",
  params: v.strictObject({
    subcommand: v.string(),
    tool: v.optional(v.string()),
    command: v.optional(v.array(v.string())),
    url: v.optional(v.string()),
    token: v.optional(v.string()),
    args: v.optional(v.string()),
    timeout: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, "must be at least 1 (milliseconds)"))),
  }),
  result: v.union([Status, Call, Servers]) as v.GenericSchema<McpResult>,
  readOnly: false,
  effects: () => READS_ONLY,
  destructive: false,
  mcp: false,
  examples: [
    "grex mcp status -- npx @modelcontextprotocol/server-everything",
    "grex mcp call echo --args '{\"message\":\"hi\"}' -- npx @modelcontextprotocol/server-everything",
    "grex mcp status --url http://127.0.0.1:7421/mcp --token \"$TOKEN\"",
  ],
  cli: {
    args: "<subcommand> [tool] [...command]",
    positionals: ["subcommand", "tool", "...command"],
    flags: [
      { flag: "--url <url>", description: `HTTP endpoint of the server: Streamable HTTP, else legacy SSE (default ${"http://127.0.0.1:8080/mcp"} when no command is given)` },
      { flag: "--token <token>", description: "Bearer token for --url (default: env GREX_MCP_TOKEN, else MCP_TOKEN)" },
      { flag: "--args <json>", description: "Tool arguments for `call`, as a JSON object" },
      { flag: "--timeout <ms>", description: `How long to wait for each answer (default ${DEFAULT_CLIENT_TIMEOUT_MS})`, number: true },
    ],
  },
  async run(ctx, p, signal) {
    const sub = p.subcommand;
    if (sub !== "status" && sub !== "call" && sub !== "servers") {
      throw usageError(`Unknown subcommand 'mcp ${sub}'; use \`grex mcp servers\`, \`grex mcp status\` or \`grex mcp call <tool>\`.`, { field: "subcommand" });
    }
    const command = p.command ?? [];
    if (sub === "servers") {
      const extra = p.tool !== undefined || command.length > 0 ? "a server" : p.url !== undefined ? "--url" : p.args !== undefined ? "--args" : p.token !== undefined ? "--token" : undefined;
      if (extra) throw usageError(`\`grex mcp servers\` takes no ${extra}; it lists the servers the workspace's packs declare.`, { field: "subcommand" });
      findWorkspace(ctx.cwd, ctx.manifest); // outside a workspace: the usual usage error
      const { inspectionGateway } = await import("./gateway/gateway.ts");
      return { servers: await inspectionGateway(ctx.cwd, ctx.manifest, ctx.env, ctx.warn).report() };
    }
    if (p.url === undefined && command.length === 0 && p.tool !== undefined) {
      return callDeclared(ctx, sub, p.tool, p.args, p.timeout, signal);
    }
    if (sub === "status" && p.tool !== undefined) {
      throw usageError(`\`grex mcp status\` takes no tool name with --url or a server command; give the command after \`--\` (grex mcp status -- ${p.tool} …), or a declared server id alone (grex mcp status <server>).`, { field: "tool" });
    }
    if (sub === "call" && p.tool === undefined) {
      throw usageError("`grex mcp call` needs a tool name: grex mcp call <tool> [--args JSON] (--url URL | -- command…).", { field: "tool" });
    }
    if (p.url !== undefined && command.length > 0) {
      throw usageError("Give either --url or a server command after `--`, not both.", { field: "url" });
    }
    // Neither a URL nor a command: the address `grex serve --http` listens on by default.
    const urlText = p.url ?? (command.length === 0 ? DEFAULT_CLIENT_URL : undefined);
    if (urlText !== undefined) {
      let url: URL | undefined;
      try {
        url = new URL(urlText);
      } catch {
        url = undefined;
      }
      if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
        throw usageError(`Invalid --url '${p.url}': use an http:// or https:// address such as http://127.0.0.1:8080/mcp.`, { field: "url" });
      }
    } else if (p.token !== undefined) {
      throw usageError("--token applies to --url only; a spawned stdio server takes its credentials from its own flags or environment.", { field: "token" });
    }
    const toolArgs = sub === "call" ? parseToolArgs(p.args) : {};
    if (sub === "status" && p.args !== undefined) throw usageError("--args applies to `grex mcp call` only.", { field: "args" });
    const token = p.token ?? envToken(ctx.env);
    const target: ClientTarget = {
      cwd: ctx.cwd,
      env: ctx.env,
      timeoutMs: p.timeout ?? DEFAULT_CLIENT_TIMEOUT_MS,
      debug: ctx.debug,
    };
    if (urlText !== undefined) {
      target.url = urlText;
      if (token !== undefined) target.token = token;
    } else target.command = command;
    const client = await import("./client.ts");
    if (sub === "status") return client.mcpStatus(target, signal);
    return client.mcpCall(target, p.tool as string, toolArgs, signal);
  },
  render(r, _p, style) {
    if (isServers(r)) return renderServers(r);
    if (isStatus(r)) return renderStatus(r, style);
    return callText(r);
  },
  failure(r) {
    if (isServers(r) || isStatus(r) || !r.is_error) return undefined;
    return packOpError(`The tool '${r.tool}' returned an error result: ${errorSummary(r)}.`, { tool: r.tool });
  },
});

function callText(r: CallResult): string {
  const parts = r.content.map((c) => {
    if (c.type === "text") return typeof c.text === "string" ? c.text : "";
    if (c.type === "image" || c.type === "audio") {
      const size = typeof c.data === "string" ? Math.floor((c.data.length * 3) / 4) : 0;
      return `[${c.type} ${String(c.mimeType ?? "")}, ${size} bytes]`;
    }
    if (c.type === "resource") {
      const res = c.resource !== null && typeof c.resource === "object" ? (c.resource as Record<string, unknown>) : {};
      return typeof res.text === "string" ? res.text : `[resource ${String(res.uri ?? "")}]`;
    }
    if (c.type === "resource_link") return `[link ${String(c.uri ?? "")}]`;
    return `[${String(c.type)} content]`;
  });
  if (parts.length === 0 && r.structured_content !== undefined) return JSON.stringify(r.structured_content, null, 2);
  return parts.join("\n");
}

/** A one-line reason for an isError result: grex's `error.message`, else the first text line. */
function errorSummary(r: CallResult): string {
  const sc = r.structured_content;
  const err = sc !== undefined && sc.error !== null && typeof sc.error === "object" ? (sc.error as Record<string, unknown>) : undefined;
  let text = typeof err?.message === "string" ? err.message : callText(r).split("\n").find((l) => l.trim() !== "") ?? "no details given";
  text = text.trim().replace(/\.$/, "");
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** `grex mcp status <server>` / `grex mcp call <server:tool>`: a server declared by an installed pack, spawned (or reached) for this one command. */
async function callDeclared(
  ctx: VerbContext,
  sub: "status" | "call",
  name: string,
  args: string | undefined,
  timeout: number | undefined,
  signal: AbortSignal,
): Promise<StatusResult | CallResult> {
  const { inspectionGateway, splitToolName } = await import("./gateway/gateway.ts");
  const parts = sub === "call" ? splitToolName(name) : { server: name, tool: "" };
  if (!parts) {
    throw usageError(`No MCP server given for tool '${name}'; name a declared server's tool as server:tool (\`grex mcp servers\` lists them), or pass --url URL or a command after \`--\`.`, { field: "tool" });
  }
  const toolArgs = sub === "call" ? parseToolArgs(args) : {};
  if (sub === "status" && args !== undefined) throw usageError("--args applies to `grex mcp call` only.", { field: "args" });
  const server = await inspectionGateway(ctx.cwd, ctx.manifest, ctx.env, ctx.warn).find(parts.server);
  if (!server) {
    throw usageError(`No MCP server '${parts.server}' is declared by an installed pack of this workspace; \`grex mcp servers\` lists them.`, { field: "tool" });
  }
  const { childEnv, childHeaders } = await import("./gateway/spawn-spec.ts");
  const target: ClientTarget = { cwd: server.packDir, env: {}, timeoutMs: timeout ?? DEFAULT_CLIENT_TIMEOUT_MS, debug: ctx.debug };
  if (server.decl.transport === "stdio") {
    target.command = server.decl.command ?? [];
    target.env = childEnv(server, ctx.env);
  } else {
    target.url = server.decl.url ?? "";
    target.headers = childHeaders(server, ctx.env);
    if (server.decl.transport === "sse") target.sse = true;
  }
  const client = await import("./client.ts");
  if (sub === "status") return client.mcpStatus(target, signal);
  return client.mcpCall(target, parts.tool, toolArgs, signal);
}
