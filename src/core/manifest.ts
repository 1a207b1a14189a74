// grex.jsonl, the intent log (SPEC §2.1): append-only JSON lines folded into
// the set of registered packs. Appends are one write + fsync under the
// manifest lock; a torn last line (crash mid-append) is truncated away.
import { existsSync, ftruncateSync, openSync, closeSync, fsyncSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { integrityError, usageError } from "./errors.ts";
import { appendDurable, atomicWriteFile } from "./fsutil.ts";
import { withManifestLock } from "./locks.ts";
import type { Workspace } from "./workspace.ts";

export const SCHEMA_VERSION = "1";
/** One event line (including its newline) is at most this many bytes. */
export const MAX_LINE_BYTES = 2048;

export interface PackEntry {
  id: string;
  url: string;
  path: string;
  type: string;
  ref: string | null;
}

interface Envelope {
  ts: string;
  id: string;
  schema_version: string;
}

export type ManifestEvent =
  | (Envelope & { op: "add"; url: string; path: string; type: string; ref: string | null })
  | (Envelope & { op: "update"; url?: string; type?: string; ref?: string | null })
  | (Envelope & { op: "rm" })
  | (Envelope & { op: "sync" })
  | (Envelope & { op: "action_started"; action: string; idx: number })
  | (Envelope & { op: "action_completed"; action: string; idx: number; changed: boolean })
  | (Envelope & { op: "action_halted"; action: string; idx: number; reason: string; stderr: string })
  /** Ops from a newer grex: kept, ignored by fold. */
  | (Envelope & { op: string; [extra: string]: unknown });

type Op = "add" | "update" | "rm" | "sync" | "action_started" | "action_completed" | "action_halted";
type Fields<O extends Op> = Omit<Extract<ManifestEvent, { op: O }>, "op" | "ts" | "id" | "schema_version">;

/** A new event with the envelope filled in (timestamp now, schema "1"). */
export function makeEvent<O extends Op>(op: O, id: string, fields: Fields<O>): ManifestEvent {
  return { op, ts: new Date().toISOString(), id, schema_version: SCHEMA_VERSION, ...fields } as ManifestEvent;
}

const isStr = (v: unknown): v is string => typeof v === "string";
const isStrOrNull = (v: unknown) => v === null || typeof v === "string";

/**
 * Check one parsed line. Cheap hand-written checks: this runs once per line on
 * every read, and the fold must stay close to the cost of JSON.parse itself.
 * Returns a reason when the line is not a valid event.
 */
function checkEvent(o: Record<string, unknown>): string | null {
  if (!isStr(o.op)) return "missing 'op'";
  if (!isStr(o.id) || o.id === "") return "missing 'id'";
  if (!isStr(o.ts)) return "missing 'ts'";
  switch (o.op) {
    case "add":
      if (!isStr(o.url) || !isStr(o.path) || !isStr(o.type) || !isStrOrNull(o.ref ?? null)) {
        return "an 'add' needs url, path, type (strings) and ref (string or null)";
      }
      return null;
    case "update":
      if (("url" in o && !isStr(o.url)) || ("type" in o && !isStr(o.type)) || ("ref" in o && !isStrOrNull(o.ref))) {
        return "an 'update' may only set url, type (strings) and ref (string or null)";
      }
      return null;
    case "action_started":
    case "action_completed":
    case "action_halted":
      if (!isStr(o.action) || typeof o.idx !== "number") return `an '${o.op}' needs action and idx`;
      return null;
    default:
      return null;
  }
}

export interface ParsedManifest {
  events: ManifestEvent[];
  /** The last line was a torn write (no trailing newline, unparsable). */
  tornTail: boolean;
  /** Byte offset where the torn tail starts (truncate to this). */
  validBytes: number;
}

export function parseManifest(text: string, file: string): ParsedManifest {
  const events: ManifestEvent[] = [];
  const name = basename(file);
  let start = 0;
  let lineNo = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    const end = nl === -1 ? text.length : nl;
    lineNo++;
    const line = text.slice(start, end).replace(/\r$/, "");
    if (line.trim() !== "") {
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch {
        if (nl === -1) {
          return { events, tornTail: true, validBytes: Buffer.byteLength(text.slice(0, start)) };
        }
        throw integrityError(`${name} line ${lineNo} is not valid JSON; fix or delete that line (grex doctor lists every problem).`, {
          file,
          line: lineNo,
        });
      }
      if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
        throw integrityError(`${name} line ${lineNo} is not a JSON object; fix or delete that line.`, { file, line: lineNo });
      }
      const o = obj as Record<string, unknown>;
      if (o.schema_version !== SCHEMA_VERSION) {
        throw integrityError(
          `${name} line ${lineNo} has schema_version ${JSON.stringify(o.schema_version)}, but this grex reads only "1"; upgrade grex or restore the file from git.`,
          { file, line: lineNo },
        );
      }
      const bad = checkEvent(o);
      if (bad) throw integrityError(`${name} line ${lineNo} is not a valid event (${bad}); fix or delete that line.`, { file, line: lineNo });
      events.push(o as ManifestEvent);
    }
    start = end + 1;
  }
  return { events, tornTail: false, validBytes: Buffer.byteLength(text) };
}

/** Fold events into the live packs: O(n), deterministic, unknown ops ignored. */
export function fold(events: readonly ManifestEvent[]): Map<string, PackEntry> {
  const state = new Map<string, PackEntry>();
  for (const e of events) {
    switch (e.op) {
      case "add": {
        const a = e as Extract<ManifestEvent, { op: "add" }>;
        state.delete(a.id); // a re-add moves to the end
        state.set(a.id, { id: a.id, url: a.url, path: a.path, type: a.type, ref: a.ref ?? null });
        break;
      }
      case "update": {
        const cur = state.get(e.id);
        if (!cur) break;
        const u = e as Extract<ManifestEvent, { op: "update" }>;
        if (u.url !== undefined) cur.url = u.url;
        if (u.type !== undefined) cur.type = u.type;
        if (u.ref !== undefined) cur.ref = u.ref;
        break;
      }
      case "rm":
        state.delete(e.id);
        break;
    }
  }
  return state;
}

export interface ReadOptions {
  warn(message: string): void;
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    throw usageError(`No manifest at ${path}; run \`grex init\` first.`);
  }
}

/** Truncate a torn tail away, re-checking under the lock (another process may have fixed it). */
async function repairTornTail(ws: Workspace, opts: ReadOptions): Promise<ParsedManifest> {
  return withManifestLock(ws, undefined, () => {
    const text = readText(ws.manifestPath);
    const parsed = parseManifest(text, ws.manifestPath);
    if (parsed.tornTail) {
      const fd = openSync(ws.manifestPath, "r+");
      try {
        ftruncateSync(fd, parsed.validBytes);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      opts.warn(`${basename(ws.manifestPath)} ended in a partly written line (an interrupted write); it was removed.`);
    }
    return { ...parsed, tornTail: false };
  });
}

export async function readManifest(
  ws: Workspace,
  opts: ReadOptions,
): Promise<{ events: ManifestEvent[]; state: Map<string, PackEntry> }> {
  let parsed = parseManifest(readText(ws.manifestPath), ws.manifestPath);
  if (parsed.tornTail) parsed = await repairTornTail(ws, opts);
  return { events: parsed.events, state: fold(parsed.events) };
}

/** Serialize one event as a line, enforcing the 2 KiB cap (stderr tails are shortened to fit). */
export function eventLine(event: ManifestEvent): string {
  let line = `${JSON.stringify(event)}\n`;
  if (Buffer.byteLength(line) <= MAX_LINE_BYTES) return line;
  if (event.op === "action_halted" && typeof event.stderr === "string") {
    let stderr = event.stderr;
    while (Buffer.byteLength(line) > MAX_LINE_BYTES && stderr.length > 0) {
      const over = Buffer.byteLength(line) - MAX_LINE_BYTES;
      stderr = stderr.slice(Math.max(over, Math.ceil(stderr.length / 8)));
      line = `${JSON.stringify({ ...event, stderr })}\n`;
    }
    if (Buffer.byteLength(line) <= MAX_LINE_BYTES) return line;
  }
  throw integrityError(`A '${event.op}' event for '${event.id}' would exceed ${MAX_LINE_BYTES} bytes; shorten its values.`);
}

/** Append under a manifest lock the caller already holds. */
export function appendEventsLocked(ws: Workspace, events: readonly ManifestEvent[]): void {
  if (!existsSync(ws.manifestPath)) throw usageError(`No manifest at ${ws.manifestPath}; run \`grex init\` first.`);
  const lines = events.map(eventLine); // validate every line before writing any
  for (const line of lines) appendDurable(ws.manifestPath, line);
}

export async function appendEvents(ws: Workspace, events: readonly ManifestEvent[], signal?: AbortSignal): Promise<void> {
  if (events.length === 0) return;
  await withManifestLock(ws, signal, () => appendEventsLocked(ws, events));
}

/** Canonical compact form: one `add` per live id, stamped with the last event that touched it. */
export function compactText(events: readonly ManifestEvent[]): string {
  const state = fold(events);
  const lastTs = new Map<string, string>();
  for (const e of events) if (state.has(e.id) && (e.op === "add" || e.op === "update")) lastTs.set(e.id, e.ts);
  let out = "";
  for (const p of state.values()) {
    const ev: ManifestEvent = {
      op: "add",
      ts: lastTs.get(p.id) ?? "",
      id: p.id,
      schema_version: SCHEMA_VERSION,
      url: p.url,
      path: p.path,
      type: p.type,
      ref: p.ref,
    };
    out += eventLine(ev);
  }
  return out;
}

export async function compactManifest(ws: Workspace, signal?: AbortSignal): Promise<void> {
  await withManifestLock(ws, signal, () => {
    const parsed = parseManifest(readText(ws.manifestPath), ws.manifestPath);
    atomicWriteFile(ws.manifestPath, compactText(parsed.events));
  });
}
