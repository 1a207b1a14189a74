// Packs that declare MCP servers (pack.yaml mcp.servers) for gateway tests:
// the official server-everything, and our misbehaving fixture server.
import { join } from "node:path";
import { DEFAULT_CHILD_IDLE_MS, type GatewayOptions } from "../../src/mcp/gateway/types.ts";

export const FIXTURE_SERVER = join(import.meta.dir, "mcp-fixture-server.ts");
export const EVERYTHING = join(import.meta.dir, "..", "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");

/** A declarative pack.yaml whose `mcp.servers` items are given as YAML text (each starting with "    - id: ..."). */
export function serversPackYaml(name: string, servers: string[]): string {
  return [`schema_version: "1"`, `name: ${name}`, "type: declarative", "mcp:", "  servers:", ...servers, ""].join("\n");
}

/** server-everything over stdio, run by this bun, limited to `tools`. */
export function everythingServer(id: string, tools: string[]): string {
  return [
    `    - id: ${id}`,
    "      transport: stdio",
    `      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(EVERYTHING)}, stdio]`,
    `      tools: [${tools.join(", ")}]`,
  ].join("\n");
}

/** Gateway options for a test workspace: logs and child stderr lines go to `logs`; `over` replaces any field. */
export function gatewayOptions(ws: { ws: string; env: GatewayOptions["env"] }, logs: string[], over: Partial<GatewayOptions> = {}): GatewayOptions {
  return {
    cwd: ws.ws,
    manifest: undefined,
    env: ws.env,
    version: "test",
    maxChildren: 16,
    idleMs: DEFAULT_CHILD_IDLE_MS,
    approve: [],
    log: (m) => logs.push(m),
    childStderr: (server, line) => logs.push(`[${server}] ${line}`),
    ...over,
  };
}
