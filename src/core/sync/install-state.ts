// Whether a pack's setup is installed, as the lockfile records it: a failed or
// interrupted install leaves the entry not-installed (empty installed_at, with
// install_error) so every later sync retries it and status/doctor say why.
import type { ManifestEvent } from "../workspace/manifest.ts";
import { OpenBrackets } from "../workspace/manifest-fold.ts";
import type { LockEntry } from "../workspace/lockfile.ts";

/** `action_started` events never closed (see OpenBrackets): actions cut short by a crash. */
export function openBrackets(events: readonly ManifestEvent[]): ManifestEvent[] {
  const open = new OpenBrackets();
  for (const e of events) open.see(e);
  return open.events();
}

/** Packs whose install was cut short. */
export const interruptedPacks = (events: readonly ManifestEvent[]): Set<string> => new Set(openBrackets(events).map((e) => e.id));

/** The lock entry of a pack whose setup is not (or no longer) installed. */
export function notInstalled(entry: Omit<LockEntry, "installed_at" | "actions_hash" | "installed_sha" | "install_error">, error: string): LockEntry {
  return { ...entry, installed_at: "", actions_hash: "", install_error: error };
}

export const isInstalled = (e: LockEntry | undefined): boolean => e !== undefined && e.installed_at !== "" && e.install_error === undefined;
