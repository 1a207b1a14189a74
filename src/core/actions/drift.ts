// Setup drift: after an action applies, the executor records what it left
// behind (`expect:<where>` in the pack state, via the action's own `expect`);
// `status` later asks the action's check (checks.ts) whether that still holds —
// a stat or a file read, never a re-run. `sync` re-applies exactly the items
// whose check fails (see packtypes/run-actions.ts).
import { existsSync, readFileSync } from "node:fs";
import { CHECKS } from "./checks.ts";
import type { ActionContext, ActionDef, Expectation, PackState } from "./types.ts";

const PREFIX = "expect:";

interface Recorded {
  action: string;
  /** The pack.yaml item as written (variables unexpanded), so sync can re-apply it. */
  item: Record<string, unknown>;
  fact: Expectation;
}

/** One drifted action: which, where it wrote, and what differs now. */
export interface SetupDrift {
  action: string;
  /** Top-level index in `actions` (a nested item reports its `when`'s index). */
  idx: number;
  /** Where in pack.yaml: `actions[2]`, `actions[1].when.actions[0]`. */
  where: string;
  path: string;
  differs: string;
}

/** Remember what a successful apply of `item` at `where` must leave in place. Install lists only. */
export function recordExpectation(def: ActionDef<unknown>, args: unknown, item: unknown, where: string, ctx: ActionContext): string | null {
  if (ctx.dryRun || !def.expect || !where.startsWith("actions[")) return null;
  const fact = def.expect(args, ctx);
  if (!fact) return null;
  const key = PREFIX + where;
  ctx.state[key] = { action: def.name, item: item as Record<string, unknown>, fact } satisfies Recorded;
  return key;
}

/** Whether any expectation is recorded. */
export const hasExpectations = (state: PackState): boolean => Object.keys(state).some((k) => k.startsWith(PREFIX));

/** Forget every expectation (a full install records them afresh). */
export function clearExpectations(state: PackState): void {
  for (const k of Object.keys(state)) if (k.startsWith(PREFIX)) delete state[k];
}

const topIdx = (where: string) => Number(/^actions\[(\d+)\]/.exec(where)?.[1] ?? -1);

function isRecorded(x: unknown): x is Recorded {
  if (x === null || typeof x !== "object") return false;
  const r = x as Partial<Recorded>;
  return typeof r.action === "string" && typeof r.item === "object" && typeof r.fact?.path === "string";
}

/**
 * Check every recorded expectation; a record grex cannot read is reported
 * rather than trusted. `seen` holds the files already read for this report:
 * one `status` over many packs reads a shared file (~/.bashrc) once.
 */
export function setupDrift(state: PackState, seen: Map<string, string | null> = new Map()): SetupDrift[] {
  const read = (path: string): string | null => {
    let text = seen.get(path);
    if (text === undefined) {
      text = existsSync(path) ? readFileSync(path, "utf8") : null;
      seen.set(path, text);
    }
    return text;
  };
  const out: SetupDrift[] = [];
  for (const [key, value] of Object.entries(state)) {
    if (!key.startsWith(PREFIX)) continue;
    const where = key.slice(PREFIX.length);
    if (!isRecorded(value)) {
      out.push({ action: "?", idx: topIdx(where), where, path: "", differs: "the recorded setup is unreadable; run grex sync --force" });
      continue;
    }
    const differs = CHECKS[value.action]?.(value.fact, read) ?? null;
    if (differs !== null) out.push({ action: value.action, idx: topIdx(where), where, path: value.fact.path, differs });
  }
  return out.sort((a, b) => a.where.localeCompare(b.where, "en", { numeric: true }));
}

/**
 * The items behind `drift` as the checked-out pack.yaml declares them
 * (`declared`: the document holding `actions`), with the list they sit in (for
 * re-applying with their own indexes). Only the current declaration is ever
 * re-applied: a record whose item is no longer declared at its place (dropped
 * or changed upstream, or written by an older install) is forgotten instead,
 * and its key returned in `forgotten`.
 */
export function driftedItems(
  state: PackState,
  drift: readonly SetupDrift[],
  declared: Record<string, unknown>,
): { items: Array<{ list: string; idx: number; item: Record<string, unknown> }>; forgotten: string[] } {
  const items: Array<{ list: string; idx: number; item: Record<string, unknown> }> = [];
  const forgotten: string[] = [];
  for (const d of drift) {
    const key = PREFIX + d.where;
    const rec = state[key];
    const m = /^(.*)\[(\d+)\]$/.exec(d.where);
    const now = at(declared, d.where);
    if (!isRecorded(rec) || !m || now === undefined || canonical(now) !== canonical(rec.item)) {
      delete state[key];
      forgotten.push(d.where);
      continue;
    }
    items.push({ list: m[1] as string, idx: Number(m[2]), item: now as Record<string, unknown> });
  }
  return { items, forgotten };
}

/** The value at `actions[1].when.actions[0]` in `doc`, or undefined. */
function at(doc: unknown, where: string): unknown {
  let cur: unknown = doc;
  for (const part of where.match(/[^.[\]]+|\[\d+\]/g) ?? []) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = part.startsWith("[") ? (Array.isArray(cur) ? cur[Number(part.slice(1, -1))] : undefined) : (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** JSON with keys sorted: two items that mean the same compare equal whatever their key order. */
function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x !== null && typeof x === "object") {
    const o = x as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(x) ?? "null";
}
