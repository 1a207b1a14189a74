// Diverging changes to one pack after a merge of grex.jsonl.
//
// grex.jsonl is merged as a union (`merge=union` in .gitattributes): both
// branches' new lines are kept, ours first. For different packs that is
// exactly right. For the same pack, file order no longer says which change
// came last: the union puts one branch's line after the other's whatever
// their history. So every intent line grex writes (add, update, rm) names the
// line(s) for the same id it supersedes, by their `ts`, in `prev`:
//
//   - a string or a list: the heads it replaces (a list after a fork, so a
//     resolving line closes every branch at once);
//   - an empty list: an `add` of an id with no earlier line;
//   - absent: a line from before this rule (older grex, Rust grex, a
//     compacted log): it replaces whatever came before, as file order says.
//
// Per id, the heads are the lines no later line supersedes. One head is a
// linear history. Two or more heads that set the same field (ref, url, type,
// path) to different values, or a removal beside a change, are a conflict:
// both branches changed the pack and the fold's pick (the last line) is only
// an accident of the merge. `grex doctor` reports it; `grex update <id> --ref
// <ref>` (or `grex rm`) writes a line superseding every head, which resolves it.
import type { ManifestEvent, Prev } from "./manifest-events.ts";

const CHAIN_OPS: ReadonlySet<string> = new Set(["add", "update", "rm"]);
const FIELDS = ["ref", "url", "type", "path"] as const;

type Heads = Map<string, Map<string, ManifestEvent>>;

function prevList(p: unknown): string[] | null {
  if (p === undefined) return null;
  if (typeof p === "string") return [p];
  return Array.isArray(p) ? (p as string[]) : null;
}

function step(heads: Heads, e: ManifestEvent): void {
  if (!CHAIN_OPS.has(e.op)) return;
  const prev = prevList((e as { prev?: unknown }).prev);
  let cur = heads.get(e.id);
  if (cur === undefined || prev === null) {
    cur = new Map();
    heads.set(e.id, cur);
  } else for (const p of prev) cur.delete(p);
  cur.set(e.ts, e);
}

function headsOf(events: readonly ManifestEvent[]): Heads {
  const heads: Heads = new Map();
  for (const e of events) step(heads, e);
  return heads;
}

/** `toAppend` with `prev` filled in from the current heads of `existing` (and of earlier lines of the batch). */
export function chainEvents(existing: readonly ManifestEvent[], toAppend: readonly ManifestEvent[]): ManifestEvent[] {
  const heads = headsOf(existing);
  return toAppend.map((e) => {
    if (!CHAIN_OPS.has(e.op) || (e as { prev?: unknown }).prev !== undefined) {
      step(heads, e);
      return e;
    }
    const cur = [...(heads.get(e.id)?.keys() ?? [])];
    const prev: Prev = cur.length === 1 ? (cur[0] as string) : cur;
    const chained = { ...e, prev } as ManifestEvent;
    step(heads, chained);
    return chained;
  });
}

export interface Divergence {
  id: string;
  /** What the heads disagree on: a field name, or `rm`. */
  field: string;
  /** One clause per head: "ref 'v1' (2026-01-01T00:00:00Z)". */
  sides: string[];
}

const show = (x: unknown) => (x === null ? "none" : `'${String(x)}'`);

/** Packs whose lines fork (two or more heads) and whose heads disagree. */
export function divergences(events: readonly ManifestEvent[]): Divergence[] {
  const out: Divergence[] = [];
  for (const [id, cur] of headsOf(events)) {
    if (cur.size < 2) continue;
    const heads = [...cur.values()];
    const removed = heads.filter((h) => h.op === "rm");
    if (removed.length > 0 && removed.length < heads.length) {
      out.push({ id, field: "rm", sides: heads.map((h) => (h.op === "rm" ? `removed (${h.ts})` : `${h.op === "add" ? "added" : "changed"} (${h.ts})`)) });
      continue;
    }
    for (const f of FIELDS) {
      const set = heads.filter((h) => f in h && (h as Record<string, unknown>)[f] !== undefined);
      const values = new Set(set.map((h) => JSON.stringify((h as Record<string, unknown>)[f] ?? null)));
      if (values.size < 2) continue;
      out.push({ id, field: f, sides: set.map((h) => `${f} ${show((h as Record<string, unknown>)[f] ?? null)} (${h.ts})`) });
      break;
    }
  }
  return out;
}
