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
  /** Called once when the channel is gone; `exit` only for a process. */
  onclose?: (exit: ExitInfo | null) => void;
  /** Stop it: SIGTERM, then SIGKILL after `graceMs`; resolves once reaped. */
  close(graceMs: number): Promise<void>;
  /** The last lines of the child's stderr ("" for HTTP). */
  stderrTail(): string;
  readonly pid: number | null;
}

const STDERR_TAIL_BYTES = 2048;

export interface StdioSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** One line of the child's stderr (grex prefixes it with the server id). */
  stderrLine(line: string): void;
}

export function spawnStdioChannel(spec: StdioSpec): Channel {
  const proc = Bun.spawn(spec.argv, { cwd: spec.cwd, env: spec.env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let tail = "";
  let gone = false;
  const decoder = new TextDecoder();
  const channel: Channel = {
    pid: proc.pid,
    async send(message) {
      if (gone) throw new Error("the server process has exited");
      proc.stdin.write(`${JSON.stringify(message)}\n`);
      await proc.stdin.flush();
    },
    stderrTail: () => tail.trim(),
    async close(graceMs) {
      if (!gone) {
        try {
          proc.stdin.end();
        } catch {
          // already closed
        }
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
        await proc.exited;
        clearTimeout(timer);
      }
      await closed;
    },
  };
  const splitter = new LineSplitter(
    MAX_MESSAGE_BYTES,
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
    () => spec.stderrLine("(a message over the size limit on stdout was dropped)"),
  );
  const reading = (async () => {
    try {
      for await (const chunk of proc.stdout) splitter.push(chunk);
    } catch {
      // the pipe broke: the exit below reports it
    }
  })();
  const stderrReading = (async () => {
    let partial = "";
    try {
      for await (const chunk of proc.stderr) {
        const text = decoder.decode(chunk, { stream: true });
        tail = (tail + text).slice(-STDERR_TAIL_BYTES);
        const lines = (partial + text).split("\n");
        partial = lines.pop() ?? "";
        for (const l of lines) if (l.trim() !== "") spec.stderrLine(l);
      }
    } catch {
      // ignore
    }
    if (partial.trim() !== "") spec.stderrLine(partial);
  })();
  const closed = (async () => {
    await proc.exited;
    await Promise.all([reading, stderrReading]);
    gone = true;
    channel.onclose?.({ code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode) });
  })();
  return channel;
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
  let done = false;
  const channel: Channel & { setProtocolVersion(v: string): void } = {
    pid: null,
    send: (message) => transport.send(message as never),
    stderrTail: () => "",
    setProtocolVersion: (v) => transport.setProtocolVersion(v),
    async close() {
      if (done) return;
      await Promise.race([transport.terminateSession().catch(() => {}), new Promise((r) => setTimeout(r, 1000).unref())]);
      await transport.close();
    },
  };
  transport.onmessage = (m) => channel.onmessage?.(m);
  transport.onclose = () => {
    if (done) return;
    done = true;
    channel.onclose?.(null);
  };
  transport.onerror = () => {};
  await transport.start();
  return channel;
}
