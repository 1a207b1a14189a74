// The fold of grex.jsonl: what the events mean for the set of registered
// packs. One pass, deterministic; unknown ops are ignored.
import type { EventOf, ManifestEvent, PackEntry } from "./manifest-events.ts";

/** Apply one event to a fold state (SPEC §2.1 table). */
export function foldStep(state: Map<string, PackEntry>, e: ManifestEvent): void {
  const op = e.op;
  if (op === "add") {
    const a = e as EventOf<"add">;
    const entry: PackEntry = { id: a.id, url: a.url, path: a.path, type: a.type, ref: a.ref ?? null };
    if (a.tags !== undefined && a.tags.length > 0) entry.tags = normaliseTags(a.tags);
    if (a.depth !== undefined) entry.depth = a.depth;
    if (a.filter !== undefined) entry.filter = a.filter;
    state.set(a.id, entry);
  } else if (op === "update") {
    const cur = state.get(e.id);
    if (cur === undefined) return; // nothing to patch (never added, or removed)
    const u = e as EventOf<"update">;
    if (u.url !== undefined) cur.url = u.url;
    if (u.type !== undefined) cur.type = u.type;
    if (u.ref !== undefined) cur.ref = u.ref;
    if (u.tags !== undefined) {
      if (u.tags.length > 0) cur.tags = normaliseTags(u.tags);
      else delete cur.tags;
    }
    if (u.depth === null) delete cur.depth;
    else if (u.depth !== undefined) cur.depth = u.depth;
  } else if (op === "rm") {
    state.delete(e.id);
  }
}

/** Tags as the fold keeps them: sorted, each once. */
export function normaliseTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort();
}

/** The live packs: O(n), deterministic; ids keep first-add order, a re-add after rm goes last; unknown ops ignored. */
export function fold(events: readonly ManifestEvent[]): Map<string, PackEntry> {
  const state = new Map<string, PackEntry>();
  for (let i = 0; i < events.length; i++) foldStep(state, events[i] as ManifestEvent);
  return state;
}


/**
 * `action_started` events never closed by a completion or halt: actions cut
 * short by a crash. A later `sync` marker for the pack closes them too: sync
 * reinstalls an interrupted pack, and writes the marker only once that worked
 * (the action that was cut short may no longer exist in its pack.yaml).
 * Fed event by event, so the manifest's own fold keeps it as it goes.
 */
export class OpenBrackets {
  private readonly open = new Map<string, ManifestEvent>();

  see(e: ManifestEvent): void {
    const op = e.op;
    if (op === "action_started") this.open.set(`${e.id}\0${"idx" in e ? String(e.idx) : ""}`, e);
    else if (op === "action_completed" || op === "action_halted") this.open.delete(`${e.id}\0${"idx" in e ? String(e.idx) : ""}`);
    else if (op === "sync" && this.open.size > 0) for (const [k, v] of this.open) if (v.id === e.id) this.open.delete(k);
  }

  events(): ManifestEvent[] {
    return [...this.open.values()];
  }

  /** The packs with an open bracket: their install was cut short. */
  packs(): Set<string> {
    return new Set([...this.open.values()].map((e) => e.id));
  }
}
