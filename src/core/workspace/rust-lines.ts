// Reading a workspace written by the Rust grex (v1.0.x). Its grex.jsonl and
// grex.lock.jsonl have the same names and nearly the same lines; what differs
// is mapped here, one parsed line at a time, before the line is checked:
//
//   grex.jsonl       `update` as {field, value}; `update`, `rm`, `sync` and the
//                    action events without schema_version; action events name
//                    the pack `pack` and carry action_idx / action_name /
//                    result_summary / error_summary.
//   grex.lock.jsonl  no `type`, a `schema_version` field, `branch` as a string,
//                    `actions_hash` as bare hex.
//
// Lines already in this grex's format pass through untouched (the first test
// in each function is the whole cost on the hot path). `grex doctor --fix`
// rewrites both files in this format (see convert-rust.ts).
type Line = Record<string, unknown>;

/** The Rust grex writes schema "1" events, the schema this grex reads; lines that omit it are filled in with it. */
const RUST_SCHEMA_VERSION = "1";
/** The ops the Rust grex writes to grex.jsonl without a schema_version (its `add` carries one). */
const RUST_OPS = new Set(["update", "rm", "sync", "action_started", "action_completed", "action_halted"]);
/** `update` fields this grex applies (the Rust grex also has `path`, which is read as a no-op). */
const UPDATE_FIELDS = new Set(["url", "ref"]);
/** Pack type recorded for a Rust lock entry (which has none): the default for a pack without pack.yaml. */
export const RUST_LOCK_DEFAULT_TYPE = "meta";

const rename = (o: Line, from: string, to: string): void => {
  if (from in o) {
    if (!(to in o)) o[to] = o[from];
    delete o[from];
  }
};

/** Whether a parsed grex.jsonl line has the Rust grex's shape (and needs `fromRustEvent`). */
export const isRustEvent = (o: Line): boolean =>
  o.schema_version === undefined && typeof o.op === "string" && RUST_OPS.has(o.op);

/** A parsed grex.jsonl line in this grex's shape: Rust-shaped lines are mapped (in place), others returned as they are. */
export function fromRustEvent(o: Line): Line {
  if (!isRustEvent(o)) return o;
  o.schema_version = RUST_SCHEMA_VERSION;
  switch (o.op) {
    case "update": {
      const field = o.field;
      if (typeof field === "string" && UPDATE_FIELDS.has(field) && !(field in o)) {
        const value = o.value;
        if (field === "ref" ? value === null || typeof value === "string" : typeof value === "string" && value !== "") o[field] = value;
      }
      delete o.field;
      delete o.value;
      break;
    }
    case "action_started":
    case "action_completed":
    case "action_halted":
      rename(o, "pack", "id");
      rename(o, "action_idx", "idx");
      rename(o, "action_name", "action");
      // action_completed names no action in the Rust grex.
      if (typeof o.action !== "string" || o.action === "") o.action = "unknown";
      if (o.op === "action_completed") {
        o.changed = o.result_summary === "performed_change";
        delete o.result_summary;
      }
      if (o.op === "action_halted") {
        rename(o, "error_summary", "reason");
        if (typeof o.stderr !== "string") o.stderr = "";
      }
      break;
  }
  return o;
}

/** Whether a parsed grex.lock.jsonl line has the Rust grex's shape. */
export const isRustLockEntry = (o: Line): boolean => o.type === undefined && o.schema_version !== undefined;

/** A parsed grex.lock.jsonl line in this grex's shape: Rust-shaped entries are mapped (in place), others returned as they are. */
export function fromRustLockEntry(o: Line): Line {
  if (!isRustLockEntry(o)) return o;
  delete o.schema_version;
  o.type = RUST_LOCK_DEFAULT_TYPE;
  // The Rust grex writes the branch as a string ("" or "HEAD" when detached).
  if (o.branch === "" || o.branch === "HEAD") o.branch = null;
  // Bare hex from the Rust grex: another recipe, so it never matches ours and the next sync re-applies the setup once.
  if (typeof o.actions_hash === "string" && /^[0-9a-f]{64}$/.test(o.actions_hash)) o.actions_hash = `sha256:${o.actions_hash}`;
  return o;
}

/** How many lines of a JSON-lines text have the Rust shape (unparsable lines are left to the regular reader). */
export function countRustLines(text: string, isRust: (o: Line) => boolean): number {
  let n = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const o: unknown = JSON.parse(line);
      if (o !== null && typeof o === "object" && !Array.isArray(o) && isRust(o as Line)) n++;
    } catch {
      // not ours to judge here
    }
  }
  return n;
}
