// A deliberately small, hand-written MCP stdio server for `grex mcp` client
// tests (not the SDK, not grex): newline-delimited JSON-RPC, one tool `probe`.
//   bun client-fake-server.ts <mode> [pidfile] [calledfile]
// (pidfile gets the pid at start; calledfile is created when tools/call arrives)
// modes: ok | notify (notifications before the answer) | is-error |
//        die-on-call (exits mid-call) | hang-on-call (never answers the call) |
//        stubborn (hang-on-call, and ignores SIGTERM and stdin EOF)
import { writeFileSync } from "node:fs";
import { readStdinMessages } from "./stdin-messages.ts";

const mode = process.argv[2] ?? "ok";
const pidfile = process.argv[3];
const calledfile = process.argv[4];
if (pidfile) writeFileSync(pidfile, String(process.pid));

if (mode === "stubborn") {
  process.on("SIGTERM", () => {});
  setInterval(() => {}, 60_000);
}

const write = (m: object): void => {
  process.stdout.write(`${JSON.stringify(m)}\n`);
};
const reply = (id: unknown, result: object) => write({ jsonrpc: "2.0", id, result });

function handle(msg: Record<string, unknown>): void {
  const { id, method } = msg;
  if (id === undefined) return; // notifications
  const params = (msg.params ?? {}) as Record<string, unknown>;
  switch (method) {
    case "initialize":
      return reply(id, {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "fake-server", version: "0.0.1" },
      });
    case "tools/list":
      return reply(id, {
        tools: [{ name: "probe", description: "Answers per the server's mode.", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }],
      });
    case "tools/call": {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      if (calledfile) writeFileSync(calledfile, "");
      if (mode === "die-on-call") process.exit(3);
      if (mode === "hang-on-call" || mode === "stubborn") return;
      if (mode === "notify") {
        const token = (params._meta as Record<string, unknown> | undefined)?.progressToken;
        write({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "working" } });
        if (token !== undefined) write({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1, total: 2 } });
        // A response to some other id must be ignored too.
        write({ jsonrpc: "2.0", id: "not-yours", result: {} });
      }
      if (mode === "is-error") return reply(id, { content: [{ type: "text", text: "probe failed: no such thing" }], isError: true });
      return reply(id, { content: [{ type: "text", text: `probe says ${JSON.stringify(args)}` }], structuredContent: { args } });
    }
    case "ping":
      return reply(id, {});
    default:
      write({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${String(method)}` } });
  }
}

await readStdinMessages(handle);
if (mode !== "stubborn") process.exit(0);
