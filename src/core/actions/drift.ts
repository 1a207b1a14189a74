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

/** The recorded items behind `drift`, grouped by the list they sit in (for re-applying with their own indexes). */
export function driftedItems(state: PackState, drift: readonly SetupDrift[]): Array<{ list: string; idx: number; item: Record<string, unknown> }> {
  const out: Array<{ list: string; idx: number; item: Record<string, unknown> }> = [];
  for (const d of drift) {
    const rec = state[PREFIX + d.where];
    const m = /^(.*)\[(\d+)\]$/.exec(d.where);
    if (!isRecorded(rec) || !m) continue;
    out.push({ list: m[1] as string, idx: Number(m[2]), item: rec.item });
  }
  return out;
}
