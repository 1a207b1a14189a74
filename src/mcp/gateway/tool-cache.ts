// Tool lists of child servers cached under .grex/.state/mcp-tools/<id>.json,
// keyed by the declaration and the pack's commit, so a restarted `grex serve`
// answers tools/list without spawning anything. A cache that is missing,
// unreadable or for another key is simply not used (it is only a cache).
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../../core/fsutil.ts";
import type { Workspace } from "../../core/workspace.ts";

const dirOf = (ws: Workspace) => join(ws.stateDir, "mcp-tools");

export function readToolCache(ws: Workspace, server: string, key: string): Record<string, unknown>[] | undefined {
  try {
    const doc = JSON.parse(readFileSync(join(dirOf(ws), `${server}.json`), "utf8")) as { key?: unknown; tools?: unknown };
    return doc.key === key && Array.isArray(doc.tools) ? (doc.tools as Record<string, unknown>[]) : undefined;
  } catch {
    return undefined;
  }
}

export function writeToolCache(ws: Workspace, server: string, key: string, tools: Record<string, unknown>[], warn: (m: string) => void): void {
  try {
    mkdirSync(dirOf(ws), { recursive: true });
    atomicWriteFile(join(dirOf(ws), `${server}.json`), `${JSON.stringify({ key, tools })}\n`);
  } catch (err) {
    warn(`cannot cache the tool list of MCP server '${server}' (${err instanceof Error ? err.message : String(err)})`);
  }
}
