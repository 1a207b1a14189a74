// The two halves of `add`: the all-or-nothing add (clone, validate, plan,
// install, and only then register) and the dry run (the same checks against a
// temporary clone that is removed afterwards). Registration is the last step,
// so a failure, or a crash, never leaves a registered half-added pack.
import { asActivityOf } from "../core/base/activity.ts";
import { relabelError, sourceLabel } from "../core/pack/source-label.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Step } from "../core/actions/types.ts";
import { GrexError, packOpError, toGrexError } from "../core/base/errors.ts";
import { withoutConfiguredCommands } from "../core/base/no-commands.ts";
import { backendFor, type HeadInfo } from "../core/git/backend.ts";
import { updateIgnoreFile } from "../core/workspace/gitignore.ts";
import { packIgnoreLines } from "../core/pack/x-gitignore.ts";
import { withBackendLock, withPackLock } from "../core/locks/locks.ts";
import { appendEvents, makeEvent, readManifest } from "../core/workspace/manifest.ts";
import { manifestMark, rollbackManifest } from "../core/workspace/manifest-rollback.ts";
import { runSync, type SyncOptions, type SyncReport } from "../core/sync/engine.ts";
import { actionProblems, planChecks } from "../core/sync/plan.ts";
import { fetchTree, flatten, newNode, refuseChildOnSubmodule } from "../core/sync/tree.ts";
import type { Workspace } from "../core/base/workspace.ts";
import type { Progress, VerbContext } from "./types.ts";

export interface AddSpec {
  ws: Workspace;
  id: string;
  url: string;
  ref: string | null;
  /** --tag: recorded on the add event (sorted, each once); empty for none. */
  tags: string[];
  /** --type: used when the repository has no pack.yaml. */
  type: string | undefined;
  install: boolean;
  /** The user's --allow-outside-home (CLI only). */
  allowOutsideHome: boolean;
  /** --recurse-submodules: clone the submodules now and record that later syncs keep them. */
  recurseSubmodules?: boolean;
  /** --depth: a shallow clone of that many commits, recorded on the add event. */
  depth?: number;
  /** --filter: a partial clone's filter (normalised), recorded on the add event so later clones keep it. */
  filter?: string;
}

export interface AddOutcome {
  id: string;
  type: string;
  path: string;
  url: string;
  ref: string | null;
  sha: string | null;
  installed: boolean;
  dry_run: boolean;
  children: string[];
  steps: Step[];
}

/** Clone `spec.url` into `dir`, or (adopt) bring the clone already there to the ref, under the repository's locks. */
async function cloneInto(ctx: VerbContext, spec: AddSpec, dir: string, signal: AbortSignal, adopt = false): Promise<HeadInfo> {
  const backend = backendFor(spec.url);
  return ctx.scheduler.withPermit(signal, () =>
    withPackLock(spec.ws, dir, signal, () =>
      withBackendLock(spec.ws, dir, signal, async () =>
        adopt
          ? (await backend.update(dir, spec.url, { ref: spec.ref, signal })).after
          : backend.clone(spec.url, dir, { ref: spec.ref, signal, depth: spec.depth, ...(spec.filter !== undefined ? { filter: spec.filter, warn: ctx.warn } : {}) }),
      ),
    ),
  );
}

/** Submodules, when asked for (--recurse-submodules, pack.yaml `submodules: true`): cloned under the repository's locks. */
async function withSubmodules(ctx: VerbContext, spec: AddSpec, dir: string, packYamlSays: boolean | undefined, signal: AbortSignal): Promise<void> {
  const sm = await import("../core/git/submodules.ts");
  if (spec.recurseSubmodules) sm.recordRecurse(dir);
  if (!sm.wantsSubmodules(dir, packYamlSays)) return;
  await ctx.scheduler.withPermit(signal, () =>
    withPackLock(spec.ws, dir, signal, () => withBackendLock(spec.ws, dir, signal, () => sm.updateSubmodules(dir, spec.url, signal, ctx.env))),
  );
}

/** Read the pack's own pack.yaml (exit 3 when invalid) and build the entry it would be registered with. */
async function entryFor(spec: AddSpec, dir: string) {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  const manifest = await loadPackYaml(dir, { more: actionProblems });
  const type = manifest?.type ?? spec.type ?? "meta";
  return { entry: { id: spec.id, url: spec.url, path: spec.id, type, ref: spec.ref, ...(spec.depth !== undefined ? { depth: spec.depth } : {}), ...(spec.filter !== undefined ? { filter: spec.filter } : {}) }, manifest };
}

/** --no-install: the pack's own plan checks (actions, depends_on) without running anything, not even a dry-run hook. */
async function checkAlone(ctx: VerbContext, spec: AddSpec, found: Awaited<ReturnType<typeof entryFor>>, dir: string): Promise<void> {
  const { state } = await readManifest(spec.ws, { warn: ctx.warn });
  const node = newNode({ id: spec.id, path: spec.id, dir, url: spec.url, ref: spec.ref, recordedType: found.entry.type, depth: 0, parent: null });
  node.manifest = found.manifest;
  const known = [...state.values()].map((p) => ({ id: p.id, url: p.url, name: null }));
  planChecks([node], [...known, { id: spec.id, url: spec.url, name: found.manifest?.name ?? null }], ctx.env);
}

/** The engine run for the pack being added: it alone, children cloned, nothing recorded. */
function addRun(spec: AddSpec, entry: Awaited<ReturnType<typeof entryFor>>["entry"], dir: string, dryRun: boolean): SyncOptions {
  return {
    mode: "sync",
    ids: [spec.id],
    only: [],
    ref: null,
    force: false,
    failFast: true,
    recursive: true,
    dryRun,
    cloneOnly: true,
    pending: { entry, dir },
    deferRecord: true,
    allowOutsideHome: spec.allowOutsideHome,
  };
}

function firstFailure(report: SyncReport): GrexError | null {
  const failed = report.packs.find((r) => r.result === "failed");
  return failed ? packOpError(`Installing ${failed.id} failed: ${failed.message.replace(/\.$/, "")}`) : null;
}

const nothingAdded = (err: GrexError, what: string) =>
  new GrexError(err.kind, `${err.message.replace(/\.$/, "")}; nothing was added (${what}), fix the cause and run grex add again.`, err.data);

/**
 * Clone (or take over an adopted clone), validate, plan, install, then
 * register. On any failure: undo the install, remove the clone, cut grex.jsonl
 * back; no lockfile line or .gitignore block was written yet.
 */
export async function addAllOrNothing(
  ctx: VerbContext,
  spec: AddSpec & { dir: string; adopted: boolean },
  signal: AbortSignal,
  progress: Progress,
): Promise<AddOutcome> {
  const { ws, dir } = spec;
  const mark = manifestMark(ws);
  let installing = false;
  let sha: string | null = null;
  try {
    progress(0, 1, spec.adopted ? `taking over ${dir}` : `cloning ${spec.url}`);
    // The clone's own progress (objects, deltas, files) ends with it: the line then shows the setup alone.
    const head = await asActivityOf("", () => cloneInto(ctx, spec, dir, signal, spec.adopted));
    sha = head.sha;
    const found = await entryFor(spec, dir);
    await refuseChildOnSubmodule(spec.id, dir, head.sha, found.manifest);
    await withSubmodules(ctx, spec, dir, found.manifest?.submodules, signal);
    const { entry } = found;
    let report: SyncReport | null = null;
    if (spec.install) {
      installing = true;
      report = await runSync(ctx, addRun(spec, entry, dir, false), signal, progress);
      const failure = firstFailure(report);
      if (failure) throw failure;
    } else await checkAlone(ctx, spec, found, dir);
    await appendEvents(ws, [makeEvent("add", spec.id, { url: spec.url, path: spec.id, type: entry.type, ref: spec.ref, ...(spec.tags.length > 0 ? { tags: spec.tags } : {}), ...(spec.depth !== undefined ? { depth: spec.depth } : {}), ...(spec.filter !== undefined ? { filter: spec.filter } : {}) })], signal);
    if (report) await report.record?.();
    else updateIgnoreFile(join(ws.root, ".gitignore"), spec.id, packIgnoreLines(spec.id, found.manifest));
    return {
      ...entry,
      sha: head.sha,
      installed: spec.install,
      dry_run: false,
      children: (report?.packs ?? []).filter((n) => n.id !== spec.id).map((n) => n.id),
      steps: report?.steps ?? [],
    };
  } catch (raw) {
    // The clone is removed below: name its files by their place in the pack, not by a path that is gone.
    const err = spec.adopted ? toGrexError(raw) : relabelError(toGrexError(raw), dir, sourceLabel(spec.url, sha));
    if (installing) await undoInstall(ctx, spec, signal);
    if (!spec.adopted) rmSync(dir, { recursive: true, force: true });
    await rollbackManifest(ws, mark);
    if (err.kind === "cancelled") throw err;
    throw nothingAdded(err, spec.adopted ? "its setup was undone; the existing clone was left as it was" : "the clone was removed and its setup undone");
  }
}

/** Tear down whatever the failed install applied (children included); best effort, reported as a warning. */
async function undoInstall(ctx: VerbContext, spec: AddSpec & { dir: string }, signal: AbortSignal): Promise<void> {
  try {
    const { teardownPack } = await import("../core/packtypes/index.ts");
    const r = await withPackLock(spec.ws, spec.dir, signal, () =>
      teardownPack({ ws: spec.ws, id: spec.id, dir: spec.dir, type: spec.type ?? "meta", env: ctx.env, signal, dryRun: false, allowOutsideHome: spec.allowOutsideHome }),
    );
    if (r.failed) ctx.warn(`undoing the setup of '${spec.id}' stopped at ${r.failed.action}[${r.failed.idx}]: ${r.failed.reason}`);
  } catch (err) {
    ctx.warn(`could not undo the setup of '${spec.id}': ${toGrexError(err).message}`);
  }
}

/**
 * Dry run: clone the pack and its children into a temporary directory,
 * validate every pack.yaml, run the plan checks and plan the setup (nothing
 * applied), report it, and remove the temporary clone.
 */
export function planAdd(ctx: VerbContext, spec: AddSpec, signal: AbortSignal, progress: Progress): Promise<AddOutcome> {
  // A preview runs nothing a git config names (filters, hooks), whatever the config says.
  return withoutConfiguredCommands(() => planAddInScope(ctx, spec, signal, progress));
}

async function planAddInScope(ctx: VerbContext, spec: AddSpec, signal: AbortSignal, progress: Progress): Promise<AddOutcome> {
  const tmp = mkdtempSync(join(tmpdir(), "grex-add-"));
  const dir = join(tmp, spec.id);
  let sha: string | null = null;
  try {
    progress(0, 1, `cloning ${spec.url} into a temporary directory`);
    const head = await asActivityOf("", () => cloneInto(ctx, spec, dir, signal));
    sha = head.sha;
    const { entry } = await entryFor(spec, dir);
    // Children too, so their pack.yaml files are validated as well.
    const { loadPackYaml } = await import("../core/pack/load.ts");
    const root = newNode({ id: spec.id, path: spec.id, dir, url: spec.url, ref: spec.ref, recordedType: entry.type, depth: 0, parent: null });
    await fetchTree([root], {
      ws: spec.ws,
      scheduler: ctx.scheduler,
      signal,
      dryRun: false,
      force: false,
      recursive: true,
      updateExisting: false,
      failFast: true,
      loadPack: (d) => loadPackYaml(d, { more: actionProblems }),
      onDone: () => {},
      onDiscovered: () => {},
    });
    const broken = flatten([root]).find((n) => n.outcome === "failed");
    if (broken) throw packOpError(`Pack '${broken.id}' cannot be added: ${broken.message.replace(/\.$/, "")}.`);
    const report = await runSync(ctx, addRun(spec, entry, dir, true), signal, progress);
    const failure = firstFailure(report);
    if (failure) throw failure;
    // Report paths as they would be in the workspace, not in the temporary clone.
    const real = join(spec.ws.root, spec.id);
    const steps = JSON.parse(JSON.stringify(report.steps).replaceAll(JSON.stringify(dir).slice(1, -1), JSON.stringify(real).slice(1, -1))) as Step[];
    return {
      ...entry,
      sha: head.sha,
      installed: false,
      dry_run: true,
      children: report.packs.filter((n) => n.id !== spec.id).map((n) => n.id),
      steps,
    };
  } catch (raw) {
    // The temporary clone is deleted below: name its files by their place in the pack.
    throw relabelError(toGrexError(raw), dir, sourceLabel(spec.url, sha));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
