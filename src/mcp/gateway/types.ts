// What an MCP session needs from the gateway (the pack-declared child servers
// behind `grex serve`). server.ts depends on this interface only; the gateway
// module itself loads on the first tools/list or tools/call.

export interface GatewayCallHooks {
  signal: AbortSignal;
  /** The client's `_meta.progressToken`, when it asked for progress. */
  progressToken?: string | number;
  /** Send one notifications/progress params object to the client (already carrying the client's token). */
  sendProgress(params: Record<string, unknown>): void;
  /** Ask the person through the client (`elicitation/create`); absent when the client did not declare elicitation. */
  elicit?: (params: Record<string, unknown>) => Promise<Record<string, unknown>>;
  readOnly: boolean;
}

export interface GatewayPort {
  /** The children's tools as `<server>__<tool>`, read-only ones only when `readOnly`. */
  listTools(readOnly: boolean): Promise<Record<string, unknown>[]>;
  /** Call a child tool (`server__tool` or `server:tool`); undefined when `name` names no declared server. */
  call(name: string, args: unknown, hooks: GatewayCallHooks): Promise<Record<string, unknown> | undefined>;
  /** Called on every change of the declared set or of a child's tool list; returns the unsubscribe function. */
  subscribe(onListChanged: () => void): () => void;
  /** A grex verb that may change the workspace finished: re-read the declared servers. */
  afterWrite(): void;
  /** Stop every child (SIGTERM, then SIGKILL) and wait until they are reaped. */
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** Where `grex serve` runs: the workspace root (or where init would create one). */
  cwd: string;
  manifest: string | undefined;
  env: Record<string, string | undefined>;
  version: string;
  /** Live child connections kept at once (LRU). */
  maxChildren: number;
  /** A child with nothing in flight for this long is closed. */
  idleMs: number;
  /** Pre-approved tools: `server:tool` or `server:*`. */
  approve: readonly string[];
  log(message: string): void;
  /** One line of a child's stderr. */
  childStderr(server: string, line: string): void;
}

export const DEFAULT_MAX_CHILDREN = 16;
export const DEFAULT_CHILD_IDLE_MS = 5 * 60_000;
