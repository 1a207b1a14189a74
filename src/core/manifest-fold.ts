// The fold of grex.jsonl: what the events mean for the set of registered
// packs. One pass, deterministic; unknown ops are ignored.
import type { EventOf, ManifestEvent, PackEntry } from "./manifest.ts";

/** Apply one event to a fold state (SPEC §2.1 table). */
export function foldStep(state: Map<string, PackEntry>, e: ManifestEvent): void {
  const op = e.op;
  if (op === "add") {
    const a = e as EventOf<"add">;
    state.set(a.id, { id: a.id, url: a.url, path: a.path, type: a.type, ref: a.ref ?? null });
  } else if (op === "update") {
    const cur = state.get(e.id);
    if (cur === undefined) return; // nothing to patch (never added, or removed)
    const u = e as EventOf<"update">;
    if (u.url !== undefined) cur.url = u.url;
    if (u.type !== undefined) cur.type = u.type;
    if (u.ref !== undefined) cur.ref = u.ref;
  } else if (op === "rm") {
    state.delete(e.id);
  }
}

/** The live packs: O(n), deterministic; ids keep first-add order, a re-add after rm goes last; unknown ops ignored. */
export function fold(events: readonly ManifestEvent[]): Map<string, PackEntry> {
  const state = new Map<string, PackEntry>();
  for (let i = 0; i < events.length; i++) foldStep(state, events[i] as ManifestEvent);
  return state;
}

