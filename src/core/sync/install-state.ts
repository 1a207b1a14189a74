// Whether a pack's setup is installed, as the lockfile records it: a failed or
// interrupted install leaves the entry not-installed (empty installed_at, with
// install_error) so every later sync retries it and status/doctor say why.
import type { ManifestEvent } from "../manifest.ts";
import type { LockEntry } from "../lockfile.ts";

/**
 * `action_started` events never closed by a completion or halt: actions cut
 * short by a crash. A later `sync` marker for the pack closes them too: sync
 * reinstalls an interrupted pack, and writes the marker only once that worked
 * (the action that was cut short may no longer exist in its pack.yaml).
 */
export function openBrackets(events: readonly ManifestEvent[]): ManifestEvent[] {
  const open = new Map<string, ManifestEvent>();
  for (const e of events) {
    const key = `${e.id}\0${"idx" in e ? String(e.idx) : ""}`;
    if (e.op === "action_started") open.set(key, e);
    else if (e.op === "action_completed" || e.op === "action_halted") open.delete(key);
    else if (e.op === "sync") for (const [k, v] of open) if (v.id === e.id) open.delete(k);
  }
  return [...open.values()];
}

/** Packs whose install was cut short. */
export const interruptedPacks = (events: readonly ManifestEvent[]): Set<string> => new Set(openBrackets(events).map((e) => e.id));

/**
 * The same from the manifest text that was already validated by the fold:
 * only bracket lines are parsed, so `status` does not pay for a second full parse.
 */
export function interruptedPacksInText(text: string): Set<string> {
  const brackets: ManifestEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line.includes("action_") && !line.includes('"sync"')) continue; // cheap filter; openBrackets checks op itself
    try {
      brackets.push(JSON.parse(line) as ManifestEvent);
    } catch {
      // a torn tail: the fold already warned about it
    }
  }
  return interruptedPacks(brackets);
}

/** The lock entry of a pack whose setup is not (or no longer) installed. */
export function notInstalled(entry: Omit<LockEntry, "installed_at" | "actions_hash" | "installed_sha" | "install_error">, error: string): LockEntry {
  return { ...entry, installed_at: "", actions_hash: "", install_error: error };
}

export const isInstalled = (e: LockEntry | undefined): boolean => e !== undefined && e.installed_at !== "" && e.install_error === undefined;
