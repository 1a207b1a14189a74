// The stdio transport: newline-delimited JSON-RPC on stdin/stdout. stdout
// carries protocol messages only; diagnostics go to stderr.
import { stdinStream, stdout } from "../core/base/stdio-native.ts";
import { McpSession, RPC, type ServerOptions } from "./server.ts";
import { LineSplitter, MAX_MESSAGE_BYTES } from "./wire/lines.ts";

export { LineSplitter, MAX_MESSAGE_BYTES };


export interface StdioStreams {
  input: ReadableStream<Uint8Array>;
  /** Write one outgoing line (newline included); `failed` is called if it cannot be delivered (the reader is gone). */
  write(line: string, failed: (err: unknown) => void): void;
  /** Resolves once everything written so far has been handed to the OS. */
  flush(): Promise<void>;
}

/** The process's stdin/stdout, natively. Anything else that would print to stdout is sent to stderr: stdout is the wire. */
function processStreams(): StdioStreams {
  const toStderr = (...parts: unknown[]) => console.error(...parts);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  return {
    input: stdinStream(),
    write(line, failed) {
      // Write errors (EPIPE once the client is gone) are reported once; later lines are dropped.
      stdout.onError(failed);
      stdout.write(line);
    },
    flush: () => stdout.flush(),
  };
}

export type StdioEnd = "eof" | "shutdown" | "signal";

/**
 * Serve one MCP session over stdio until EOF (in-flight calls drain first), a
 * `shutdown` request (drained, answered) or `signal` (in-flight calls are cancelled).
 */
export async function serveStdio(opts: ServerOptions, signal?: AbortSignal, streams: StdioStreams = processStreams()): Promise<StdioEnd> {
  let broken = false;
  const onBroken = (err: unknown) => {
    // The client closed our stdout: nobody can read answers any more.
    if (broken) return;
    broken = true;
    opts.log(`cannot write to stdout (${err instanceof Error ? err.message : String(err)}); cancelling in-flight calls.`);
    session.abortAll();
  };
  const writeLine = (text: string) => {
    if (broken) return;
    try {
      streams.write(text, onBroken);
    } catch (err) {
      onBroken(err);
    }
  };
  const session = new McpSession(opts, (msg) => writeLine(`${JSON.stringify(msg)}\n`));
  // Errors about the framing itself: no request to tie them to, so id null.
  const framingError = (code: number, message: string) => writeLine(`${JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } })}\n`);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const splitter = new LineSplitter(
    MAX_MESSAGE_BYTES,
    (bytes) => {
      let line: string;
      try {
        line = decoder.decode(bytes);
      } catch {
        framingError(RPC.parseError, "Parse error: the message is not valid UTF-8.");
        return;
      }
      session.handleLine(line);
    },
    () => framingError(RPC.invalidRequest, `Invalid Request: message larger than ${MAX_MESSAGE_BYTES} bytes; it was discarded.`),
  );

  const reader = streams.input.getReader();
  const reading = (async (): Promise<"eof"> => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        splitter.push(value);
      }
    } catch (err) {
      if (!signal?.aborted) opts.log(`stdin read failed (${err instanceof Error ? err.message : String(err)}); treating it as EOF.`);
    }
    splitter.end();
    return "eof";
  })();
  const aborted = new Promise<"signal">((resolve) => {
    if (signal?.aborted) resolve("signal");
    signal?.addEventListener("abort", () => resolve("signal"), { once: true });
  });

  const how = await Promise.race([reading, session.shutdownRequested, aborted]);
  if (how !== "eof") void reader.cancel().catch(() => {});
  if (how === "signal") session.abortAll();
  await session.end(); // no new requests; in-flight ones finish (or answer -32800 when aborted)
  if (!broken) await streams.flush().catch(() => {});
  return how;
}
