// The gateway behind `grex serve`: the MCP servers that the workspace's
// installed packs declare, listed as `<server>__<tool>` next to grex's own
// tools and called through a connection pool. Tool lists come from memory,
// then from the cache under .grex/.state/mcp-tools (refreshed in the
// background), and only then from the child itself.
import { type FSWatcher, watch } from "node:fs";
import { collectDeclaredServers, type DeclaredServer, type DeclaredSet } from "../../core/pack/mcp-declared.ts";
import { CancelledError } from "../../core/base/errors.ts";
import { findWorkspace, LOCK_FILE, MANIFEST_FILE, type Workspace } from "../../core/base/workspace.ts";
import { RPC, RpcError } from "../wire/jsonrpc.ts";
import { ChildGoneError, ChildRpcError } from "./child.ts";
import { normaliseCallResult, normaliseTool } from "./normalise.ts";

export { normaliseTool };
import { ChildPool, type ServerStatus } from "./pool.ts";
import { readDroppedTools, readServerStatus, readToolCache, writeDroppedTools, writeServerStatus, writeToolCache } from "./tool-cache.ts";
import type { GatewayCallHooks, GatewayOptions, GatewayPort } from "./types.ts";

type Tool = Record<string, unknown>;
const LIST_TIMEOUT_MS = 10_000;
/** A list served from the disk cache is re-checked against the child this long after (short sessions never pay for it). */
const REFRESH_DELAY_MS = 3_000;
const MAX_PAGES = 100;
/** Separator in listed names; `server:tool` is accepted on input too. */
export const NAME_SEP = "__";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
/** Listed names stay within [A-Za-z0-9_-], which every client and LLM API accepts. */
const safeName = (tool: string) => tool.replace(/[^A-Za-z0-9_-]/g, "_");
export const exposedName = (server: string, tool: string) => `${server}${NAME_SEP}${safeName(tool)}`;
const isReadOnly = (t: Tool) => isObject(t.annotations) && t.annotations.readOnlyHint === true;
/** `server__tool` or `server:tool` → its two parts; undefined for anything else. */
export function splitToolName(name: string): { server: string; tool: string } | undefined {
  // The first separator wins: server ids contain neither, tool names may contain either.
  const colon = name.indexOf(":");
  const under = name.indexOf(NAME_SEP);
  const useColon = colon >= 0 && (under < 0 || colon < under);
  const sep = useColon ? colon : under;
  if (sep <= 0) return undefined;
  const server = name.slice(0, sep);
  const tool = name.slice(sep + (useColon ? 1 : NAME_SEP.length));
  return tool === "" ? undefined : { server, tool };
}

interface ServerTools {
  key: string;
  tools: Tool[];
}

export interface ServerReport {
  pack: string;
  id: string;
  transport: string;
  status: ServerStatus;
  tool_count: number | null;
  error?: string;
  /** Tools its last tools/list held that grex left out (invalid names). */
  dropped?: string[];
}

export class Gateway implements GatewayPort {
  private readonly pool: ChildPool;
  private readonly ws: Workspace | undefined;
  private declaredSet: Promise<DeclaredSet> | undefined;
  private readonly tools = new Map<string, ServerTools>();
  private readonly listing = new Map<string, Promise<Tool[] | undefined>>();
  private readonly listeners = new Set<() => void>();
  private readonly warned = new Set<string>();
  /** Per server: what its last tools/list held that grex could not pass on (for `grex mcp servers`). */
  private readonly droppedNames = new Map<string, string[]>();
  private watcher: FSWatcher | undefined;
  private rereadTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly refreshTimers = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;

  constructor(private readonly opts: GatewayOptions) {
    try {
      this.ws = findWorkspace(opts.cwd, opts.manifest);
    } catch {
      this.ws = undefined; // no workspace yet (init not run): no declared servers
    }
    const ws = this.ws;
    this.pool = new ChildPool({
      ...opts,
      onStatus: (id, status, detail) => {
        if (ws) writeServerStatus(ws, id, { status, pid: detail.pid ?? null, ...(detail.error !== undefined ? { error: detail.error } : {}) });
      },
    });
  }

  declared(): Promise<DeclaredSet> {
    this.declaredSet ??= this.readDeclared();
    return this.declaredSet;
  }

  private async readDeclared(): Promise<DeclaredSet> {
    const none: DeclaredSet = { servers: [], problems: [], fingerprint: "" };
    if (!this.ws) return none;
    let set: DeclaredSet;
    try {
      set = await collectDeclaredServers(this.ws, (m) => this.warnOnce(m));
    } catch (err) {
      // A broken manifest or lockfile must not take grex's own tools down with it.
      this.warnOnce(`warning: cannot read the workspace's declared MCP servers (${err instanceof Error ? err.message : String(err)}); serving grex's own tools only.`);
      return none;
    }
    for (const p of set.problems) this.warnOnce(`warning: ${p.message}`);
    return set;
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.opts.log(message);
  }

  async listTools(readOnly: boolean): Promise<Tool[]> {
    const { servers } = await this.declared();
    const lists = await Promise.all(servers.map((s) => this.toolsOf(s)));
    const out: Tool[] = [];
    servers.forEach((s, i) => {
      for (const cached of lists[i] ?? []) {
        // Lists cached by an older grex may predate normalisation: normalise again (idempotent).
        const n = normaliseTool(cached);
        if (!("tool" in n) || (readOnly && !isReadOnly(n.tool))) continue;
        out.push(this.expose(s, n.tool));
      }
    });
    return out;
  }

  private expose(s: DeclaredServer, t: Tool): Tool {
    const name = String(t.name);
    const desc = typeof t.description === "string" && t.description !== "" ? ` ${t.description}` : "";
    return { ...t, name: exposedName(s.decl.id, name), description: `[MCP server '${s.decl.id}' of pack '${s.pack}', tool '${name}']${desc}` };
  }

  /** The server's allow-listed tools: memory, else disk cache (refreshed in the background), else the child. */
  private async toolsOf(s: DeclaredServer): Promise<Tool[] | undefined> {
    const id = s.decl.id;
    const mem = this.tools.get(id);
    if (mem && mem.key === s.key) return mem.tools;
    if (this.ws) {
      const cached = readToolCache(this.ws, id, s.key);
      if (cached) {
        this.tools.set(id, { key: s.key, tools: cached });
        const timer = setTimeout(() => {
          this.refreshTimers.delete(timer);
          if (!this.closed) void this.listFromChild(s);
        }, REFRESH_DELAY_MS);
        timer.unref?.();
        this.refreshTimers.add(timer);
        return cached;
      }
    }
    return this.listFromChild(s);
  }

  /** tools/list on the child (one at a time per server); updates caches, tells listeners when a cached list changed. */
  private listFromChild(s: DeclaredServer): Promise<Tool[] | undefined> {
    const id = s.decl.id;
    const running = this.listing.get(id);
    if (running) return running;
    const work = (async () => {
      try {
        const conn = await this.pool.get(s);
        const tools: Tool[] = [];
        const dropped: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const res = await conn.request("tools/list", cursor === undefined ? {} : { cursor }, { timeoutMs: LIST_TIMEOUT_MS });
          if (Array.isArray(res.tools)) {
            for (const raw of res.tools) {
              const n = normaliseTool(raw);
              if ("tool" in n) {
                const exposed = exposedName(id, String(n.tool.name));
                if (tools.some((t) => exposedName(id, String(t.name)) === exposed)) dropped.push(`tool '${String(n.tool.name)}' (its listed name ${exposed} is taken by another of its tools)`);
                else tools.push(n.tool);
              } else dropped.push(n.dropped);
            }
          }
          cursor = typeof res.nextCursor === "string" ? res.nextCursor : undefined;
          if (cursor === undefined) break;
        }
        this.pool.release(id, true);
        for (const d of dropped) this.warnOnce(`warning: MCP server '${id}' of pack '${s.pack}' lists ${d}; it is left out.`);
        this.droppedNames.set(id, dropped);
        if (this.ws) writeDroppedTools(this.ws, id, s.key, dropped);
        const allowed = s.decl.tools === null ? tools : tools.filter((t) => s.decl.tools?.includes(String(t.name)));
        const before = this.tools.get(id);
        this.tools.set(id, { key: s.key, tools: allowed });
        if (this.ws) writeToolCache(this.ws, id, s.key, allowed, (m) => this.opts.log(`warning: ${m}`));
        if (before && JSON.stringify(before.tools) !== JSON.stringify(allowed)) this.notify();
        conn.onNotification = (method) => {
          if (method === "notifications/tools/list_changed") {
            this.tools.delete(id);
            this.notify();
          }
        };
        return allowed;
      } catch (err) {
        this.pool.release(id, false);
        this.warnOnce(`warning: ${err instanceof Error ? err.message : String(err)}; its tools are left out.`);
        return this.tools.get(id)?.tools;
      } finally {
        this.listing.delete(id);
      }
    })();
    this.listing.set(id, work);
    return work;
  }

  async call(name: string, args: unknown, hooks: GatewayCallHooks): Promise<Record<string, unknown> | undefined> {
    const parts = splitToolName(name);
    if (!parts) return undefined;
    const { servers } = await this.declared();
    const s = servers.find((x) => x.decl.id === parts.server);
    if (!s) return undefined;
    const tools = (await this.toolsOf(s)) ?? [];
    const tool = tools.find((t) => t.name === parts.tool || safeName(String(t.name)) === parts.tool);
    if (!tool) {
      if (this.pool.status(s.decl.id) === "error") return errorResult(`MCP server '${s.decl.id}' is not available: ${this.pool.lastError(s.decl.id) ?? "it failed to start"}.`);
      throw new RpcError(RPC.methodNotFound, `Unknown tool: ${name}; MCP server '${s.decl.id}' has no tool '${parts.tool}' (or its pack's allow-list leaves it out); tools/list shows the tools.`, { tool: name });
    }
    const toolName = String(tool.name);
    if (hooks.readOnly && !isReadOnly(tool)) {
      throw new RpcError(RPC.methodNotFound, `Tool ${name} is not available: grex serve runs with --read-only and this tool is not marked read-only.`, { tool: name });
    }
    const denied = await this.approval(s, toolName, args, hooks);
    if (denied) return denied;
    const id = s.decl.id;
    let ok = false;
    try {
      const conn = await this.pool.get(s);
      const token = hooks.progressToken;
      const result = await conn.request(
        "tools/call",
        { name: toolName, arguments: isObject(args) ? args : {} },
        {
          signal: hooks.signal,
          onProgress: token === undefined ? undefined : (p) => hooks.sendProgress({ ...p, progressToken: token }),
        },
      );
      ok = true;
      return normaliseCallResult(result);
    } catch (err) {
      if (err instanceof CancelledError || hooks.signal.aborted) throw err;
      if (err instanceof ChildRpcError) {
        ok = true; // the child is healthy; it refused the call
        throw new RpcError(err.code, err.message, isObject(err.data) ? err.data : undefined);
      }
      const why = (err instanceof ChildGoneError ? `${err.message} during ${toolName}` : err instanceof Error ? err.message : String(err)).replace(/\.$/, "");
      const wait = this.pool.heldBackMs(id);
      return errorResult(`${why}. ${wait > 0 ? `It keeps failing, so grex waits ${Math.ceil(wait / 1000)} s before starting it again.` : "The next call starts it again."}`);
    } finally {
      this.pool.release(id, ok);
    }
  }

  /** undefined when the call may go ahead; an isError result when it may not. */
  private async approval(s: DeclaredServer, tool: string, args: unknown, hooks: GatewayCallHooks): Promise<Record<string, unknown> | undefined> {
    const id = s.decl.id;
    const needs = s.decl.approval === "all" || s.decl.approval.includes(tool);
    if (!needs || this.opts.approve.includes(`${id}:${tool}`) || this.opts.approve.includes(`${id}:*`)) return undefined;
    const how = `pre-approve it with \`grex serve --approve ${id}:${tool}\` (or --approve ${id}:* for every tool of this server)`;
    if (!hooks.elicit) {
      return errorResult(`Tool ${id}:${tool} needs a person's approval (pack '${s.pack}' lists it under approval), but this client cannot ask (no elicitation support); ${how}.`);
    }
    let answer: Record<string, unknown>;
    try {
      answer = await hooks.elicit({
        message: `Allow MCP server '${id}' (pack '${s.pack}') to run tool '${tool}' with arguments ${JSON.stringify(args ?? {})}?`,
        requestedSchema: { type: "object", properties: { approve: { type: "boolean", title: "Approve", description: `Run ${id}:${tool}` } }, required: ["approve"] },
      });
    } catch (err) {
      if (hooks.signal.aborted) throw new CancelledError();
      return errorResult(`Tool ${id}:${tool} was not approved: asking for approval failed (${err instanceof Error ? err.message : String(err)}); ${how}.`);
    }
    const content = isObject(answer.content) ? answer.content : {};
    if (answer.action === "accept" && content.approve !== false) return undefined;
    const what = answer.action === "accept" ? "declined" : String(answer.action ?? "declined");
    return errorResult(`Tool ${id}:${tool} was not approved (the person ${what === "cancel" ? "cancelled the request" : "declined"}); nothing was run.`);
  }

  subscribe(onListChanged: () => void): () => void {
    this.listeners.add(onListChanged);
    this.watchWorkspace();
    return () => {
      this.listeners.delete(onListChanged);
      if (this.listeners.size === 0) {
        this.watcher?.close();
        this.watcher = undefined;
      }
    };
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  /** The CLI in another process may add or remove packs: re-read the declared servers when the manifest or lockfile changes. */
  private watchWorkspace(): void {
    if (this.watcher || !this.ws) return;
    try {
      this.watcher = watch(this.ws.root, { persistent: false }, (_event, file) => {
        if (file === LOCK_FILE || file === MANIFEST_FILE) this.afterWrite();
      });
      this.watcher.on("error", () => {});
    } catch {
      this.watcher = undefined; // no watching on this file system: changes made through this server still count
    }
  }

  afterWrite(): void {
    if (this.rereadTimer) clearTimeout(this.rereadTimer);
    this.rereadTimer = setTimeout(() => void this.reread(), 50);
    this.rereadTimer.unref?.();
  }

  private async reread(): Promise<void> {
    // Never read yet: no client has a list from us that could have changed (the next tools/list reads it).
    if (!this.declaredSet) return;
    const before = await this.declaredSet.catch(() => undefined);
    this.declaredSet = this.readDeclared();
    const after = await this.declaredSet.catch(() => undefined);
    if (!after || before?.fingerprint === after.fingerprint) return;
    const keep = new Map(after.servers.map((s) => [s.decl.id, s.key]));
    for (const s of before?.servers ?? []) {
      if (keep.get(s.decl.id) !== s.key) {
        this.tools.delete(s.decl.id);
        void this.pool.forget(s.decl.id);
      }
    }
    this.notify();
  }

  /**
   * `grex mcp servers`: each declared server with its tool count (cached lists;
   * nothing is spawned) and the status the serving grex last recorded.
   */
  async report(): Promise<ServerReport[]> {
    const { servers } = await this.declared();
    return servers.map((s) => {
      const id = s.decl.id;
      const mem = this.tools.get(id);
      const cached = mem?.key === s.key ? mem.tools : this.ws ? readToolCache(this.ws, id, s.key) : undefined;
      const recorded = this.ws ? readServerStatus(this.ws, id) : undefined;
      const r: ServerReport = { pack: s.pack, id, transport: s.decl.transport, status: recorded?.status ?? "idle", tool_count: cached ? cached.length : null };
      if (recorded?.status === "error" && recorded.error !== undefined) r.error = recorded.error;
      const dropped = this.droppedNames.get(id) ?? (this.ws ? readDroppedTools(this.ws, id, s.key) : undefined);
      if (dropped && dropped.length > 0) r.dropped = dropped;
      return r;
    });
  }

  /** The declared server with this id, for `grex mcp status|call <server>`. */
  async find(id: string): Promise<DeclaredServer | undefined> {
    return (await this.declared()).servers.find((s) => s.decl.id === id);
  }

  /** For tests and diagnostics: live children and their pids. */
  liveCount(): number {
    return this.pool.liveCount();
  }

  pidOf(server: string): number | null {
    return this.pool.pidOf(server);
  }

  status(server: string): ServerStatus {
    return this.pool.status(server);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.refreshTimers) clearTimeout(t);
    this.refreshTimers.clear();
    this.watcher?.close();
    this.watcher = undefined;
    if (this.rereadTimer) clearTimeout(this.rereadTimer);
    await Promise.allSettled([...this.listing.values()]);
    await this.pool.closeAll();
  }
}

const errorResult = (text: string): Record<string, unknown> => ({ content: [{ type: "text", text }], isError: true });

/** A gateway for looking at the declared servers only (`grex mcp servers|status|call`): it never serves. */
export function inspectionGateway(cwd: string, manifest: string | undefined, env: Record<string, string | undefined>, warn: (m: string) => void): Gateway {
  return new Gateway({ cwd, manifest, env, version: "", maxChildren: 1, idleMs: 1, approve: [], log: warn, childStderr: () => {} });
}
