// grex.jsonl, the intent log (SPEC §2.1): append-only JSON lines folded into
// the set of registered packs. An append is one write + fsync (all its lines)
// under the manifest lock; a torn last line (crash mid-append) is truncated away.
//
// Reading is on the hot path of every command, so lines are checked by
// `checkEvent` (plain typeof/regex checks) rather than by running the valibot
// schemas per line (4x the cost of JSON.parse), and the event objects are only
// kept when the caller asks for them. The schemas (manifest-schema.ts) are the
// contract: every outgoing event is validated with them, and a test keeps the
// two in agreement. A long manifest's fold is also kept as a snapshot
// (manifest-snapshot.ts).
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import * as v from "valibot";
import type * as ManifestSchema from "./manifest-schema.ts";
import { fromRustEvent } from "./rust-lines.ts";
import { GrexError, errnoCode, integrityError, usageError } from "../base/errors.ts";
import { fsError } from "../base/fs-errors.ts";
import { assertPlainFile } from "../fs/plain-file.ts";
import { firstIssue } from "../base/issues.ts";
import { appendJsonlLines, eachJsonLine, NOT_JSON, truncateTornTail, type WarnSink } from "./jsonl.ts";
import { foldStep, OpenBrackets } from "./manifest-fold.ts";
import { readSnapshot, type Snapshot, SNAPSHOT_MIN_CHARS, snapshotKey, writeSnapshot } from "./manifest-snapshot.ts";
import { withManifestLock } from "../locks/locks.ts";
import { appendJournalLocked, interruptedWithJournal, isRuntimeOp } from "./journal.ts";
import { chainEvents } from "./manifest-conflicts.ts";
import { assertNoNestedPacks } from "./manifest-paths.ts";
import type { Workspace } from "../base/workspace.ts";

import { checkEvent, type EventOf, isOp, type ManifestEvent, MAX_LINE_BYTES, type PackEntry, SCHEMA_VERSION } from "./manifest-events.ts";

export * from "./manifest-events.ts";
export { PACK_PATH_RE } from "../base/naming.ts";
// Split along its seams; the names stay importable from here.
export { prepareJsonlAppend, type WarnSink } from "./jsonl.ts";
export { fold } from "./manifest-fold.ts";

export interface ParsedManifest {
  events: ManifestEvent[];
  /** The last line was a torn write: unparsable and not ended by a newline. */
  tornTail: boolean;
}

/** Parse the text of a manifest. Throws an integrity error naming file and 1-based line for any bad line but a torn tail. */
export function parseManifest(text: string, file: string): ParsedManifest {
  const events: ManifestEvent[] = [];
  const tornTail = scanManifest(text, file, (e) => {
    events.push(e);
  });
  return { events, tornTail };
}

/**
 * One validating pass over the lines, handing each event to `each` (so a
 * caller that only folds need not keep 100k objects alive). Returns whether
 * the last line is a torn tail (which is skipped).
 */
function scanManifest(text: string, file: string, each: (e: ManifestEvent) => void): boolean {
  let torn = false;
  eachJsonLine(text, (o, lineNo, last) => {
    if (o === NOT_JSON) {
      if (last) {
        torn = true;
        return false;
      }
      throw badLine(file, lineNo, "is not valid JSON");
    }
    if (typeof o !== "object" || o === null || Array.isArray(o)) throw badLine(file, lineNo, "is not a JSON object");
    const e = fromRustEvent(o as Record<string, unknown>);
    if (e.schema_version !== SCHEMA_VERSION) throw badVersion(file, lineNo, e.schema_version);
    const why = checkEvent(e);
    if (why !== null) {
      const what = typeof e.op === "string" && e.op !== "" ? `'${e.op}' event` : "event";
      throw badLine(file, lineNo, `is not a valid ${what} (${why})`);
    }
    if (e.op === "add" && e.ref === undefined) e.ref = null;
    each(e as ManifestEvent);
  });
  return torn;
}

function badLine(file: string, line: number, what: string): GrexError {
  return integrityError(`${basename(file)} line ${line} ${what}; fix or delete that line (grex doctor lists every problem).`, {
    file,
    line,
  });
}

function badVersion(file: string, line: number, got: unknown): GrexError {
  const name = basename(file);
  const msg =
    got === undefined
      ? `${name} line ${line} has no schema_version; add "schema_version":"1" to that line or delete it.`
      : `${name} line ${line} has schema_version ${JSON.stringify(got)}, but this grex reads only "1"; upgrade grex, or restore ${name} from git.`;
  return integrityError(msg, { file, line });
}

// ---------------------------------------------------------------------------
// Reading

/** The manifest file's bytes; a usage error when it is missing, a clear error when unreadable. */
export function readManifestBytes(path: string): Buffer {
  assertPlainFile(path);
  try {
    return readFileSync(path);
  } catch (err) {
    throw manifestOpenError(path, err);
  }
}

function manifestOpenError(path: string, err: unknown): GrexError {
  const code = errnoCode(err);
  if (code === "ENOENT") return usageError(`No manifest at ${path}; run \`grex init\` first.`);
  return fsError(err, path) ?? new GrexError("integrity", `Could not read ${path} (${code ?? String(err)}); check that the file is readable.`);
}

export interface ManifestState {
  /** Every event in file order. Parsed again on first access unless `keepEvents` was passed. */
  readonly events: ManifestEvent[];
  state: Map<string, PackEntry>;
  /**
   * The same packs in fold order, when they came from the fold snapshot: the
   * map is then built on first access only, so a reader that just walks the
   * packs (the workspace view) should walk this.
   */
  readonly ordered?: readonly PackEntry[];
  /** Packs whose last install was cut short (an action bracket never closed; manifest-fold.ts). */
  readonly interrupted: ReadonlySet<string>;
}

export interface ReadOptions extends WarnSink {
  /**
   * Keep the events from the validating pass (for callers that will use
   * them: sync, doctor, import). Without it only the fold is built, which is
   * what most commands need and is markedly cheaper on a long log; `events`
   * then re-parses the text on first access.
   */
  keepEvents?: boolean;
}

/** Validate and fold `text` in one pass. */
function foldText(text: string, file: string, keepEvents: boolean): { result: ManifestState; tornTail: boolean } {
  const state = new Map<string, PackEntry>();
  const open = new OpenBrackets();
  if (keepEvents) {
    const events: ManifestEvent[] = [];
    const tornTail = scanManifest(text, file, (e) => {
      events.push(e);
      foldStep(state, e);
      open.see(e);
    });
    assertNoNestedPacks(state.values(), text, file);
    return { result: { events, state, interrupted: open.packs() }, tornTail };
  }
  const tornTail = scanManifest(text, file, (e) => {
    foldStep(state, e);
    open.see(e);
  });
  assertNoNestedPacks(state.values(), text, file);
  return { result: withLazyEvents(state, open.packs(), text, file), tornTail };
}

/** The events of `text`, parsed on first call (the text folded cleanly already: cannot throw). */
function lazyEvents(text: string, file: string): () => ManifestEvent[] {
  let events: ManifestEvent[] | undefined;
  let source: string | undefined = text;
  return () => {
    if (events === undefined) {
      events = parseManifest(source as string, file).events;
      source = undefined;
    }
    return events;
  };
}

/** A fold of `text` whose events are parsed from it on first access. */
function withLazyEvents(state: Map<string, PackEntry>, interrupted: ReadonlySet<string>, text: string, file: string): ManifestState {
  const events = lazyEvents(text, file);
  return {
    state,
    interrupted,
    get events() {
      return events();
    },
  };
}

/** A fold read from the snapshot: the packs in order now, their map and the events on first access. */
function fromSnapshot({ packs, interrupted }: Snapshot, text: string, file: string): ManifestState {
  const events = lazyEvents(text, file);
  let state: Map<string, PackEntry> | undefined;
  return {
    ordered: packs,
    interrupted,
    get state() {
      if (state === undefined) {
        state = new Map();
        for (const p of packs) state.set(p.id, p);
      }
      return state;
    },
    get events() {
      return events();
    },
  };
}

/** Read and fold while already holding the manifest lock; truncates a torn tail (with a warning). */
export function readManifestLocked(ws: Workspace, opts: ReadOptions): ManifestState {
  const buf = readManifestBytes(ws.manifestPath);
  const { result, tornTail } = foldText(buf.toString("utf8"), ws.manifestPath, opts.keepEvents === true);
  if (tornTail) {
    const keep = buf.lastIndexOf(0x0a) + 1;
    truncateTornTail(ws.manifestPath, keep, buf.length - keep, opts);
  }
  return withJournal(ws, result, opts);
}

/** The fold with the runtime journal's say on interrupted installs (journal.ts). */
function withJournal(ws: Workspace, result: ManifestState, opts: WarnSink): ManifestState {
  const interrupted = interruptedWithJournal(ws, result.interrupted, () => result.events, opts);
  if (interrupted === result.interrupted) return result;
  // Keep the lazy getters of `result` (events, state): only `interrupted` changes.
  return {
    get events() {
      return result.events;
    },
    get state() {
      return result.state;
    },
    ...(result.ordered === undefined ? {} : { ordered: result.ordered }),
    interrupted,
  };
}

/** Read and fold grex.jsonl. Lock-free unless a torn tail has to be repaired (re-checked under the lock). */
export async function readManifest(ws: Workspace, opts: ReadOptions): Promise<ManifestState> {
  let text: string;
  assertPlainFile(ws.manifestPath);
  try {
    text = readFileSync(ws.manifestPath, "utf8");
  } catch (err) {
    throw manifestOpenError(ws.manifestPath, err);
  }
  // A long manifest read only for its packs: the snapshot of this exact text, when there is one.
  const key = opts.keepEvents !== true && text.length >= SNAPSHOT_MIN_CHARS ? snapshotKey(text) : undefined;
  const cached = key === undefined ? undefined : readSnapshot(ws, key);
  if (cached !== undefined) {
    assertNoNestedPacks(cached.packs, text, ws.manifestPath); // a snapshot an older grex wrote knew no such rule
    return withJournal(ws, fromSnapshot(cached, text, ws.manifestPath), opts);
  }
  const { result, tornTail } = foldText(text, ws.manifestPath, opts.keepEvents === true);
  if (!tornTail) {
    if (key !== undefined) writeSnapshot(ws, key, result);
    return withJournal(ws, result, opts);
  }
  try {
    return await withManifestLock(ws, undefined, () => readManifestLocked(ws, opts));
  } catch (err) {
    // A read-only workspace still reads: the torn line is skipped, just not removed.
    const code = errnoCode(err);
    if (!(err instanceof GrexError && err.kind === "lock") && code !== "EACCES" && code !== "EROFS" && code !== "EPERM") throw err;
    opts.warn(`${basename(ws.manifestPath)} ends in a partly written line (an interrupted write); ignored it, but could not remove it (${err instanceof Error ? err.message.replace(/\.$/, "") : String(err)}).`);
    return withJournal(ws, result, opts);
  }
}

// ---------------------------------------------------------------------------
// Writing

const ELLIPSIS = "…";

/** Serialize one event as a line, validated against the schema and capped at 2 KiB (halted-action stderr keeps its tail). */
export function eventLine(event: ManifestEvent): string {
  const { eventSchemaFor } = require("./manifest-schema.ts") as typeof ManifestSchema;
  const checked = v.safeParse(eventSchemaFor(event.op), event);
  if (!checked.success) {
    const { field: path, message } = firstIssue(checked.issues);
    const field = path || "event";
    throw usageError(
      `Cannot record a '${String(event.op)}' event for '${String(event.id)}' in grex.jsonl: '${field}' ${message}; use a valid value.`,
      { field },
    );
  }
  const line = `${JSON.stringify(event)}\n`;
  const size = Buffer.byteLength(line);
  if (size <= MAX_LINE_BYTES) return line;
  if (isOp(event, "action_halted")) {
    const fitted = fitHalted(event);
    if (fitted !== null) return fitted;
  }
  throw usageError(
    `A '${event.op}' event for '${event.id}' would be ${size} bytes, over grex.jsonl's ${MAX_LINE_BYTES}-byte line limit; use shorter values.`,
  );
}

/** Shorten stderr (keep its tail), then if needed the reason (keep its head), until the line fits. */
function fitHalted(event: EventOf<"action_halted">): string | null {
  const fits = (e: EventOf<"action_halted">) => Buffer.byteLength(`${JSON.stringify(e)}\n`) <= MAX_LINE_BYTES;
  const withStderr = (n: number) => ({ ...event, stderr: n === 0 ? "" : ELLIPSIS + tailChars(event.stderr, n) });
  if (fits(withStderr(0))) {
    // Largest tail that fits: binary search over the kept character count.
    let lo = 0;
    let hi = event.stderr.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (fits(withStderr(mid))) lo = mid;
      else hi = mid - 1;
    }
    return `${JSON.stringify(withStderr(lo))}\n`;
  }
  const bare = { ...event, stderr: "" };
  const withReason = (n: number) => ({ ...bare, reason: headChars(event.reason, n) + ELLIPSIS });
  if (!fits(withReason(0))) return null;
  let lo = 0;
  let hi = event.reason.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(withReason(mid))) lo = mid;
    else hi = mid - 1;
  }
  return `${JSON.stringify(withReason(lo))}\n`;
}

/** Last `n` UTF-16 units of `s`, never starting inside a surrogate pair. */
function tailChars(s: string, n: number): string {
  let from = s.length - n;
  const c = s.charCodeAt(from);
  if (c >= 0xdc00 && c <= 0xdfff) from++;
  return s.slice(from);
}

/** First `n` UTF-16 units of `s`, never ending inside a surrogate pair. */
function headChars(s: string, n: number): string {
  let to = n;
  const c = to > 0 ? s.charCodeAt(to - 1) : 0;
  if (c >= 0xd800 && c <= 0xdbff) to--;
  return s.slice(0, to);
}

/**
 * Append events while already holding the manifest lock: every line is
 * validated first, then one write + fsync for all of them. Intent (add, update, rm, ops
 * of a newer grex) goes to grex.jsonl, each event naming the lines it
 * supersedes (`prev`, manifest-conflicts.ts); runtime events (sync markers,
 * action brackets) go to the journal under .grex/.state/ (journal.ts).
 */
export function appendEventsLocked(ws: Workspace, events: readonly ManifestEvent[], opts?: WarnSink): void {
  if (events.length === 0) return;
  const intent: ManifestEvent[] = [];
  const runtime: ManifestEvent[] = [];
  for (const e of events) (isRuntimeOp(e.op) ? runtime : intent).push(e);
  const runtimeLines = runtime.map(eventLine);
  // A journal belongs to a workspace: without grex.jsonl there is none, as before the journal.
  if (intent.length === 0 && !existsSync(ws.manifestPath)) throw usageError(`No manifest at ${ws.manifestPath}; run \`grex init\` first.`);
  if (intent.length > 0) {
    const chained = chainEvents(parseManifest(readManifestBytes(ws.manifestPath).toString("utf8"), ws.manifestPath).events, intent);
    const lines = chained.map(eventLine);
    if (!appendJsonlLines(ws.manifestPath, lines, false, opts)) throw usageError(`No manifest at ${ws.manifestPath}; run \`grex init\` first.`);
  }
  appendJournalLocked(ws, runtimeLines, opts);
}

/** Append events to grex.jsonl under the manifest lock (SPEC §2.1). */
export async function appendEvents(
  ws: Workspace,
  events: readonly ManifestEvent[],
  signal?: AbortSignal,
  opts?: WarnSink,
): Promise<void> {
  if (events.length === 0) return;
  await withManifestLock(ws, signal, () => appendEventsLocked(ws, events, opts));
}

