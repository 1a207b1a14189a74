// The stdio transport: newline-delimited JSON-RPC on stdin/stdout. stdout
// carries protocol messages only; diagnostics go to stderr.
import { stdinStream, stdout } from "../core/stdio-native.ts";
import { McpSession, RPC, type ServerOptions } from "./server.ts";

/** Messages larger than this are answered with an error and skipped, never buffered whole (same cap as HTTP bodies). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/** Splits a byte stream on LF (a CR before it is dropped); a line over `max` bytes is reported once and discarded. */
export class LineSplitter {
  private parts: Uint8Array[] = [];
  private size = 0;
  private skipping = false;

  constructor(
    private readonly max: number,
    private readonly onLine: (line: Uint8Array) => void,
    private readonly onOversize: () => void,
  ) {}

  push(chunk: Uint8Array): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(LF, start);
      if (nl === -1) {
        // The rest continues on a later chunk: keep a copy, the stream may reuse its buffer.
        if (start < chunk.length) this.append(chunk.slice(start));
        return;
      }
      this.append(chunk.subarray(start, nl));
      this.lineEnd();
      start = nl + 1;
    }
  }

  /** End of input: a last line without a newline still counts. */
  end(): void {
    if (this.size > 0) this.lineEnd();
    this.skipping = false;
  }

  private append(part: Uint8Array): void {
    if (this.skipping || part.length === 0) return;
    if (this.size + part.length > this.max) {
      this.parts = [];
      this.size = 0;
      this.skipping = true;
      this.onOversize();
      return;
    }
    this.parts.push(part);
    this.size += part.length;
  }

  private lineEnd(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    let line = this.parts.length === 1 ? (this.parts[0] as Uint8Array) : concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, line.length - 1);
    this.onLine(line);
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

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
