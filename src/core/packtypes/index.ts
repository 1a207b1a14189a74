// Pack-type registry and the lifecycle every pack goes through (SPEC §4):
// decide whether a pack must (re)install, run its type's install/sync, and
// tear it down. Children are handled by the sync engine (before the parent on
// install) and by `teardownPack` (after the parent on teardown).
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Step } from "../actions/types.ts";
import { type Confinement, workspaceConfinement } from "../fs/confine.ts";
import { pluginError } from "../base/errors.ts";
import type { LockEntry } from "../workspace/lockfile.ts";
import type { PackManifest } from "../pack/schema.ts";
import type { Workspace } from "../base/workspace.ts";
import { declarativeType } from "./declarative.ts";
import { metaType } from "./meta.ts";
import { scriptedType } from "./scripted.ts";
import { healSetupDrift } from "./run-actions.ts";
import type { PackRun, PackType, PackTypeResult } from "./types.ts";
import { packTypeChoices } from "../base/registry.ts";

export type ConvergeReason = "sha-changed" | "hash-changed" | "forced" | "none" | "never-installed";

const TYPES = new Map<string, PackType>([
  ["meta", metaType],
  ["declarative", declarativeType],
  ["scripted", scriptedType],
]);

export function packTypeFor(name: string): PackType {
  const t = TYPES.get(name);
  if (!t) throw pluginError(`Unknown pack type '${name}'; use ${packTypeChoices()} (or install the plugin that provides it).`);
  return t;
}

export function computeActionsHash(type: string, dir: string, manifest: PackManifest | null, childShas: string[]): string {
  return packTypeFor(type).hash(dir, manifest, childShas);
}

/** The part of a synced pack that converging needs (the sync engine's tree node has it). */
export interface ConvergeNode {
  id: string;
  dir: string;
  manifest: PackManifest | null;
  head: { sha: string } | null;
  /** The clone happened in this run. */
  cloned: boolean;
}

export interface ConvergeInput {
  ws: Workspace;
  node: ConvergeNode;
  type: string;
  previous: LockEntry | undefined;
  mode: "sync" | "update";
  force: boolean;
  dryRun: boolean;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  childShas: string[];
  confine: Confinement;
}

export interface ConvergeResult extends PackTypeResult {
  /** Whether install (setup) ran. */
  ran: boolean;
  reason: ConvergeReason;
  actionsHash: string;
}

export function convergeReason(
  force: boolean,
  mode: "sync" | "update",
  previous: LockEntry | undefined,
  hash: string,
  sha: string | null,
  /** Cloned in this run: its setup never ran on this machine, whatever a shared lockfile says. */
  freshClone = false,
): ConvergeReason {
  if (force) return "forced";
  if (!previous || previous.installed_at === "" || freshClone) return "never-installed";
  // The hash installed on this machine (a shared lock line may carry a teammate's).
  if ((previous.installed_hash ?? previous.actions_hash) !== hash) return "hash-changed";
  if (mode === "update" && sha !== null && (previous.installed_sha ?? previous.sha) !== sha) return "sha-changed";
  return "none";
}

export async function converge(input: ConvergeInput): Promise<ConvergeResult> {
  const { node } = input;
  const type = packTypeFor(input.type);
  const hash = type.hash(node.dir, node.manifest, input.childShas);
  const reason = convergeReason(input.force, input.mode, input.previous, hash, node.head?.sha ?? null, node.cloned);
  const run: PackRun = {
    ws: input.ws,
    id: node.id,
    dir: node.dir,
    manifest: node.manifest,
    dryRun: input.dryRun,
    env: input.env,
    signal: input.signal,
    confine: input.confine,
  };
  if (!existsSync(node.dir)) {
    // Dry run of a pack not cloned yet: nothing to read, report the install it would do.
    return {
      ran: false,
      reason,
      actionsHash: hash,
      steps: [{ pack: node.id, action: "install", idx: 0, result: "would_perform_change", details: { reason: "not cloned yet" } }],
      failed: null,
      skipped: null,
    };
  }
  if (reason !== "none") return { ...(await type.install(run)), ran: true, reason, actionsHash: hash };
  const r = await type.sync(run);
  if (r.failed || r.skipped) return { ...r, ran: false, reason, actionsHash: hash };
  // Setup unchanged: put back exactly what was undone by hand since (a deleted link, an edited block).
  const healed = await healSetupDrift(run);
  return { steps: [...r.steps, ...healed.steps], failed: healed.failed, skipped: null, ran: false, reason, actionsHash: hash };
}

export interface TeardownInput {
  ws: Workspace;
  id: string;
  dir: string;
  type: string;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  dryRun: boolean;
  /** The user's --allow-outside-home for this run. */
  allowOutsideHome?: boolean;
  /** Set by the first call: the rule for the whole subtree. */
  confine?: Confinement;
}

/** Tear a pack down: its own teardown first, then its children in reverse order (SPEC §4). */
export async function teardownPack(input: TeardownInput): Promise<PackTypeResult> {
  const { loadPackYaml } = await import("../pack/load.ts");
  const confine = input.confine ?? (await confinementFor(input));
  const manifest = await loadPackYaml(input.dir);
  const type = packTypeFor(manifest?.type ?? input.type);
  const own = await type.teardown({
    ws: input.ws,
    id: input.id,
    dir: input.dir,
    manifest,
    dryRun: input.dryRun,
    env: input.env,
    signal: input.signal,
    confine,
  });
  const steps: Step[] = [...own.steps];
  let failed = own.failed;
  for (const child of [...(manifest?.children ?? [])].reverse()) {
    const dir = join(input.dir, child.path);
    if (!existsSync(dir)) continue;
    const r = await teardownPack({ ...input, id: `${input.id}/${child.path}`, dir, type: "meta", confine });
    steps.push(...r.steps);
    failed ??= r.failed;
  }
  return { steps, failed, skipped: null };
}

/** Every registered pack (manifest and lockfile) is protected from a teardown's actions. */
async function confinementFor(input: TeardownInput): Promise<Confinement> {
  const { loadWorkspaceView } = await import("../workspace/packs.ts");
  const view = await loadWorkspaceView(input.ws, () => {});
  return workspaceConfinement(input.ws.root, [input.id, ...view.packs.map((p) => p.id)], input.env, input.allowOutsideHome === true);
}
