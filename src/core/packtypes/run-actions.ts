// Bridges the action executor to the workspace: action brackets in grex.jsonl
// (under the manifest lock) and the per-pack state file teardown relies on.
import { clearExpectations, driftedItems, hasExpectations, setupDrift } from "../actions/drift.ts";
import { collectNamedActions } from "../actions/index.ts";
import { type Brackets, runActions, teardownActions } from "../actions/executor.ts";
import type { PackState } from "../actions/types.ts";
import { appendEvents, makeEvent } from "../workspace/manifest.ts";
import { readPackState, withPackState } from "../workspace/pack-state.ts";
import type { ActionItem } from "../pack/schema.ts";
import type { PackRun, PackTypeResult } from "./types.ts";

const NO_BRACKETS: Brackets = { onStarted: async () => {}, onCompleted: async () => {}, onHalted: async () => {} };

function brackets(run: PackRun): Brackets {
  return {
    onStarted: (idx, action) => appendEvents(run.ws, [makeEvent("action_started", run.id, { action, idx })], run.signal),
    onCompleted: (idx, action, changed) =>
      appendEvents(run.ws, [makeEvent("action_completed", run.id, { action, idx, changed })], run.signal),
    // No signal here: a cancelled run must still close its bracket.
    onHalted: (idx, action, reason, stderr) =>
      appendEvents(run.ws, [makeEvent("action_halted", run.id, { action, idx, reason, stderr })]),
  };
}

const withState = (run: PackRun, body: (state: PackState) => Promise<PackTypeResult>): Promise<PackTypeResult> =>
  withPackState({ ws: run.ws, id: run.id, dir: run.dir, dryRun: run.dryRun, signal: run.signal }, body);

const opts = (run: PackRun, state: PackState) => ({
  packId: run.id,
  packDir: run.dir,
  dryRun: run.dryRun,
  env: run.env,
  signal: run.signal,
  state,
  confine: run.confine,
});

export function runPackActions(run: PackRun, items: ActionItem[]): Promise<PackTypeResult> {
  if (items.length === 0) {
    // Nothing declared any more: what earlier installs recorded for drift repair is forgotten (the undo records stay for teardown).
    if (run.dryRun || !hasExpectations(readPackState(run.ws, run.id) as PackState)) {
      return Promise.resolve({ steps: [], failed: null, skipped: null });
    }
    return withState(run, async (state) => {
      clearExpectations(state);
      return { steps: [], failed: null, skipped: null };
    });
  }
  return withState(run, async (state) => {
    if (!run.dryRun) clearExpectations(state); // this run records them afresh
    const r = await runActions(items, opts(run, state), brackets(run));
    return { steps: r.steps, failed: r.failed, skipped: r.skipped ? "a requirement was not met (on_fail: skip)" : null };
  });
}

/**
 * Re-apply exactly the actions whose recorded postcondition no longer holds
 * (a deleted link, a removed directory, an edited env block). Each list's items
 * run together, so a failure rolls back what this heal applied.
 */
export function healSetupDrift(run: PackRun): Promise<PackTypeResult> {
  const drift = setupDrift(readPackState(run.ws, run.id) as PackState);
  if (drift.length === 0) return Promise.resolve({ steps: [], failed: null, skipped: null });
  return withState(run, async (live) => {
    const groups = new Map<string, Array<{ idx: number; item: ActionItem }>>();
    // Only what the checked-out pack.yaml declares is applied again; a record of anything else is forgotten.
    const { items: declared } = driftedItems(live, drift, { actions: run.manifest?.actions ?? [] });
    for (const d of declared) {
      const g = groups.get(d.list) ?? [];
      g.push({ idx: d.idx, item: d.item as ActionItem });
      groups.set(d.list, g);
    }
    const steps: PackTypeResult["steps"] = [];
    for (const [list, items] of groups) {
      const r = await runActions(
        items.map((i) => i.item),
        opts(run, live),
        list === "actions" ? brackets(run) : NO_BRACKETS, // brackets name top-level items only
        list,
        items.map((i) => i.idx),
      );
      steps.push(...r.steps);
      if (r.failed) return { steps, failed: r.failed, skipped: null };
    }
    return { steps, failed: null, skipped: null };
  });
}

export function teardownPackActions(run: PackRun): Promise<PackTypeResult> {
  const m = run.manifest;
  if (!m || (m.actions.length === 0 && !m.teardown)) return Promise.resolve({ steps: [], failed: null, skipped: null });
  return withState(run, async (state) => {
    const r = await teardownActions(m.actions, m.teardown, opts(run, state), brackets(run));
    return { steps: r.steps, failed: r.failed, skipped: null };
  });
}

/** `grex run <action>`: the declared actions of one kind, through the same executor. */
export function runNamedActions(run: PackRun, name: string): Promise<PackTypeResult> {
  const picked = collectNamedActions(run.manifest?.actions ?? [], name);
  if (picked.length === 0) return Promise.resolve({ steps: [], failed: null, skipped: null });
  return withState(run, async (state) => {
    const r = await runActions(
      picked.map((p) => p.item),
      opts(run, state),
      brackets(run),
      "actions",
      picked.map((p) => p.idx),
    );
    return { steps: r.steps, failed: r.failed, skipped: null };
  });
}
