// `grex doctor --compact`: rewrite grex.jsonl as its fold, in a canonical form
// (compacting a compacted log yields the same bytes), moving the runtime
// events an older grex kept there to the journal (journal.ts).
import { mkdirSync } from "node:fs";
import { basename } from "node:path";
import { atomicWriteFile } from "../fs/fsutil.ts";
import type { WarnSink } from "./jsonl.ts";
import { withManifestLock } from "../locks/locks.ts";
import { fold } from "./manifest-fold.ts";
import { eventLine, makeEvent, type ManifestEvent, parseManifest, readManifestBytes } from "./manifest.ts";
import type { Workspace } from "../base/workspace.ts";
import { essentialRuntime, isRuntimeOp, journalPath, readJournal } from "./journal.ts";

/**
 * The canonical compact form of a log: one `add` per live id in fold order,
 * stamped with the ts of the last add/update that shaped it, so compacting a
 * compacted log yields the same bytes.
 */
export function compactText(events: readonly ManifestEvent[]): string {
  const state = fold(events);
  const lastTs = new Map<string, string>();
  const live = new Set<string>();
  for (const e of events) {
    if (e.op === "add") {
      live.add(e.id);
      lastTs.set(e.id, e.ts);
    } else if (e.op === "update" && live.has(e.id)) lastTs.set(e.id, e.ts);
    else if (e.op === "rm") live.delete(e.id);
  }
  let out = "";
  for (const p of state.values()) {
    out += eventLine(makeEvent("add", p.id, { url: p.url, path: p.path, type: p.type, ref: p.ref, ...(p.tags ? { tags: p.tags } : {}) }, lastTs.get(p.id)));
  }
  return out;
}

/** `grex doctor --compact`: rewrite grex.jsonl as its fold (temp + fsync + rename, under the manifest lock). */
export async function compactManifest(
  ws: Workspace,
  signal?: AbortSignal,
  opts?: WarnSink,
): Promise<{ linesBefore: number; linesAfter: number }> {
  return withManifestLock(ws, signal, () => {
    const buf = readManifestBytes(ws.manifestPath);
    const parsed = parseManifest(buf.toString("utf8"), ws.manifestPath);
    if (parsed.tornTail) opts?.warn(`${basename(ws.manifestPath)} ended in a partly written line (an interrupted write); compaction dropped it.`);
    const text = compactText(parsed.events);
    // Runtime events an older grex wrote here move to the journal, ahead of its own
    // lines (they happened first), so crash recovery reads the same after compaction.
    const legacy = parsed.events.filter((e) => isRuntimeOp(e.op));
    if (legacy.length > 0) {
      const moved = essentialRuntime([...legacy, ...readJournal(ws, opts)]);
      mkdirSync(ws.stateDir, { recursive: true });
      atomicWriteFile(journalPath(ws), moved.map((e) => `${JSON.stringify(e)}\n`).join(""));
    }
    atomicWriteFile(ws.manifestPath, text);
    return { linesBefore: parsed.events.length, linesAfter: fold(parsed.events).size };
  });
}
