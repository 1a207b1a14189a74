// A small stdio MCP server for gateway tests, written without the SDK so it can
// misbehave on purpose: every reply is preceded by a notification, `crash`
// exits mid-call, `hang` never answers (and records the cancellation it gets),
// `progress` reports progress under the caller's token, it keeps running after
// stdin closes, and `ignore-term` makes it ignore SIGTERM. Events are appended to
// $FIXTURE_LOG when set (one line each), so tests can see what reached it.
import { appendFileSync } from "node:fs";
import { readStdinMessages } from "./stdin-messages.ts";

const name = process.env.FIXTURE_NAME ?? "fixture";
const logFile = process.env.FIXTURE_LOG;
const record = (line: string) => {
  if (logFile) appendFileSync(logFile, `${name} ${line}\n`);
};
record(`started ${process.pid}`);

const tools = [
  { name: "echo", description: "Echo the text back.", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, annotations: { readOnlyHint: true } },
  { name: "write", description: "Pretend to write something.", inputSchema: { type: "object", properties: { text: { type: "string" } } }, annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: "crash", description: "Exit at once with the given status.", inputSchema: { type: "object", properties: { code: { type: "integer" } } } },
  { name: "hang", description: "Never answer.", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } },
  { name: "progress", description: "Report progress, then answer.", inputSchema: { type: "object", properties: { steps: { type: "integer" } } }, annotations: { readOnlyHint: true } },
  { name: "pid", description: "Answer with the process id.", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } },
  { name: "ignore-term", description: "Ignore SIGTERM from now on (only SIGKILL stops it).", inputSchema: { type: "object", properties: {} } },
  { name: "env", description: "Answer with one environment variable.", inputSchema: { type: "object", properties: { name: { type: "string" } } }, annotations: { readOnlyHint: true } },
];

const out = (msg: object) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const text = (t: string) => ({ content: [{ type: "text", text: t }] });

function reply(id: unknown, result: object) {
  // A notification first: the client must not take it for the answer.
  out({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: `about to answer ${String(id)}` } });
  out({ jsonrpc: "2.0", id, result });
}

async function handle(msg: Record<string, unknown>) {
  const id = msg.id;
  const params = (msg.params ?? {}) as Record<string, unknown>;
  switch (msg.method) {
    case "initialize":
      return reply(id, { protocolVersion: String(params.protocolVersion ?? "2025-06-18"), capabilities: { tools: {}, logging: {} }, serverInfo: { name, version: "1.0.0" } });
    case "notifications/initialized":
      return;
    case "notifications/cancelled":
      record(`cancelled ${String(params.requestId)}`);
      return;
    case "ping":
      return reply(id, {});
    case "tools/list":
      return reply(id, { tools });
    case "tools/call": {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      const token = (params._meta as Record<string, unknown> | undefined)?.progressToken;
      record(`call ${String(params.name)} ${JSON.stringify(args)}`);
      switch (params.name) {
        case "echo":
          return reply(id, text(String(args.text ?? "")));
        case "write":
          return reply(id, text(`wrote ${String(args.text ?? "")}`));
        case "crash":
          process.stderr.write("fixture: crashing on demand\n");
          process.exit(typeof args.code === "number" ? args.code : 3);
          return;
        case "hang":
          record(`hanging ${String(id)}`);
          return;
        case "progress": {
          const steps = typeof args.steps === "number" ? args.steps : 3;
          for (let i = 1; i <= steps; i++) {
            if (token !== undefined) out({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: i, total: steps } });
            await Bun.sleep(5);
          }
          return reply(id, text(`did ${steps} steps`));
        }
        case "ignore-term":
          process.on("SIGTERM", () => record("ignored SIGTERM"));
          return reply(id, text("ignoring SIGTERM"));
        case "pid":
          return reply(id, text(String(process.pid)));
        case "env":
          return reply(id, text(process.env[String(args.name)] ?? "(unset)"));
        default:
          return out({ jsonrpc: "2.0", id, error: { code: -32602, message: `Unknown tool: ${String(params.name)}` } });
      }
    }
    default:
      if (id !== undefined) out({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } });
  }
}

await readStdinMessages(handle);
record("stdin closed");
// Like a careless server, keep running after EOF: only a signal stops it.
setInterval(() => {}, 1 << 30);
