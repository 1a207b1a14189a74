// The events of grex.jsonl as data: their types, the envelope, and the
// read-side check of one line. A leaf: the manifest's reader, fold, snapshot,
// schema, merge rules and the journal all build on it without importing each other.
import { controlCharProblem, PACK_PATH_RE, TAG_RE } from "../base/naming.ts";
import { normaliseCloneFilter } from "../base/clone-filter.ts";

export const SCHEMA_VERSION = "1";
/** One event line, including its trailing newline, is at most this many bytes. */
export const MAX_LINE_BYTES = 2048;

/** RFC 3339 timestamp in UTC (`Z`, or a zero offset written out). */
export const TS_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]00:00)$/;
// ---------------------------------------------------------------------------
// Types

export interface PackEntry {
  id: string;
  url: string;
  path: string;
  type: string;
  ref: string | null;
  /** Tags (`add --tag`), sorted, without duplicates; absent when none. */
  tags?: string[];
  /** A shallow clone of this many commits (`add --depth`); absent for full history. */
  depth?: number;
  /** A partial clone's filter (`add --filter blob:none`), kept for every later clone of the pack; absent: full clones. */
  filter?: string;
}

/** The `ts` of the line(s) for the same id an intent event supersedes (manifest-conflicts.ts). */
export type Prev = string | string[];

interface Envelope {
  ts: string;
  id: string;
  /** Always "1" once read or written (anything else is rejected). */
  schema_version: string;
}

/** The extra fields of each known op (SPEC §2.1 table). */
export interface EventFields {
  /** `from`: in a task workspace (`init --from`), the source workspace whose repository the pack is a linked worktree of (absolute path). */
  add: { url: string; path: string; type: string; ref: string | null; tags?: string[]; depth?: number; filter?: string; prev?: Prev; from?: string };
  /** `tags` replaces the whole set (an empty list clears it); `depth: null` records full history again (`update --depth 0`). */
  update: { url?: string; type?: string; ref?: string | null; tags?: string[]; depth?: number | null; prev?: Prev };
  rm: { prev?: Prev };
  sync: Record<string, never>;
  action_started: { action: string; idx: number };
  action_completed: { action: string; idx: number; changed: boolean };
  action_halted: { action: string; idx: number; reason: string; stderr: string };
}
export type KnownOp = keyof EventFields;
export const KNOWN_OPS: readonly KnownOp[] = ["add", "update", "rm", "sync", "action_started", "action_completed", "action_halted"];

export type EventOf<O extends KnownOp> = Envelope & { op: O } & EventFields[O];
export type KnownEvent = { [O in KnownOp]: EventOf<O> }[KnownOp];
/** An op from a newer grex: kept as read, ignored by fold. */
export type UnknownEvent = Envelope & { op: string; [extra: string]: unknown };
export type ManifestEvent = KnownEvent | UnknownEvent;

/** Narrow an event to one known op (a plain `e.op === "add"` cannot exclude UnknownEvent). */
export function isOp<O extends KnownOp>(e: ManifestEvent, op: O): e is ManifestEvent & EventOf<O> {
  return e.op === op;
}

/** A new event with the envelope filled in (schema "1", timestamp now unless given). */
export function makeEvent<O extends KnownOp>(op: O, id: string, fields: EventFields[O], ts?: string): EventOf<O> {
  return { op, ts: ts ?? new Date().toISOString(), id, schema_version: SCHEMA_VERSION, ...fields } as unknown as EventOf<O>;
}

// The valibot schemas of the events (the contract, used on every write and by
// tests) live in manifest-schema.ts, loaded on the first write: building them
// costs more than a whole read of a short manifest.

// ---------------------------------------------------------------------------
// Parsing

const isStr = (x: unknown): x is string => typeof x === "string";
const isNonEmpty = (x: unknown): x is string => typeof x === "string" && x.length > 0;
const isTs = (x: unknown) => typeof x === "string" && TS_RE.test(x);
const isPrev = (x: unknown) => isTs(x) || (Array.isArray(x) && x.every(isTs));
const isIdx = (x: unknown) => typeof x === "number" && Number.isInteger(x) && x >= 0;
/** A clone depth: a whole number of commits, at least 1 (git's limit is 2^31 - 1). */
export const isDepth = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 1 && x <= 0x7fffffff;
const isTags = (x: unknown) => Array.isArray(x) && x.length <= 64 && x.every((t) => typeof t === "string" && TAG_RE.test(t));

/** A url or ref holding a control character (a newline would reach a `.git/config` as a line of its own). */
function gitTextProblem(url: unknown, ref: unknown): string | null {
  return (isStr(url) ? controlCharProblem("'url'", url) : null) ?? (isStr(ref) ? controlCharProblem("'ref'", ref) : null);
}

/**
 * The read-side check of one parsed line (schema_version is checked by the
 * caller). Returns why the line is not a valid event, or null. Plain typeof
 * and regex tests: they cost a fraction of the JSON.parse of the same line.
 */
export function checkEvent(o: Record<string, unknown>): string | null {
  const op = o.op;
  if (!isNonEmpty(op)) return "it has no 'op'";
  const ts = o.ts;
  if (!isStr(ts) || !TS_RE.test(ts)) return "'ts' is not an RFC 3339 UTC timestamp";
  const id = o.id;
  if (!isStr(id) || !PACK_PATH_RE.test(id)) return "'id' is not a pack id";
  if (o.prev !== undefined && (op === "add" || op === "update" || op === "rm") && !isPrev(o.prev)) return "'prev' must be a timestamp or a list of them";
  if (o.tags !== undefined && (op === "add" || op === "update") && !isTags(o.tags)) return "'tags' must be a list of at most 64 tags (letters, digits, '.', '_', '-')";
  if (o.depth !== undefined && (op === "add" || op === "update") && !isDepth(o.depth) && !(op === "update" && o.depth === null)) {
    return `'depth' must be a whole number of commits, at least 1${op === "update" ? ", or null for full history" : ""}`;
  }
  switch (op) {
    case "add": {
      if (!isNonEmpty(o.url)) return "'url' must be a non-empty string";
      const bad = gitTextProblem(o.url, o.ref);
      if (bad !== null) return bad;
      const path = o.path;
      if (!isStr(path) || !PACK_PATH_RE.test(path)) return "'path' is not a workspace-relative pack path";
      if (!isNonEmpty(o.type)) return "'type' must be a non-empty string";
      const ref = o.ref;
      if (ref !== undefined && ref !== null && !isStr(ref)) return "'ref' must be a string or null";
      if (o.filter !== undefined && !(isStr(o.filter) && normaliseCloneFilter(o.filter) === o.filter)) return "'filter' must be a partial-clone filter grex implements (blob:none, blob:limit=<n>)";
      return null;
    }
    case "update": {
      if (o.url !== undefined && !isNonEmpty(o.url)) return "'url' must be a non-empty string";
      const bad = gitTextProblem(o.url, o.ref);
      if (bad !== null) return bad;
      if (o.type !== undefined && !isNonEmpty(o.type)) return "'type' must be a non-empty string";
      const ref = o.ref;
      if (ref !== undefined && ref !== null && !isStr(ref)) return "'ref' must be a string or null";
      return null;
    }
    case "action_started":
    case "action_completed":
    case "action_halted":
      if (!isNonEmpty(o.action)) return "'action' must be a non-empty string";
      if (!isIdx(o.idx)) return "'idx' must be a non-negative integer";
      if (op === "action_completed" && typeof o.changed !== "boolean") return "'changed' must be true or false";
      if (op === "action_halted" && (!isStr(o.reason) || !isStr(o.stderr))) return "'reason' and 'stderr' must be strings";
      return null;
    default:
      return null; // rm, sync, and ops from a newer grex
  }
}
