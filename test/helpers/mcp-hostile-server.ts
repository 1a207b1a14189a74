// A stdio MCP server that is non-conformant and hostile on purpose (no SDK):
// - tools/list: a tool with `input_schema` (snake_case) and no inputSchema, one
//   with no schema at all, one with an inputSchema that is a string, one whose
//   name has a space (invalid), and plain ones; none has annotations but `echo`;
// - initialize: without protocolVersion when FIXTURE_NO_VERSION is set;
// - `fails`: a tool-level failure spelled `is_error` (snake_case);
// - `flood`: answers with one line of FLOOD_BYTES (default 200 MB) bytes;
// - `fork`: starts two grandchildren (`sleep`), one in its process group and
//   one in a session of its own (setsid), and answers with their pids;
// - `hang`: never answers; SIGTERM is ignored once `ignore-term` was called.
// It keeps running after stdin closes, like a careless server.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { readStdinMessages } from "./stdin-messages.ts";

const name = process.env.FIXTURE_NAME ?? "hostile";
const logFile = process.env.FIXTURE_LOG;
const record = (line: string) => {
  if (logFile) appendFileSync(logFile, `${name} ${line}\n`);
};
record(`started ${process.pid}`);

const tools: unknown[] = [
  { name: "echo", description: "Echo the text back.", inputSchema: { type: "object", properties: { text: { type: "string" } } }, annotations: { readOnlyHint: true } },
  { name: "snake", description: "Declares its schema as input_schema.", input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } },
  { name: "bare", description: "Declares no schema at all." },
  { name: "stringy", description: "Its inputSchema is a string.", inputSchema: "object" },
  { name: "has space", description: "An invalid name.", inputSchema: { type: "object" } },
  { name: "flood", description: "Answer with one huge line.", inputSchema: { type: "object" } },
  { name: "fork", description: "Start two grandchildren.", inputSchema: { type: "object" } },
  { name: "hang", description: "Never answer.", inputSchema: { type: "object" } },
  { name: "ignore-term", description: "Ignore SIGTERM from now on.", inputSchema: { type: "object" } },
  { name: "pid", description: "Answer with the process id.", inputSchema: { type: "object" } },
  { name: "fails", description: "A tool-level failure spelled is_error.", input_schema: { type: "object" } },
];

const out = (msg: object): void => {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
};
const text = (t: string) => ({ content: [{ type: "text", text: t }] });

function flood(id: unknown): void {
  const total = Number(process.env.FLOOD_BYTES ?? 200 * 1024 * 1024);
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`;
  const chunk = Buffer.alloc(1024 * 1024, "x");
  let sent = 0;
  process.stdout.write(head);
  const more = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!process.stdout.write(chunk)) return void process.stdout.once("drain", more);
    }
    process.stdout.write(`"}]}}\n`);
  };
  more();
}

function handle(msg: Record<string, unknown>): void {
  const id = msg.id;
  const params = (msg.params ?? {}) as Record<string, unknown>;
  switch (msg.method) {
    case "initialize": {
      const result: Record<string, unknown> = { capabilities: { tools: {} }, serverInfo: { name, version: "0.0.1" } };
      if (!process.env.FIXTURE_NO_VERSION) result.protocolVersion = String(params.protocolVersion ?? "2025-06-18");
      return out({ jsonrpc: "2.0", id, result });
    }
    case "tools/list":
      return out({ jsonrpc: "2.0", id, result: { tools } });
    case "tools/call": {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      record(`call ${String(params.name)}`);
      switch (params.name) {
        case "echo":
          return out({ jsonrpc: "2.0", id, result: text(String(args.text ?? "")) });
        case "snake":
          return out({ jsonrpc: "2.0", id, result: text(`q=${String(args.q)}`) });
        case "bare":
        case "stringy":
          return out({ jsonrpc: "2.0", id, result: text(String(params.name)) });
        case "flood":
          return flood(id);
        case "fork": {
          const same = spawn("sleep", ["1000"], { stdio: "ignore" });
          const own = spawn("setsid", ["sleep", "1001"], { stdio: "ignore" });
          record(`forked ${same.pid} ${own.pid}`);
          return out({ jsonrpc: "2.0", id, result: text(JSON.stringify({ same: same.pid, own: own.pid })) });
        }
        case "hang":
          record(`hanging ${String(id)}`);
          return;
        case "ignore-term":
          process.on("SIGTERM", () => record("ignored SIGTERM"));
          return out({ jsonrpc: "2.0", id, result: text("ignoring SIGTERM") });
        case "fails":
          return out({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "it failed" }], is_error: true } });
        case "pid":
          return out({ jsonrpc: "2.0", id, result: text(String(process.pid)) });
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
setInterval(() => {}, 1 << 30);
