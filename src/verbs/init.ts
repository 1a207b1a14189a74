// `grex init`: make the current directory (or --manifest's) a workspace.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { LOCK_FILE, MANIFEST_FILE, workspaceAt } from "../core/base/workspace.ts";
import { dryRunParam, filterParam } from "./common.ts";
import { defineVerb, unlessDryRun } from "./types.ts";
import { isLocked, lockedFlag, lockedParam } from "./locked-param.ts";

export { STATE_BLOCK_ID, STATE_IGNORE_LINES } from "./init-files.ts";

const Result = v.object({
  workspace: v.string(),
  created: v.array(v.string()),
  cloned: v.array(v.string()),
  dry_run: v.boolean(),
  /** `--from` only: the source workspace, the topic branch, the packs made linked worktrees of the source's clones. */
  source: v.optional(v.string()),
  branch: v.optional(v.string()),
  packs: v.optional(
    v.array(v.object({ id: v.string(), path: v.string(), branch: v.string(), sha: v.string(), created_branch: v.boolean() })),
  ),
  /** `--from` only: setup actions skipped because they write outside the task workspace (into HOME). */
  setup_skipped: v.optional(v.array(v.object({ pack: v.string(), action: v.string(), idx: v.number(), reason: v.string() }))),
});

export const initVerb = defineVerb({
  name: "init",
  description:
    "Initialise a grex workspace in the current directory: creates grex.jsonl and grex.lock.jsonl, ignores grex's runtime state in .gitignore, marks both files for union merges in .gitattributes, and clones registered packs that are missing (with --locked, at their locked commits). Idempotent. With from and branch: makes this directory a task workspace of the workspace at `from`, each selected pack (children included) a linked worktree of the source's clone on `branch`; setup that writes into HOME is skipped (listed in setup_skipped) unless setup_home.",
  params: v.strictObject({
    clone: desc(v.optional(v.boolean(), true), "false: do not clone registered packs that are missing on disk (create the workspace files only). Default true."),
    dry_run: dryRunParam,
    locked: lockedParam,
    from: desc(
      v.optional(v.pipe(v.string(), v.minLength(1, "must name a workspace directory"))),
      "Make this directory a task workspace of the workspace at this path: every selected pack becomes a linked worktree of the source's clone (objects and refs shared, its own HEAD and index) at the same relative path, on --branch. Needs branch.",
    ),
    branch: desc(
      v.optional(v.string()),
      "With from: the topic branch every pack is checked out on; created at the pack's tracked branch tip where it does not exist. A branch checked out in another worktree is refused.",
    ),
    filter: filterParam,
    setup_home: desc(
      v.optional(v.boolean(), false),
      "With from: also run setup actions that write outside the task workspace (into HOME, shared by every workspace on the machine); by default they are skipped and listed in setup_skipped. Default false.",
    ),
  }),
  result: Result,
  readOnly: false,
  // "none": invoke cannot lock a workspace that may not exist yet; run() takes it for the clone pass.
  effects: unlessDryRun({ workspace: "none", packs: "each", writes: true }),
  destructive: false,
  mcp: true,
  examples: ["grex init", "grex init --locked", "grex init --from ../main --branch fix-login --filter 'tag=web'"],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--no-clone", description: "Do not clone registered packs that are missing on disk" },
      lockedFlag,
      { flag: "--from <workspace>", description: "Make this a task workspace: the packs of <workspace> as linked worktrees" },
      { flag: "--branch <topic>", description: "With --from: the branch every pack is checked out on (created when missing)" },
      { flag: "--setup-home", description: "With --from: also run setup that writes into HOME (skipped by default)" },
    ],
  },
  async run(ctx, params, signal, progress): Promise<v.InferOutput<typeof Result>> {
    const root = ctx.manifest ? dirname(resolve(ctx.cwd, ctx.manifest)) : resolve(ctx.cwd);
    const ws = workspaceAt(root);
    if (params.from !== undefined || params.branch !== undefined) {
      const { initTask } = await import("./init-task.ts");
      return initTask(ctx, root, params, signal, progress);
    }
    const created = await (await import("./init-files.ts")).createWorkspaceFiles(root, params.dry_run);
    // Both files existed before (with content or not): a workspace from a clone, whose packs init brings onto disk.
    const existing = !(created.includes(MANIFEST_FILE) && created.includes(LOCK_FILE));
    let cloned: string[] = [];
    if (params.clone && existing) {
      // What is registered (read again under the lock by the clone pass; here only to leave a workspace with none untouched).
      const { readManifest } = await import("../core/workspace/manifest.ts");
      const { state } = await readManifest(ws, { warn: ctx.warn });
      if (params.dry_run) {
        // What a real run would clone: registered top-level packs missing on disk.
        cloned = [...state.values()].filter((p) => !existsSync(join(root, p.path))).map((p) => p.id);
      } else if (state.size > 0) {
        // Pre-existing manifest: bring missing packs onto disk like `grex sync` would.
        // The one verb that takes the workspace lock itself instead of declaring it:
        // the lock lives in the workspace's state directory, and before init there may
        // be no workspace for invoke to lock. Only this clone pass needs it (the files
        // above are created with O_EXCL / under their own file locks).
        const [{ cloneMissing }, { withWorkspaceLock }] = await Promise.all([import("../core/sync/engine.ts"), import("../core/locks/locks.ts")]);
        cloned = await withWorkspaceLock(ws, "init", "exclusive", () => cloneMissing(ctx, ws, signal, progress, isLocked(ctx, params)));
      }
    }
    return { workspace: root, created, cloned, dry_run: params.dry_run };
  },
  render(r) {
    const lines = [`Workspace ${r.workspace}${r.dry_run ? " (dry run)" : ""}`];
    if (r.source !== undefined) {
      lines.push(`task workspace of ${r.source} on branch ${r.branch}: ${r.packs?.length ?? 0} pack(s) as linked worktrees`);
      for (const p of r.packs ?? []) lines.push(`  ${p.path}  ${p.sha.slice(0, 7)}${p.created_branch ? "  (branch created)" : ""}`);
      for (const s of r.setup_skipped ?? []) lines.push(`skipped setup: ${s.pack} ${s.action}[${s.idx}]: ${s.reason}`);
    }
    lines.push(r.created.length ? `${r.dry_run ? "would create" : "created"}: ${r.created.join(", ")}` : "already initialised");
    if (r.cloned.length) lines.push(`${r.dry_run ? "would clone" : "cloned"}: ${r.cloned.join(", ")}`);
    return lines.join("\n");
  },
});

