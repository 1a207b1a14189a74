// `grex init`: make the current directory (or --manifest's) a workspace.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { LOCK_FILE, MANIFEST_FILE, workspaceAt } from "../core/workspace.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb, unlessDryRun } from "./types.ts";

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
    "Initialise a grex workspace in the current directory: creates grex.jsonl and grex.lock.jsonl, ignores grex's runtime state in .gitignore, and clones registered packs that are missing. Idempotent.",
  params: v.strictObject({
    clone: desc(v.optional(v.boolean(), true), "false: do not clone registered packs that are missing on disk (create the workspace files only). Default true."),
    dry_run: dryRunParam,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun({ workspace: "none", packs: "each", writes: true }),
  destructive: false,
  mcp: true,
  examples: ["grex init", "grex init --no-clone"],
  cli: {
    args: "",
    positionals: [],
    flags: [{ flag: "--no-clone", description: "Do not clone registered packs that are missing on disk" }],
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
    const { blockIdsIn, updateIgnoreFile } = await import("../core/gitignore.ts");
    const gitignore = join(root, ".gitignore");
    const needsBlock = params.dry_run
      ? !blockIdsIn(gitignore).includes(STATE_BLOCK_ID)
      : updateIgnoreFile(gitignore, STATE_BLOCK_ID, STATE_IGNORE_LINES);
    if (needsBlock) created.push(".gitignore");
    let cloned: string[] = [];
    if (params.clone && params.dry_run && created.length < 2) {
      // What a real run would clone: registered top-level packs missing on disk.
      const { readManifest } = await import("../core/manifest.ts");
      const { state } = await readManifest(ws, { warn: ctx.warn });
      cloned = [...state.values()].filter((p) => !existsSync(join(root, p.path))).map((p) => p.id);
    } else if (params.clone && created.length < 2) {
      // Pre-existing manifest: bring missing packs onto disk like `grex sync` would.
      const { cloneMissing } = await import("../core/sync/engine.ts");
      cloned = await cloneMissing(ctx, ws, signal, progress);
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
