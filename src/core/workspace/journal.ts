// The runtime journal, `.grex/.state/journal.jsonl`: sync markers and action
// brackets (`sync`, `action_started`, `action_completed`, `action_halted`).
// They say what happened on this machine, not what the team intends, so they
// stay out of the committed grex.jsonl (whose bytes then change only when a
// pack is added, re-pinned or removed). Same durability as grex.jsonl: one
// write + fsync per append (all its lines) under the manifest lock, a torn last line cut away
// before the next append. Reading is lenient: the journal is local state, so
// a line that is not a valid event is skipped with a warning, never fatal.
//
// Older workspaces (and the Rust grex) wrote these events into grex.jsonl;
// they are read there still, before the journal's (older lines first), and
// `doctor --compact` moves them here.
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { errnoCode } from "../base/errors.ts";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { appendJsonlLines, eachJsonLine, NOT_JSON, type WarnSink } from "./jsonl.ts";
import { OpenBrackets } from "./manifest-fold.ts";
import { checkEvent, type ManifestEvent, SCHEMA_VERSION } from "./manifest-events.ts";
import type { Workspace } from "../base/workspace.ts";

export const JOURNAL_FILE = "journal.jsonl";
/** Past this size an append also rewrites the journal down to what recovery needs. */
export const JOURNAL_COMPACT_BYTES = 256 * 1024;

const RUNTIME_OPS: ReadonlySet<string> = new Set(["sync", "action_started", "action_completed", "action_halted"]);

/** Whether an event is runtime state (journal) rather than intent (grex.jsonl). */
export const isRuntimeOp = (op: string): boolean => RUNTIME_OPS.has(op);

export const journalPath = (ws: Workspace): string => join(ws.stateDir, JOURNAL_FILE);

/** The journal's events in file order; empty when there is none. A torn tail and bad lines are skipped. */
export function readJournal(ws: Workspace, opts?: WarnSink): ManifestEvent[] {
  return parseJournal(readJournalText(ws, opts), journalPath(ws), opts);
}

function readJournalText(ws: Workspace, opts?: WarnSink): string {
  const path = journalPath(ws);
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT" || errnoCode(err) === "ENOTDIR") return "";
    opts?.warn(`could not read ${path} (${errnoCode(err) ?? String(err)}); crash recovery sees no runtime events this time`);
    return "";
  }
}

/** Parse journal text: every valid event line; a torn tail (a crash mid-append) is left for the next append to cut. */
export function parseJournal(text: string, path: string, opts?: WarnSink): ManifestEvent[] {
  const out: ManifestEvent[] = [];
  let bad = 0;
  eachJsonLine(text, (o, _lineNo, last) => {
    if (o === NOT_JSON) {
      if (!last) bad++; // a torn tail is left for the next append to cut
      return;
    }
    if (typeof o !== "object" || o === null || Array.isArray(o)) {
      bad++;
      return;
    }
    const e = o as Record<string, unknown>;
    if (e.schema_version !== SCHEMA_VERSION || checkEvent(e) !== null || !isRuntimeOp(String(e.op))) {
      bad++;
      return;
    }
    out.push(e as ManifestEvent);
  });
  if (bad > 0) opts?.warn(`${basename(path)} has ${bad} unreadable line${bad === 1 ? "" : "s"} (skipped; the file is grex's local state and may be deleted)`);
  return out;
}

/**
 * Append already serialized event lines (caller holds the manifest lock).
 * The end of a sync (its markers) and a journal grown past its bound also
 * rewrite it down to what recovery needs, so a report usually finds no
 * bracket in it and parses nothing (interruptedWithJournal).
 */
export function appendJournalLocked(ws: Workspace, lines: readonly string[], opts?: WarnSink): void {
  if (lines.length === 0) return;
  mkdirSync(ws.stateDir, { recursive: true });
  const path = journalPath(ws);
  appendJsonlLines(path, lines, true, opts);
  if (lines.some((l) => l.startsWith('{"op":"sync"'))) {
    compactJournalLocked(ws, opts);
    return;
  }
  let size = 0;
  try {
    size = statSync(path).size;
  } catch {
    return;
  }
  if (size > JOURNAL_COMPACT_BYTES) compactJournalLocked(ws, opts);
}

/**
 * What a runtime event list is worth keeping, in its original order: the
 * brackets still open and each pack's last sync marker (what crash recovery
 * needs), and the halts (why an action failed: all of them, or with
 * `lastHaltOnly` each pack's last). Closed start/completion pairs go.
 */
export function essentialRuntime(events: readonly ManifestEvent[], lastHaltOnly = false): ManifestEvent[] {
  const open = new Set(openRuntime(events));
  const last = new Map<string, ManifestEvent>();
  for (const e of events) if (e.op === "sync" || (lastHaltOnly && e.op === "action_halted")) last.set(`${e.op}\0${e.id}`, e);
  const keep = new Set<ManifestEvent>([...open, ...last.values()]);
  return events.filter((e) => keep.has(e) || (!lastHaltOnly && e.op === "action_halted"));
}

function openRuntime(events: readonly ManifestEvent[]): ManifestEvent[] {
  const open = new OpenBrackets();
  for (const e of events) open.see(e);
  return open.events();
}

/** Rewrite the journal down to its essential lines (temp + rename; caller holds the manifest lock). */
export function compactJournalLocked(ws: Workspace, opts?: WarnSink): void {
  const path = journalPath(ws);
  if (!existsSync(path)) return;
  const events = readJournal(ws, opts);
  let text = serialize(essentialRuntime(events));
  if (text.length > JOURNAL_COMPACT_BYTES / 2) text = serialize(essentialRuntime(events, true));
  atomicWriteFile(path, text);
}

const serialize = (events: readonly ManifestEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`).join("");

/**
 * Every runtime event of the workspace in the order it happened: those an
 * older grex (or the Rust grex, beside this one) left in grex.jsonl merged
 * with the journal's by time, each file's own order kept.
 */
export function runtimeEvents(ws: Workspace, manifestEvents: readonly ManifestEvent[], opts?: WarnSink): ManifestEvent[] {
  const legacy = manifestEvents.filter((e) => isRuntimeOp(e.op));
  const journal = readJournal(ws, opts);
  return legacy.length === 0 ? journal : mergeByTime(legacy, journal);
}

/** Two lists each in file order, merged by timestamp (ties: the first list first). */
function mergeByTime(a: readonly ManifestEvent[], b: readonly ManifestEvent[]): ManifestEvent[] {
  const out: ManifestEvent[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as ManifestEvent;
    const y = b[j] as ManifestEvent;
    if (Date.parse(x.ts) <= Date.parse(y.ts)) {
      out.push(x);
      i++;
    } else {
      out.push(y);
      j++;
    }
  }
  for (; i < a.length; i++) out.push(a[i] as ManifestEvent);
  for (; j < b.length; j++) out.push(b[j] as ManifestEvent);
  return out;
}

/**
 * The packs whose install was cut short, given those grex.jsonl's own lines
 * leave open (`fromManifest`, and its events on demand): brackets are matched
 * across both files in time order (runtimeEvents).
 */
export function interruptedWithJournal(
  ws: Workspace,
  fromManifest: ReadonlySet<string>,
  manifestEvents: () => readonly ManifestEvent[],
  opts?: WarnSink,
): ReadonlySet<string> {
  const text = readJournalText(ws, opts);
  // The usual case, on the path of every `ls` and `status`: nothing open anywhere, nothing to parse.
  if (fromManifest.size === 0 && !text.includes('"op":"action_started"')) return fromManifest;
  const journal = parseJournal(text, journalPath(ws), opts);
  if (journal.length === 0) return fromManifest;
  const legacy = fromManifest.size === 0 ? [] : manifestEvents().filter((e) => isRuntimeOp(e.op));
  return new Set(openRuntime(legacy.length === 0 ? journal : mergeByTime(legacy, journal)).map((e) => e.id));
}
