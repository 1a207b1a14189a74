// The dirty oracle of a `grex status` run in a workspace whose `grex serve` is
// up: it asks that server over the workspace's socket (resident-wire.ts) and
// scans by itself whenever the server cannot answer — no socket, no hello
// within HELLO_DEADLINE_MS (another version, another git environment, a server
// that hangs), an error for a pack, or a connection that drops mid-way.
import { existsSync } from "node:fs";
import type { DirtyOracle, DirtyQuery, WatchReport } from "./dirty-oracle.ts";
import { envFingerprint, HELLO_DEADLINE_MS, residentSocketPath, SILENCE_LIMIT_MS } from "./resident-wire.ts";

interface Reply {
  id?: number;
  hello?: boolean;
  dirty?: boolean;
  error?: string;
  report?: WatchReport[];
}

interface Session {
  ask(message: object): Promise<Reply>;
  close(): void;
}

export class ServeClient implements DirtyOracle {
  private session: Promise<Session | null> | null = null;
  /** Packs the server answered, and packs scanned here instead (for -v and the tests). */
  readonly counters = { asked: 0, scanned: 0 };

  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly version: string,
  ) {}

  async dirty(q: DirtyQuery, scan: () => Promise<boolean>): Promise<boolean> {
    const s = await (this.session ??= openSession(residentSocketPath(q.stateDir), this.version, this.env));
    if (s !== null) {
      const r = await s.ask({ dirty: q }).catch(() => null);
      if (typeof r?.dirty === "boolean") {
        this.counters.asked++;
        return r.dirty;
      }
    }
    this.counters.scanned++;
    return scan();
  }

  /** The server's watch report (doctor), or null when no server answers. */
  async watchReport(stateDir: string): Promise<WatchReport[] | null> {
    const s = await (this.session ??= openSession(residentSocketPath(stateDir), this.version, this.env));
    if (s === null) return null;
    const r = await s.ask({ report: true }).catch(() => null);
    return r?.report ?? null;
  }

  close(): void {
    void this.session?.then((s) => s?.close());
  }
}

/** Connect and exchange hellos within the deadline; null when that does not happen. */
async function openSession(path: string, version: string, env: Record<string, string | undefined>): Promise<Session | null> {
  if (!existsSync(path)) return null;
  const pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();
  let buffer = "";
  let greet: ((ok: boolean) => void) | null = null;
  let closed = false;
  const failAll = () => {
    closed = true;
    greet?.(false);
    for (const p of pending.values()) p.reject(new Error("the server closed the connection"));
    pending.clear();
  };
  const hello = new Promise<boolean>((resolve) => {
    greet = resolve;
  });
  const timer = setTimeout(() => greet?.(false), HELLO_DEADLINE_MS);
  // Answers pending and nothing heard for SILENCE_LIMIT_MS (not even a heartbeat): the server hangs.
  let heard = Date.now();
  let watchdog: ReturnType<typeof setInterval> | null = null;
  let socket: Awaited<ReturnType<typeof Bun.connect>>;
  try {
    socket = await Bun.connect({
      unix: path,
      socket: {
        data(_s, chunk) {
          heard = Date.now();
          buffer += chunk.toString();
          for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            let r: Reply;
            try {
              r = JSON.parse(line) as Reply;
            } catch {
              continue;
            }
            if (typeof r.hello === "boolean") greet?.(r.hello);
            else if (typeof r.id === "number") {
              pending.get(r.id)?.resolve(r);
              pending.delete(r.id);
            }
          }
        },
        close: failAll,
        error: failAll,
      },
    });
  } catch {
    clearTimeout(timer);
    return null;
  }
  socket.write(`${JSON.stringify({ hello: { version, env: envFingerprint(env) } })}\n`);
  const ok = await hello;
  clearTimeout(timer);
  greet = null;
  if (!ok || closed) {
    socket.end();
    return null;
  }
  let next = 0;
  const stopWatchdog = () => {
    if (watchdog !== null) clearInterval(watchdog);
    watchdog = null;
  };
  return {
    ask(message) {
      if (closed) return Promise.reject(new Error("closed"));
      const id = ++next;
      if (watchdog === null) {
        heard = Date.now();
        watchdog = setInterval(() => {
          if (pending.size === 0) stopWatchdog();
          else if (Date.now() - heard > SILENCE_LIMIT_MS) {
            stopWatchdog();
            socket.end();
            failAll();
          }
        }, SILENCE_LIMIT_MS / 4);
      }
      return new Promise<Reply>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        socket.write(`${JSON.stringify({ id, ...message })}\n`);
      });
    },
    close() {
      stopWatchdog();
      socket.end();
    },
  };
}
