// How the gateway reaches one child MCP server: a message channel over a
// spawned process's stdio (newline-delimited JSON, spawned with Bun.spawn so we
// keep its pid, exit status and stderr), or over Streamable HTTP (the SDK's
// client transport, loaded only when such a server is used).
import { LineSplitter, MAX_MESSAGE_BYTES } from "../wire/lines.ts";

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export interface Channel {
  send(message: object): Promise<void>;
  onmessage?: (message: unknown) => void;
  /** Called once when the channel is gone; `exit` only for a process; `reason` when grex ended it for a cause of its own. */
  onclose?: (exit: ExitInfo | null, reason?: string) => void;
  /** Stop it: SIGTERM, then SIGKILL after `graceMs`; resolves once reaped. */
  close(graceMs: number): Promise<void>;
  /** The last lines of the child's stderr ("" for HTTP). */
  stderrTail(): string;
  readonly pid: number | null;
}

const STDERR_TAIL_BYTES = 2048;
/** After the child exits, how long its pipes may stay open (a grandchild holding them) before grex stops reading. */
const PIPE_LINGER_MS = 250;

export interface StdioSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** One line of the child's stderr (grex prefixes it with the server id). */
  stderrLine(line: string): void;
  /** Largest message accepted from the child; a bigger one stops it (default MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Names the limit in the error, e.g. "4 MiB limit (set GREX_MCP_MAX_MESSAGE_BYTES to raise it)". */
  limitText?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

export function spawnStdioChannel(spec: StdioSpec): Channel {
  // Its own session and process group: stopping it reaches whatever it started (proc-tree.ts).
  const proc = Bun.spawn(spec.argv, { cwd: spec.cwd, env: spec.env, stdin: "pipe", stdout: "pipe", stderr: "pipe", detached: true });
  const pid = proc.pid;
  let tail = "";
  let gone = false;
  let reason: string | undefined;
  let stopping: Promise<void> | undefined;
  const decoder = new TextDecoder();
  const stop = (graceMs: number): Promise<void> =>
    (stopping ??= (async () => {
      const { descendants, signalTree } = await import("./proc-tree.ts");
      try {
        proc.stdin.end();
      } catch {
        // already closed
      }
      // Taken while the child lives: once it is gone its children are re-parented and cannot be told apart.
      let tree = descendants(pid);
      signalTree(pid, tree, "SIGTERM");
      const exited = await Promise.race([proc.exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!exited) tree = new Map([...tree, ...descendants(pid)]);
      // The rest of the group, and descendants that left it, get SIGKILL either way: nothing it started outlives it.
      signalTree(pid, tree, "SIGKILL");
      await proc.exited;
    })());
  const channel: Channel = {
    pid,
    async send(message) {
      if (gone) throw new Error("the server process has exited");
      proc.stdin.write(`${JSON.stringify(message)}\n`);
      await proc.stdin.flush();
    },
    stderrTail: () => tail.trim(),
    async close(graceMs) {
      if (!gone) await stop(graceMs);
      await closed;
    },
  };
  const max = spec.maxMessageBytes ?? MAX_MESSAGE_BYTES;
  const splitter = new LineSplitter(
    max,
    (bytes) => {
      let msg: unknown;
      try {
        msg = JSON.parse(decoder.decode(bytes));
      } catch {
        spec.stderrLine(`(not JSON on stdout, ignored) ${decoder.decode(bytes).slice(0, 200)}`);
        return;
      }
      channel.onmessage?.(msg);
    },
    () => {
      // A message over the limit: its call cannot be answered, and the child's stream is suspect. Stop it.
      reason ??= `sent a message over the ${spec.limitText ?? `${max}-byte limit`}, so grex stopped it`;
      spec.stderrLine(`(a message over ${max} bytes on stdout; stopping the server)`);
      void stop(0);
    },
  );
  const stdoutReader = proc.stdout.getReader();
  const stderrReader = proc.stderr.getReader();
  const reading = (async () => {
    try {
      for (;;) {
        const { value, done } = await stdoutReader.read();
        if (done) break;
        if (reason === undefined) splitter.push(value);
      }
    } catch {
      // the pipe broke: the exit below reports it
    }
  })();
  const stderrReading = readStderr(stderrReader, spec.stderrLine, (text) => {
    tail = (tail + text).slice(-STDERR_TAIL_BYTES);
  });
  const closed = (async () => {
    await proc.exited;
    // What stayed in its group goes with it; a grandchild that keeps the pipes open must not keep us waiting.
    const { signalTree } = await import("./proc-tree.ts");
    signalTree(pid, new Map(), "SIGKILL");
    const drained = await Promise.race([Promise.all([reading, stderrReading]).then(() => true), sleep(PIPE_LINGER_MS).then(() => false)]);
    if (!drained) {
      void stdoutReader.cancel().catch(() => {});
      void stderrReader.cancel().catch(() => {});
    }
    gone = true;
    channel.onclose?.({ code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode) }, reason);
  })();
  return channel;
}

/** A child's stderr, line by line to `line` (a last partial line too), every piece of text also to `text` (the tail kept for errors). */
async function readStderr(reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> }, line: (l: string) => void, text: (t: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let partial = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const chunk = decoder.decode(value, { stream: true });
      text(chunk);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) if (l.trim() !== "") line(l);
    }
  } catch {
    // ignore
  }
  if (partial.trim() !== "") line(partial);
}

/** An SDK client transport's events onto a channel: messages through, one close (with no exit status), errors left to the calls. */
function wireTransport(
  transport: { onmessage?: (m: never) => void; onclose?: () => void; onerror?: (e: Error) => void },
  channel: Channel,
  state: { done: boolean },
): void {
  transport.onmessage = (m) => channel.onmessage?.(m);
  transport.onclose = () => {
    if (state.done) return;
    state.done = true;
    channel.onclose?.(null);
  };
  transport.onerror = () => {};
}

export interface HttpSpec {
  url: string;
  headers: Record<string, string>;
}

/** A Streamable HTTP child through the SDK's client transport (messages only; grex does the JSON-RPC bookkeeping). */
export async function openHttpChannel(spec: HttpSpec): Promise<Channel & { setProtocolVersion(v: string): void }> {
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
    requestInit: { headers: spec.headers },
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
  });
  const state = { done: false };
  const channel: Channel & { setProtocolVersion(v: string): void } = {
    pid: null,
    send: (message) => transport.send(message as never),
    stderrTail: () => "",
    setProtocolVersion: (v) => transport.setProtocolVersion(v),
    async close() {
      if (state.done) return;
      await Promise.race([transport.terminateSession().catch(() => {}), new Promise((r) => setTimeout(r, 1000).unref())]);
      await transport.close();
    },
  };
  wireTransport(transport, channel, state);
  await transport.start();
  return channel;
}

/** How long the legacy SSE transport may take to open its stream and name its message endpoint. */
const SSE_OPEN_TIMEOUT_MS = 10_000;

/** A legacy HTTP+SSE child (GET the event stream, POST to the endpoint it names) through the SDK's client transport. */
export async function openSseChannel(spec: HttpSpec): Promise<Channel> {
  const { SSEClientTransport } = await import("@modelcontextprotocol/sdk/client/sse.js");
  const transport = new SSEClientTransport(new URL(spec.url), {
    // The SDK sends these on the event stream's GET and on every POST.
    requestInit: { headers: spec.headers },
  });
  const state = { done: false };
  const channel: Channel = {
    pid: null,
    send: (message) => transport.send(message as never),
    stderrTail: () => "",
    async close() {
      if (!state.done) await transport.close();
    },
  };
  wireTransport(transport, channel, state);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      transport.start(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the SSE stream at ${spec.url} named no message endpoint within ${SSE_OPEN_TIMEOUT_MS} ms`)), SSE_OPEN_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    await transport.close().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return channel;
}
