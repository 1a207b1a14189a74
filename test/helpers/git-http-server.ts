// A real smart-HTTP git server on 127.0.0.1 for tests: Bun.serve in front of
// `git http-backend`, run as a CGI program once per request. Serves every
// repository under `rootDir` (http://127.0.0.1:PORT/<path under rootDir>) to
// both the git CLI and isomorphic-git.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface GitHttpServer {
  url: string;
  stop(): Promise<void>;
  /** Requests served so far. */
  readonly requests: number;
  /** Distinct client connections (by source port) seen so far. */
  readonly connections: number;
  /**
   * The server's own work so far: CPU time of the `git http-backend` processes
   * that have exited (user + system, their children included) and the wall time
   * during which at least one request was in flight (arrival to the backend's exit).
   */
  work(): { cpuMs: number; busyMs: number };
}

function gitExecPath(): string {
  const p = Bun.spawnSync(["git", "--exec-path"], { stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error("git --exec-path failed; is git installed?");
  return p.stdout.toString().trim();
}

const CRLF2 = Buffer.from("\r\n\r\n");
const LF2 = Buffer.from("\n\n");

/** Split CGI output into status, headers and the start of the body. */
function parseCgiHead(buf: Buffer): { status: number; headers: Headers; rest: Buffer } | null {
  const crlf = buf.indexOf(CRLF2);
  const lf = buf.indexOf(LF2);
  const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
  if (end < 0) return null;
  const sep = end === crlf ? 4 : 2;
  const headers = new Headers();
  let status = 200;
  for (const line of buf.subarray(0, end).toString("latin1").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500;
    else headers.append(name, value);
  }
  return { status, headers, rest: buf.subarray(end + sep) };
}

export interface GitHttpServerOptions {
  /** Called as each request arrives (e.g. to cancel a client mid-transfer). */
  onRequest?: (req: Request) => void;
}

export async function startGitHttpServer(rootDir: string, opts: GitHttpServerOptions = {}): Promise<GitHttpServer> {
  const backend = join(gitExecPath(), "git-http-backend");
  const home = mkdtempSync(join(tmpdir(), "grex-git-http-home-"));
  const children = new Set<ReturnType<typeof Bun.spawn>>();
  let requests = 0;
  const clientPorts = new Set<number>();
  let cpuUs = 0;
  let busyMs = 0;
  let inFlight = 0;
  let busySince = 0;

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req, srv) {
      requests++;
      const peer = srv.requestIP(req);
      if (peer) clientPorts.add(peer.port);
      opts.onRequest?.(req);
      const url = new URL(req.url);
      // A body without Content-Length (chunked) is buffered so the CGI gets one.
      let body: Uint8Array | ReadableStream<Uint8Array> | null = req.body;
      let length = req.headers.get("content-length");
      if (body && length === null) {
        const bytes = new Uint8Array(await req.arrayBuffer());
        body = bytes;
        length = String(bytes.length);
      }
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: home,
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_PROJECT_ROOT: rootDir,
        GIT_HTTP_EXPORT_ALL: "1",
        GATEWAY_INTERFACE: "CGI/1.1",
        SERVER_PROTOCOL: "HTTP/1.1",
        REQUEST_METHOD: req.method,
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.replace(/^\?/, ""),
        REMOTE_ADDR: "127.0.0.1",
      };
      const ct = req.headers.get("content-type");
      if (ct) env.CONTENT_TYPE = ct;
      if (length !== null) env.CONTENT_LENGTH = length;
      const proto = req.headers.get("git-protocol");
      if (proto) env.GIT_PROTOCOL = proto;
      const enc = req.headers.get("content-encoding");
      if (enc) env.HTTP_CONTENT_ENCODING = enc;

      if (inFlight++ === 0) busySince = performance.now();
      const child = Bun.spawn([backend], { env, stdin: body ?? "ignore", stdout: "pipe", stderr: "pipe" });
      children.add(child);
      void child.exited.then(() => {
        children.delete(child);
        cpuUs += Number(child.resourceUsage()?.cpuTime.total ?? 0);
        if (--inFlight === 0) busyMs += performance.now() - busySince;
      });
      void new Response(child.stderr).text(); // drain, so the child never blocks on it

      const reader = child.stdout.getReader();
      let head: Buffer = Buffer.alloc(0);
      let parsed: ReturnType<typeof parseCgiHead> = null;
      while (!parsed) {
        const { value, done } = await reader.read();
        if (done) break;
        head = Buffer.concat([head, value]);
        parsed = parseCgiHead(head);
      }
      if (!parsed) {
        await child.exited;
        return new Response(`git http-backend exited with code ${child.exitCode} before sending headers\n`, { status: 502 });
      }
      const first = parsed.rest;
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          if (first.length > 0) controller.enqueue(new Uint8Array(first));
        },
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        cancel() {
          void reader.cancel();
        },
      });
      return new Response(stream, { status: parsed.status, headers: parsed.headers });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    get requests() {
      return requests;
    },
    get connections() {
      return clientPorts.size;
    },
    work() {
      return { cpuMs: cpuUs / 1000, busyMs: busyMs + (inFlight > 0 ? performance.now() - busySince : 0) };
    },
    async stop() {
      await server.stop(true);
      for (const c of children) c.kill();
      await Promise.all([...children].map((c) => c.exited));
      rmSync(home, { recursive: true, force: true });
    },
  };
}
