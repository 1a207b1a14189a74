// `grex init`: make the current directory (or --manifest's) a workspace.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { LOCK_FILE, MANIFEST_FILE, workspaceAt } from "../core/base/workspace.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb, unlessDryRun } from "./types.ts";
import { isLocked, lockedFlag, lockedParam } from "./locked-param.ts";

export const STATE_BLOCK_ID = "state";
export const STATE_IGNORE_LINES = ["/.grex/.state/"];

const Result = v.object({
  workspace: v.string(),
  created: v.array(v.string()),
  cloned: v.array(v.string()),
  dry_run: v.boolean(),
});

export const initVerb = defineVerb({
  name: "init",
  description:
    "Initialise a grex workspace in the current directory: creates grex.jsonl and grex.lock.jsonl, ignores grex's runtime state in .gitignore, marks both files for union merges in .gitattributes, and clones registered packs that are missing (with --locked, at their locked commits). Idempotent.",
  params: v.strictObject({
    clone: desc(v.optional(v.boolean(), true), "false: do not clone registered packs that are missing on disk (create the workspace files only). Default true."),
    dry_run: dryRunParam,
    locked: lockedParam,
  }),
  result: Result,
  readOnly: false,
  // "none": invoke cannot lock a workspace that may not exist yet; run() takes it for the clone pass.
  effects: unlessDryRun({ workspace: "none", packs: "each", writes: true }),
  destructive: false,
  mcp: true,
  examples: ["grex init", "grex init --locked", "grex init --no-clone"],
  cli: {
    args: "",
    positionals: [],
    flags: [{ flag: "--no-clone", description: "Do not clone registered packs that are missing on disk" }, lockedFlag],
  },
  async run(ctx, params, signal, progress) {
    const root = ctx.manifest ? dirname(resolve(ctx.cwd, ctx.manifest)) : resolve(ctx.cwd);
    const ws = workspaceAt(root);
    const created: string[] = [];
    for (const name of [MANIFEST_FILE, LOCK_FILE]) {
      const path = join(root, name);
      if (existsSync(path)) continue;
      created.push(name);
      if (!params.dry_run) {
        mkdirSync(root, { recursive: true });
        writeFileSync(path, "", { flag: "wx" });
      }
    }
    // Both files existed before (with content or not): a workspace from a clone, whose packs init brings onto disk.
    const existing = !(created.includes(MANIFEST_FILE) && created.includes(LOCK_FILE));
    const { blockIdsIn, updateIgnoreFile } = await import("../core/workspace/gitignore.ts");
    const gitignore = join(root, ".gitignore");
    const needsBlock = params.dry_run
      ? !blockIdsIn(gitignore).includes(STATE_BLOCK_ID)
      : updateIgnoreFile(gitignore, STATE_BLOCK_ID, STATE_IGNORE_LINES);
    if (needsBlock) created.push(".gitignore");
    // Merge grex.jsonl and grex.lock.jsonl as unions (core/workspace/gitattributes.ts).
    const { ensureMergeLines, GITATTRIBUTES, missingMergeLines } = await import("../core/workspace/gitattributes.ts");
    if ((params.dry_run ? missingMergeLines(root) : ensureMergeLines(root)).length > 0) created.push(GITATTRIBUTES);
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
    lines.push(r.created.length ? `${r.dry_run ? "would create" : "created"}: ${r.created.join(", ")}` : "already initialised");
    if (r.cloned.length) lines.push(`${r.dry_run ? "would clone" : "cloned"}: ${r.cloned.join(", ")}`);
    return lines.join("\n");
  },
});
