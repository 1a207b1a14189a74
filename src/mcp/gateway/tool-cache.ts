// Tool lists of child servers cached under .grex/.state/mcp-tools/<id>.json,
// and the last status a serving grex recorded for each (<id>.status.json).
// keyed by the declaration and the pack's commit, so a restarted `grex serve`
// answers tools/list without spawning anything. A cache that is missing,
// unreadable or for another key is simply not used (it is only a cache).
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../../core/fs/fsutil.ts";
import type { Workspace } from "../../core/base/workspace.ts";

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

/** Tool entries a server listed that grex left out, next to the tool cache (same key). */
export function writeDroppedTools(ws: Workspace, server: string, key: string, dropped: string[]): void {
  try {
    const file = join(dirOf(ws), `${server}.dropped.json`);
    if (dropped.length === 0) return rmSync(file, { force: true });
    mkdirSync(dirOf(ws), { recursive: true });
    atomicWriteFile(join(dirOf(ws), `${server}.dropped.json`), `${JSON.stringify({ key, dropped })}\n`);
  } catch {
    // only informational
  }
}

export function readDroppedTools(ws: Workspace, server: string, key: string): string[] | undefined {
  try {
    const doc = JSON.parse(readFileSync(join(dirOf(ws), `${server}.dropped.json`), "utf8")) as { key?: unknown; dropped?: unknown };
    return doc.key === key && Array.isArray(doc.dropped) ? doc.dropped.filter((d): d is string => typeof d === "string") : undefined;
  } catch {
    return undefined;
  }
}

export interface ServerStatusRecord {
  status: "live" | "idle" | "error";
  pid: number | null;
  error?: string;
}

/** The last status a `grex serve` recorded for a server (so `grex mcp servers` can show it from another process). */
export function readServerStatus(ws: Workspace, server: string): ServerStatusRecord | undefined {
  try {
    const doc = JSON.parse(readFileSync(join(dirOf(ws), `${server}.status.json`), "utf8")) as ServerStatusRecord;
    if (doc.status !== "live" && doc.status !== "idle" && doc.status !== "error") return undefined;
    // A live record whose process is gone (the serving grex was killed): nothing runs.
    if (doc.status === "live" && (typeof doc.pid !== "number" || !processAlive(doc.pid))) return { status: "idle", pid: null };
    return doc;
  } catch {
    return undefined;
  }
}

export function writeServerStatus(ws: Workspace, server: string, record: ServerStatusRecord): void {
  try {
    mkdirSync(dirOf(ws), { recursive: true });
    atomicWriteFile(join(dirOf(ws), `${server}.status.json`), `${JSON.stringify(record)}\n`);
  } catch {
    // only informational
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
