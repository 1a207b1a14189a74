// grex.lock.jsonl, the resolved state (SPEC §2.2): one object per line, last
// line wins per id. Appended after each pack sync, rewritten compactly
// (temp + rename) at the end of a sync; every write is under the manifest lock.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import * as v from "valibot";
import { fromRustLockEntry } from "./rust-lines.ts";
import { GrexError, errnoCode, integrityError, usageError } from "../base/errors.ts";
import { fsError } from "../base/fs-errors.ts";
import { assertPlainFile } from "../fs/plain-file.ts";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { withManifestLock } from "../locks/locks.ts";
import { firstIssue } from "../base/issues.ts";
import { appendJsonlLines, eachJsonLine, NOT_JSON, type WarnSink } from "./jsonl.ts";
import { TS_RE } from "./manifest.ts";
import { controlCharIn, controlCharProblem, PACK_PATH_RE } from "../base/naming.ts";
import type { Workspace } from "../base/workspace.ts";
import { type GrexCheckout, type LocalInstall, readLocalInstalls, writeLocalInstalls } from "./local-installs.ts";

// The rules of an entry's fields, shared by the schema and the plain-entry check below.
const SHA_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})?$/;
const ACTIONS_HASH_RE = /^(?:sha256:[0-9a-f]{64})?$/;
const isTimestampOrEmpty = (s: string) => s === "" || TS_RE.test(s);

/** A url, ref or branch: no control character (git refuses them; a newline would reach a .git/config as a line of its own). */
const isGitText = (s: string) => controlCharIn(s) === null;
const gitText = () => v.pipe(v.string(), v.check(isGitText, (i) => controlCharProblem("it", String(i.input)) ?? "must not contain a control character"));

const shaSchema = () => v.pipe(v.string(), v.regex(SHA_RE, "must be a commit sha, or empty when not a git repo"));

const buildLockEntrySchema = () => v.object({
  id: v.pipe(v.string(), v.regex(PACK_PATH_RE, "must be a pack id")),
  sha: shaSchema(),
  /** null when detached. */
  branch: v.nullable(gitText()),
  /**
   * RFC 3339 UTC, or empty when the pack's setup never ran. Per machine: kept in
   * .grex/.state/installs.json and no longer written to the line (read from an older grex's lines).
   */
  installed_at: v.optional(v.pipe(v.string(), v.check(isTimestampOrEmpty, "must be an RFC 3339 UTC timestamp or empty")), ""),
  actions_hash: v.pipe(v.string(), v.regex(ACTIONS_HASH_RE, "must be sha256:<hex> or empty")),
  type: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
  /** Commit the pack's setup last ran at (`update` reinstalls when HEAD moved past it). */
  installed_sha: v.optional(shaSchema()),
  /** Children only: where they come from, so `ls` needs no pack.yaml. */
  url: v.optional(gitText()),
  ref: v.optional(v.nullable(gitText())),
  /** Set when the last install failed or was interrupted (installed_at is then empty); sync retries it. */
  install_error: v.optional(v.string()),
});

const OPTIONAL_KEYS = ["installed_sha", "url", "ref", "install_error"] as const;
const ENTRY_KEYS = new Set<string>(["id", "sha", "branch", "installed_at", "actions_hash", "type", ...OPTIONAL_KEYS]);

/**
 * The entry as the schema would give it, checked by hand, or null when the
 * line is anything but plainly valid (the schema then decides and words the
 * error). Reading grex.lock.jsonl is on the path of `ls` and `status`, and
 * the schema costs ~25 µs a line in a process this short.
 */
export function plainLockEntry(o: Record<string, unknown>): LockEntry | null {
  const { id, sha, branch, installed_at, actions_hash, type } = o;
  if (typeof id !== "string" || !PACK_PATH_RE.test(id)) return null;
  if (typeof sha !== "string" || !SHA_RE.test(sha)) return null;
  if (branch !== null && (typeof branch !== "string" || !isGitText(branch))) return null;
  if (installed_at !== undefined && (typeof installed_at !== "string" || !isTimestampOrEmpty(installed_at))) return null;
  if (typeof actions_hash !== "string" || !ACTIONS_HASH_RE.test(actions_hash)) return null;
  if (typeof type !== "string" || type.length === 0) return null;
  const entry: LockEntry = { id, sha, branch, installed_at: installed_at ?? "", actions_hash, type };
  for (const key in o) {
    if (!ENTRY_KEYS.has(key)) return null; // the schema drops unknown keys: let it
  }
  const { installed_sha, url, ref, install_error } = o;
  if (installed_sha !== undefined) {
    if (typeof installed_sha !== "string" || !SHA_RE.test(installed_sha)) return null;
    entry.installed_sha = installed_sha;
  }
  if (url !== undefined) {
    if (typeof url !== "string" || !isGitText(url)) return null;
    entry.url = url;
  }
  if (ref !== undefined) {
    if (ref !== null && (typeof ref !== "string" || !isGitText(ref))) return null;
    entry.ref = ref;
  }
  if (install_error !== undefined) {
    if (typeof install_error !== "string") return null;
    entry.install_error = install_error;
  }
  return entry;
}

let builtLockEntrySchema: ReturnType<typeof buildLockEntrySchema> | undefined;
/** The schema of one entry, built on first use: reading an empty lockfile (`ls` on a fresh workspace) never needs it. */
const lockEntrySchema = (): ReturnType<typeof buildLockEntrySchema> => (builtLockEntrySchema ??= buildLockEntrySchema());

/** A line's shared fields, with this machine's install facts laid over them (local-installs.ts). */
export type LockEntry = v.InferOutput<ReturnType<typeof buildLockEntrySchema>> & {
  /** The setup's hash as installed on this machine, when it differs from what the line records. */
  installed_hash?: string;
  /** Where grex itself last left the pack's HEAD. */
  checkout?: GrexCheckout;
};

/** The setup hash installed here (a line written before installs.json existed: its own). */
export const installedHash = (e: LockEntry): string => e.installed_hash ?? e.actions_hash;

/** One entry through the schema: the reference that plainLockEntry must agree with. */
export const safeParseLockEntry = (o: unknown) => v.safeParse(lockEntrySchema(), o);

/** Parse lockfile text: last line wins per id (first-seen order kept). Bad lines but a torn tail are integrity errors naming file:line. */
export function parseLockfile(text: string, file: string): { entries: Map<string, LockEntry>; tornTail: boolean } {
  const entries = new Map<string, LockEntry>();
  const name = basename(file);
  let tornTail = false;
  eachJsonLine(text, (obj, lineNo, last) => {
    if (obj === NOT_JSON) {
      if (last) {
        tornTail = true; // a crash mid-append
        return false;
      }
      throw badLine(name, file, lineNo, "is not valid JSON");
    }
    if (typeof obj !== "object" || obj === null || Array.isArray(obj)) throw badLine(name, file, lineNo, "is not a lock entry object");
    const candidate = fromRustLockEntry(obj as Record<string, unknown>);
    const plain = plainLockEntry(candidate);
    if (plain) {
      entries.set(plain.id, plain);
      return;
    }
    const parsed = safeParseLockEntry(candidate);
    if (!parsed.success) {
      const issue = firstIssue(parsed.issues);
      const field = issue.field || "entry";
      const what = issue.missing ? `has no '${field}'` : `has a bad '${field}' (${issue.message})`;
      throw badLine(name, file, lineNo, what);
    }
    entries.set(parsed.output.id, parsed.output);
  });
  return { entries, tornTail };
}

function badLine(name: string, file: string, line: number, what: string): GrexError {
  return integrityError(`${name} line ${line} ${what}; fix or delete that line, then run grex sync.`, { file, line });
}

/**
 * The resolved state. A missing file is empty. A torn tail is ignored with a
 * warning; the next locked append or rewrite truncates it.
 */
export function readLockfile(ws: Workspace, opts?: WarnSink): Map<string, LockEntry> {
  let text: string;
  assertPlainFile(ws.lockPath);
  try {
    text = readFileSync(ws.lockPath, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return new Map();
    throw fsError(err, ws.lockPath) ?? new GrexError("integrity", `Could not read ${ws.lockPath} (${errnoCode(err) ?? String(err)}); check that the file is readable.`);
  }
  const { entries, tornTail } = parseLockfile(text, ws.lockPath);
  if (tornTail) {
    opts?.warn(`${basename(ws.lockPath)} ends in a partly written line (an interrupted write); ignored it, the next write removes it.`);
  }
  return withLocalInstalls(entries, readLocalInstalls(ws));
}

/** This machine's install facts over the shared lines; a line with no record keeps what an older grex wrote into it. */
function withLocalInstalls(entries: Map<string, LockEntry>, local: ReadonlyMap<string, LocalInstall>): Map<string, LockEntry> {
  if (local.size === 0) return entries;
  for (const [id, e] of entries) {
    const r = local.get(id);
    if (!r) continue;
    const { installed_sha: _s, install_error: _e, ...shared } = e;
    entries.set(id, { ...shared, ...r });
  }
  return entries;
}

/** The per-machine part of an entry. */
function localPart(e: LockEntry): LocalInstall {
  const r: LocalInstall = { installed_at: e.installed_at };
  if (e.installed_sha !== undefined) r.installed_sha = e.installed_sha;
  if (e.installed_hash !== undefined && e.installed_hash !== e.actions_hash) r.installed_hash = e.installed_hash;
  if (e.install_error !== undefined) r.install_error = e.install_error;
  if (e.checkout !== undefined) r.checkout = e.checkout;
  return r;
}

/** One validated line in canonical key order: the shared fields only (what a teammate's sync resolves alike). */
function entryLine(entry: LockEntry): string {
  const { id, sha, branch, actions_hash, type, url, ref } = entry;
  const shared = { id, sha, branch, actions_hash, type, ...(url !== undefined ? { url } : {}), ...(ref !== undefined ? { ref } : {}) };
  const parsed = safeParseLockEntry(shared);
  if (!parsed.success) {
    const { field: path, message } = firstIssue(parsed.issues);
    const field = path || "entry";
    throw usageError(
      `Cannot record lock entry '${String(entry.id)}' in grex.lock.jsonl: '${field}' ${message}; use a valid value.`,
      { field },
    );
  }
  return `${JSON.stringify(shared)}\n`;
}

/** Append entries while already holding the manifest lock: validated first, then one write + fsync for all of them. */
export function appendLockEntriesLocked(ws: Workspace, entries: Iterable<LockEntry>, opts?: WarnSink): void {
  const lines = [...entries].map(entryLine);
  if (lines.length === 0) return;
  appendJsonlLines(ws.lockPath, lines, true, opts); // a missing lockfile is created
}

export async function appendLockEntries(
  ws: Workspace,
  entries: Iterable<LockEntry>,
  signal?: AbortSignal,
  opts?: WarnSink,
): Promise<void> {
  const list = [...entries];
  if (list.length === 0) return;
  await withManifestLock(ws, signal, () => appendLockEntriesLocked(ws, list, opts));
}

export interface LockWriteOptions {
  /** false: only this machine's records change (`sync --locked` never writes the committed file). Default true. */
  shared?: boolean;
  /** Rewrite whenever the bytes differ, folding identical duplicate lines too (`doctor --compact`). */
  compact?: boolean;
}

/**
 * Compact atomic rewrite (temp + fsync + rename) while already holding the
 * manifest lock, and this machine's records beside it (local-installs.ts).
 * The committed file is rewritten only when what it says changes: the same
 * bytes, or lines that fold to the same entries (identical duplicates a union
 * merge left, a line an older grex wrote with its install time) leave it
 * untouched, not even its mtime. A torn tail or a pack recorded at two
 * commits is rewritten. Returns whether the committed file was written.
 */
export function writeLockfileLocked(ws: Workspace, entries: Iterable<LockEntry>, opts: LockWriteOptions = {}): boolean {
  const list = [...entries];
  let out = "";
  for (const e of list) out += entryLine(e);
  writeLocalInstalls(ws, new Map(list.map((e) => [e.id, localPart(e)])));
  if (opts.shared === false || sameMeaning(ws, out, opts.compact === true)) return false;
  atomicWriteFile(ws.lockPath, out);
  return true;
}

function sameMeaning(ws: Workspace, out: string, compact: boolean): boolean {
  let text: string;
  try {
    text = readFileSync(ws.lockPath, "utf8");
  } catch {
    return false;
  }
  if (text === out) return true;
  if (compact) return false;
  try {
    const { entries, tornTail } = parseLockfile(text, ws.lockPath);
    if (tornTail || lockConflictsIn(text).size > 0) return false;
    let folded = "";
    for (const e of entries.values()) folded += entryLine(e);
    return folded === out;
  } catch {
    return false; // a bad line: the rewrite replaces it
  }
}

/** Compact atomic rewrite under the manifest lock: one line per entry, in the order given. */
export async function writeLockfile(ws: Workspace, entries: Iterable<LockEntry>, signal?: AbortSignal, opts?: LockWriteOptions): Promise<boolean> {
  const list = [...entries]; // snapshot now: the caller may mutate its map while we wait for the lock
  return withManifestLock(ws, signal, () => writeLockfileLocked(ws, list, opts));
}

/**
 * Ids the lockfile records at two or more different commits. grex rewrites
 * the file with one line per id, so this only happens when a union merge of
 * two branches kept both branches' line for a pack: which commit is locked is
 * then a question for the user (`grex doctor` reports it, `sync --locked`
 * refuses it). Lines that do not parse are left to the reader's errors.
 */
export function lockConflicts(ws: Workspace): Map<string, string[]> {
  let text: string;
  try {
    text = readFileSync(ws.lockPath, "utf8");
  } catch {
    return new Map();
  }
  return lockConflictsIn(text);
}

function lockConflictsIn(text: string): Map<string, string[]> {
  const shas = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof o !== "object" || o === null) continue;
    const { id, sha } = fromRustLockEntry(o as Record<string, unknown>);
    if (typeof id !== "string" || typeof sha !== "string") continue;
    const set = shas.get(id) ?? new Set<string>();
    set.add(sha);
    shas.set(id, set);
  }
  const out = new Map<string, string[]>();
  for (const [id, set] of shas) if (set.size > 1) out.set(id, [...set]);
  return out;
}
