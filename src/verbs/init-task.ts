// `grex init --from <source> --branch <topic>`: the current directory becomes
// a task workspace (core/sync/task-workspace.ts): each selected pack of the
// source, children included, a linked worktree of the source's clone on
// <topic>; its own grex.jsonl (each add line naming the source in `from`) and
// grex.lock.jsonl.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { packOpError, usageError } from "../core/base/errors.ts";
import { phaseEnd, phaseStart, timePhase } from "../core/base/profile.ts";
import { type Workspace, workspaceAt } from "../core/base/workspace.ts";
import type { PackNode, WorkspaceView } from "../core/workspace/packs.ts";
import type { Progress, VerbContext } from "./types.ts";

export interface InitTaskParams {
  from?: string | undefined;
  branch?: string | undefined;
  filter?: string | string[] | undefined;
  setup_home?: boolean | undefined;
  dry_run: boolean;
}

/** A setup action left out because it writes outside the task workspace (into HOME). */
export interface SkippedSetup {
  pack: string;
  action: string;
  idx: number;
  reason: string;
}

export interface InitTaskResult {
  workspace: string;
  created: string[];
  cloned: string[];
  dry_run: boolean;
  source: string;
  branch: string;
  packs: Array<{ id: string; path: string; branch: string; sha: string; created_branch: boolean }>;
  setup_skipped: SkippedSetup[];
}

/** The task workspace at `root` must be new: no pack registered there yet. */
function assertFresh(root: string): void {
  const manifest = join(root, "grex.jsonl");
  if (existsSync(manifest) && statSync(manifest).size > 0 && readFileSync(manifest, "utf8").trim() !== "") {
    throw usageError(`${root} is already a grex workspace with packs registered; run grex init --from in a new or empty directory.`, { field: "from" });
  }
}

export async function initTask(ctx: VerbContext, root: string, params: InitTaskParams, signal: AbortSignal, progress: Progress): Promise<InitTaskResult> {
  const tw = await import("../core/sync/task-workspace.ts");
  if (params.from === undefined) throw usageError("--branch is for task workspaces and needs --from <workspace>: the workspace whose packs to share.", { field: "branch" });
  const topic = tw.checkTopic(params.branch);
  const source = tw.sourceWorkspace(ctx.cwd, params.from, root);
  assertFresh(root);
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await timePhase("task.view", () => loadWorkspaceView(source, ctx.warn));
  const { selectPacks } = await import("./select.ts");
  const { packs: tops } = await selectPacks(ctx, view, view.packs.filter((n) => n.parent === null), params.filter);
  const nodes = tw.subtreesOf(view, new Set(tops.map((n) => n.id)));
  // The writer thread starts now, while the checks below run: the first worktrees need it at once.
  const writer = params.dry_run ? null : tw.holdWriterFor(nodes);
  try {
    return await makeTaskWorkspace(ctx, root, params, signal, progress, { tw, source, view, tops, nodes, topic });
  } finally {
    writer?.();
  }
}

/** The task workspace made from the selected packs (`nodes`, the top-level ones in `tops`), the writer thread held by the caller. */
async function makeTaskWorkspace(
  ctx: VerbContext,
  root: string,
  params: InitTaskParams,
  signal: AbortSignal,
  progress: Progress,
  at: { tw: typeof import("../core/sync/task-workspace.ts"); source: Workspace; view: WorkspaceView; tops: PackNode[]; nodes: PackNode[]; topic: string },
): Promise<InitTaskResult> {
  const { tw, source, view, tops, nodes, topic } = at;
  const leftovers = await timePhase("task.preflight", async () => tw.preflight(nodes, topic, root));
  const base = { workspace: root, cloned: [] as string[], dry_run: params.dry_run, source: source.root, branch: topic };
  if (params.dry_run) {
    const created = await (await import("./init-files.ts")).createWorkspaceFiles(root, true);
    return { ...base, created, packs: nodes.map((n) => ({ id: n.id, path: n.path, branch: topic, sha: "", created_branch: false })), setup_skipped: [] };
  }
  const created = await timePhase("task.files", async () => (await import("./init-files.ts")).createWorkspaceFiles(root, false));
  const ws = workspaceAt(root);
  const { withWorkspaceLock } = await import("../core/locks/locks.ts");
  // As plain init's clone pass: the workspace may not have existed for invoke to lock, so init takes the lock itself.
  const { packs, skipped } = await withWorkspaceLock(ws, "init", "exclusive", async () => {
    const made = await timePhase("task.worktrees", () => tw.makeWorktrees(root, nodes, topic, ctx.env, leftovers));
    const t0 = phaseStart();
    const { appendEvents } = await import("../core/workspace/manifest.ts");
    await appendEvents(ws, await tw.taskEvents(source, view, nodes), signal, { warn: ctx.warn });
    const { writeLockfile } = await import("../core/workspace/lockfile.ts");
    await writeLockfile(ws, tw.taskLockEntries(nodes, made), signal);
    await copyIgnoreBlocks(source.root, root, tops.map((n) => n.id));
    phaseEnd("task.register", t0);
    // Setup, as sync installs it: what stays inside the task workspace runs; what writes into HOME only with setup_home.
    // Each pack is on <topic>, a topic branch: the lockfile's line keeps its tracked branch and commit, as a sync's does.
    const { runSync } = await import("../core/sync/engine.ts");
    const report = await timePhase("task.setup", () => runSync(
      ctx,
      { mode: "sync", ids: [], only: [], ref: null, force: false, failFast: false, recursive: true, dryRun: false, cloneOnly: true, homeSetup: params.setup_home === true },
      signal,
      progress,
    ));
    const failed = report.packs.find((p) => p.result === "failed");
    if (failed) throw packOpError(`the task workspace ${root} was made, but the setup of pack '${failed.id}' failed (${failed.message}); fix it there and run grex sync.`, { pack: failed.id });
    const skipped: SkippedSetup[] = report.steps
      .filter((st) => st.result === "skipped" && st.details.skipped === "home")
      .map((st) => ({ pack: st.pack, action: st.action, idx: st.idx, reason: String(st.details.reason ?? "") }));
    return { packs: made, skipped };
  });
  return { ...base, created, packs, setup_skipped: skipped };
}

/** The source's .gitignore block of each pack, copied (the task workspace ignores its pack directories as the source does). */
async function copyIgnoreBlocks(sourceRoot: string, root: string, ids: readonly string[]): Promise<void> {
  const { parseBlocks, updateIgnoreBlocks } = await import("../core/workspace/gitignore.ts");
  const src = join(sourceRoot, ".gitignore");
  const { blocks } = parseBlocks(existsSync(src) ? readFileSync(src, "utf8") : "");
  const updates: Array<[string, string[]]> = [];
  for (const id of ids) {
    const lines = blocks.get(id);
    if (lines !== undefined) updates.push([id, lines]);
  }
  updateIgnoreBlocks(join(root, ".gitignore"), updates); // one rewrite for every pack
}
