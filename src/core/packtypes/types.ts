// What a pack type implements (SPEC §4). Registered in ./index.ts.
import type { Step } from "../actions/types.ts";
import type { Confinement } from "../fs/confine.ts";
import type { PackManifest } from "../pack/schema.ts";
import type { Workspace } from "../base/workspace.ts";

export interface PackRun {
  ws: Workspace;
  id: string;
  dir: string;
  manifest: PackManifest | null;
  dryRun: boolean;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  /** What the pack's actions may touch (../confine.ts). */
  confine: Confinement;
}

export interface PackTypeResult {
  steps: Step[];
  failed: { idx: number; action: string; reason: string } | null;
  /** Set when a `require` with on_fail: skip stopped the pack; the text says why. */
  skipped: string | null;
}

export interface PackType {
  name: string;
  /** actions_hash over the installable surface (SPEC §2.2). */
  hash(dir: string, manifest: PackManifest | null, childShas: string[]): string;
  /** First install, or reinstall after the surface (or, on update, the commit) changed. */
  install(run: PackRun): Promise<PackTypeResult>;
  /** Nothing changed since the last install: the type's per-sync work, if any. */
  sync(run: PackRun): Promise<PackTypeResult>;
  teardown(run: PackRun): Promise<PackTypeResult>;
}

export const nothing = (): PackTypeResult => ({ steps: [], failed: null, skipped: null });
