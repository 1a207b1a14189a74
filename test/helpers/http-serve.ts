// HTTP MCP test plumbing: `grex serve --http` as a real process (its URL read
// from the stderr banner), SDK clients over Streamable HTTP, and raw requests.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { GREX_MAIN } from "./workspace.ts";

/** Guard against hangs only; never a timing assertion. */
const WAIT_MS = 20_000;

/** `grex serve --http 127.0.0.1:0` in `cwd`; resolves once it prints its URL. */
export class HttpServeProcess {
  readonly proc;
  stderr = "";
  url = "";
  private readonly pumped: Promise<void>;

  private constructor(cwd: string, env: Record<string, string | undefined>, args: string[]) {
    const proc = Bun.spawn([process.execPath, GREX_MAIN, "serve", "--http", "127.0.0.1:0", ...args], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    this.proc = proc;
    this.pumped = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) this.stderr += decoder.decode(chunk, { stream: true });
    })();
  }

  static async start(cwd: string, env: Record<string, string | undefined>, args: string[] = []): Promise<HttpServeProcess> {
    const p = new HttpServeProcess(cwd, env, args);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(p.stderr);
      if (m) {
        p.url = m[1] as string;
        return p;
      }
      if (p.proc.exitCode !== null || Date.now() > deadline) {
        p.kill();
        throw new Error(`grex serve --http did not start; stderr: ${p.stderr}`);
      }
      await Bun.sleep(20);
    }
  }

  /** Send `signal` and wait for the exit code (SIGKILL after the guard). */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number> {
    this.proc.kill(signal);
    const timer = setTimeout(() => this.kill(), WAIT_MS);
    const code = await this.proc.exited;
    clearTimeout(timer);
    await this.pumped;
    return code;
  }

  kill(): void {
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
  }
}

/** An SDK client connected over Streamable HTTP (optionally with a bearer token). */
export async function httpClient(url: string, token?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "grex-http-test", version: "1" });
  await client.connect(transport);
  return { client, transport };
}

export const INIT_BODY = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

/** A raw POST the way an MCP client sends it (headers overridable). */
export function rawPost(url: string, body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body,
  });
}
