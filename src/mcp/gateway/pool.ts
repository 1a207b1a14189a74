// Live child connections, keyed by server id: spawned on first use, kept in
// LRU order up to a cap (the least recently used idle child is closed to make
// room), closed after an idle timeout, and respawned after a crash, with a
// growing wait once a server keeps crashing (its status is then `error`).
import type { DeclaredServer } from "../../core/pack/mcp-declared.ts";
import { MAX_MESSAGE_BYTES } from "../wire/lines.ts";
import { type Channel, openHttpChannel, openSseChannel, spawnStdioChannel } from "./channel.ts";
import { ChildConnection } from "./child.ts";
import { childEnv, childHeaders } from "./spawn-spec.ts";

/** Crashes in a row before a server is held back. */
const CRASHES_BEFORE_BACKOFF = 3;
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
const INITIALIZE_TIMEOUT_MS = 10_000;
/** How long a child gets to exit on SIGTERM before SIGKILL. */
export const KILL_GRACE_MS = 1000;

export type ServerStatus = "live" | "idle" | "error";

/** The environment variable that sets the largest message a child may send (bytes). */
export const MAX_MESSAGE_ENV = "GREX_MCP_MAX_MESSAGE_BYTES";

/** The message cap for children: GREX_MCP_MAX_MESSAGE_BYTES when it is a whole number >= 1024, else 4 MiB (a warning says so). */
export function childMessageLimit(env: Record<string, string | undefined>, warn: (m: string) => void): { bytes: number; text: string } {
  const raw = env[MAX_MESSAGE_ENV]?.trim();
  if (raw !== undefined && raw !== "") {
    if (/^\d+$/.test(raw) && Number(raw) >= 1024 && Number.isSafeInteger(Number(raw))) return { bytes: Number(raw), text: `${raw}-byte limit (${MAX_MESSAGE_ENV})` };
    warn(`warning: ${MAX_MESSAGE_ENV}='${raw}' is not a whole number of bytes >= 1024; using the default of ${MAX_MESSAGE_BYTES} bytes.`);
  }
  return { bytes: MAX_MESSAGE_BYTES, text: `${MAX_MESSAGE_BYTES / (1024 * 1024)} MiB limit (set ${MAX_MESSAGE_ENV} to raise it)` };
}

interface Slot {
  conn: Promise<ChildConnection> | undefined;
  crashes: number;
  retryAt: number;
  lastError: string | undefined;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** The running connection; cleared before we close it on purpose, so that exit is not counted as a crash. */
  live: ChildConnection | undefined;
}

export interface PoolOptions {
  maxChildren: number;
  idleMs: number;
  version: string;
  env: Record<string, string | undefined>;
  childStderr(server: string, line: string): void;
  log(message: string): void;
  /** A server's status changed (live with its pid, idle, error with the reason). */
  onStatus?(server: string, status: ServerStatus, detail: { pid?: number | null; error?: string }): void;
}

export class ChildPool {
  private readonly slots = new Map<string, Slot>();
  /** Live connections, least recently used first. */
  private readonly lru = new Map<string, ChildConnection>();
  /** Every connection ever opened and not yet reaped (shutdown waits for them). */
  private readonly open = new Set<ChildConnection>();
  private shuttingDown = false;
  private readonly limit: { bytes: number; text: string };

  constructor(private readonly opts: PoolOptions) {
    this.limit = childMessageLimit(opts.env, opts.log);
  }

  private slot(id: string): Slot {
    let s = this.slots.get(id);
    if (!s) {
      s = { conn: undefined, crashes: 0, retryAt: 0, lastError: undefined, idleTimer: undefined, live: undefined };
      this.slots.set(id, s);
    }
    return s;
  }

  status(id: string): ServerStatus {
    const s = this.slots.get(id);
    if (s?.conn) return "live";
    return s && (s.crashes >= CRASHES_BEFORE_BACKOFF || s.lastError !== undefined) ? "error" : "idle";
  }

  /** How long the server is still held back after repeated failures (0 when it may start). */
  heldBackMs(id: string): number {
    const s = this.slots.get(id);
    return s && !s.conn ? Math.max(0, s.retryAt - Date.now()) : 0;
  }

  lastError(id: string): string | undefined {
    return this.slots.get(id)?.lastError;
  }

  liveCount(): number {
    return this.lru.size;
  }

  pidOf(id: string): number | null {
    return this.lru.get(id)?.pid ?? null;
  }

  /** The server's connection, spawning it when needed. Throws when it cannot start or is held back after crashes. */
  async get(server: DeclaredServer): Promise<ChildConnection> {
    if (this.shuttingDown) throw new Error("grex serve is shutting down");
    const id = server.decl.id;
    const s = this.slot(id);
    if (s.idleTimer) clearTimeout(s.idleTimer);
    s.idleTimer = undefined;
    if (!s.conn) {
      const wait = s.retryAt - Date.now();
      if (wait > 0) {
        throw new Error(`MCP server '${id}' failed ${s.crashes} times in a row (${s.lastError ?? "unknown error"}); grex tries it again in ${Math.ceil(wait / 1000)} s`);
      }
      const starting = this.start(server, s);
      s.conn = starting;
      // A start that failed leaves no connection behind: the next call tries again.
      starting.catch(() => {
        if (s.conn === starting) s.conn = undefined;
      });
    }
    const conn = await s.conn;
    this.lru.delete(id);
    this.lru.set(id, conn);
    this.evict();
    return conn;
  }

  /** A call on this server finished: restart its idle clock. */
  release(id: string, ok: boolean): void {
    const s = this.slots.get(id);
    if (!s) return;
    if (ok) {
      s.crashes = 0;
      s.lastError = undefined;
    }
    const conn = this.lru.get(id);
    if (!conn || conn.inflight > 0) return;
    if (s.idleTimer) clearTimeout(s.idleTimer);
    s.idleTimer = setTimeout(() => {
      if (conn.inflight === 0) void this.closeOne(id);
    }, this.opts.idleMs);
    s.idleTimer.unref?.();
  }

  private async start(server: DeclaredServer, s: Slot): Promise<ChildConnection> {
    const id = server.decl.id;
    let channel: Channel;
    try {
      if (server.decl.transport === "stdio") {
        channel = spawnStdioChannel({
          argv: server.decl.command ?? [],
          cwd: server.packDir,
          env: childEnv(server, this.opts.env),
          stderrLine: (line) => this.opts.childStderr(id, line),
          maxMessageBytes: this.limit.bytes,
          limitText: this.limit.text,
        });
      } else if (server.decl.transport === "sse") {
        channel = await openSseChannel({ url: server.decl.url ?? "", headers: childHeaders(server, this.opts.env) });
      } else {
        channel = await openHttpChannel({ url: server.decl.url ?? "", headers: childHeaders(server, this.opts.env) });
      }
    } catch (err) {
      throw this.failed(s, id, `cannot be started (${err instanceof Error ? err.message : String(err)})`);
    }
    const conn = new ChildConnection(id, channel);
    this.open.add(conn);
    conn.onGone = (gone) => {
      this.open.delete(conn);
      if (this.lru.get(id) === conn) this.lru.delete(id);
      if (s.live === conn) {
        s.live = undefined;
        s.conn = undefined;
        this.failed(s, id, gone.message.replace(`MCP server '${id}' `, ""));
        this.opts.onStatus?.(id, this.status(id), { error: s.lastError });
      }
      if (s.idleTimer) clearTimeout(s.idleTimer);
      s.idleTimer = undefined;
    };
    try {
      await conn.initialize(this.opts.version, INITIALIZE_TIMEOUT_MS);
    } catch (err) {
      s.conn = undefined;
      void conn.close(KILL_GRACE_MS);
      throw this.failed(s, id, err instanceof Error ? err.message.replace(`MCP server '${id}' `, "") : String(err));
    }
    s.live = conn;
    this.opts.onStatus?.(id, "live", { pid: conn.pid });
    return conn;
  }

  /** Record a failure; after several in a row, hold the server back for a growing while. */
  private failed(s: Slot, id: string, why: string): Error {
    s.crashes++;
    s.lastError = why;
    this.opts.onStatus?.(id, "error", { error: why });
    if (s.crashes >= CRASHES_BEFORE_BACKOFF) {
      s.retryAt = Date.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (s.crashes - CRASHES_BEFORE_BACKOFF));
    }
    return new Error(`MCP server '${id}' ${why}`);
  }

  /** Over the cap: close the least recently used children that have nothing in flight. */
  private evict(): void {
    for (const [id, conn] of this.lru) {
      if (this.lru.size <= this.opts.maxChildren) return;
      if (conn.inflight === 0) void this.closeOne(id);
    }
  }

  private async closeOne(id: string): Promise<void> {
    const s = this.slots.get(id);
    const conn = this.lru.get(id);
    if (!s || !conn) return;
    this.lru.delete(id);
    s.live = undefined;
    s.conn = undefined;
    if (s.idleTimer) clearTimeout(s.idleTimer);
    s.idleTimer = undefined;
    await conn.close(KILL_GRACE_MS);
    this.opts.onStatus?.(id, "idle", {});
  }

  /** Close a server whose declaration went away or changed. */
  async forget(id: string): Promise<void> {
    await this.closeOne(id);
    this.slots.delete(id);
  }

  /** Stop every child and wait until each is reaped. */
  async closeAll(): Promise<void> {
    this.shuttingDown = true;
    for (const s of this.slots.values()) {
      s.live = undefined;
      if (s.idleTimer) clearTimeout(s.idleTimer);
    }
    // Children still starting are stopped too (their initialize then fails): none may hold shutdown up.
    const starting = [...this.slots.values()].map((s) => s.conn?.catch(() => undefined));
    await Promise.all([...this.open].map((c) => c.close(KILL_GRACE_MS)));
    await Promise.all(starting);
    await Promise.all([...this.open].map((c) => c.close(KILL_GRACE_MS)));
    for (const id of this.lru.keys()) this.opts.onStatus?.(id, "idle", {});
    this.lru.clear();
  }
}
