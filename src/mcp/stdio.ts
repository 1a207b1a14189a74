// The stdio transport: newline-delimited JSON-RPC on stdin/stdout. stdout
// carries protocol messages only; diagnostics go to stderr.
import { McpSession, RPC, type ServerOptions } from "./server.ts";

/** Lines longer than this are answered with an error and skipped, never buffered whole. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export interface StdioStreams {
  input: ReadableStream<Uint8Array>;
  write(line: string): void;
}

function defaultStreams(): StdioStreams {
  const writer = Bun.stdout.writer();
  return {
    input: Bun.stdin.stream(),
    write(line) {
      writer.write(line);
      writer.flush();
    },
  };
}

/** Serve until EOF (drain, then resolve "eof") or a `shutdown` request (resolve "shutdown"). */
export async function serveStdio(opts: ServerOptions, streams: StdioStreams = defaultStreams()): Promise<"eof" | "shutdown"> {
  const session = new McpSession(opts, (msg) => streams.write(`${JSON.stringify(msg)}\n`));
  const reader = streams.input.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let bufferedBytes = 0;
  let skipping = false; // inside an oversized line: drop bytes up to the next newline
  const reading = (async (): Promise<"eof"> => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let chunk = decoder.decode(value, { stream: true });
      for (;;) {
        const nl = chunk.indexOf("\n");
        if (nl === -1) {
          if (!skipping) {
            buffered += chunk;
            bufferedBytes += chunk.length;
            if (bufferedBytes > MAX_LINE_BYTES) {
              skipping = true;
              buffered = "";
              bufferedBytes = 0;
            }
          }
          break;
        }
        const piece = chunk.slice(0, nl);
        chunk = chunk.slice(nl + 1);
        if (skipping) {
          skipping = false;
          streams.write(`${JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: RPC.invalidRequest, message: `Invalid Request: message larger than ${MAX_LINE_BYTES} bytes` } })}\n`);
          continue;
        }
        const line = (buffered + piece).replace(/\r$/, "");
        buffered = "";
        bufferedBytes = 0;
        session.handleLine(line);
      }
    }
    if (buffered.trim() !== "" && !skipping) session.handleLine(buffered);
    return "eof";
  })();
  const how = await Promise.race([reading, session.shutdownRequested]);
  if (how === "shutdown") void reader.cancel().catch(() => {});
  await session.drain();
  return how;
}
