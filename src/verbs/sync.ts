// `grex sync`: bring every pack (and its children) to its pinned ref and converge its setup.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { packOpError } from "../core/base/errors.ts";
import type { SyncReport } from "../core/sync/engine.ts";
import { HaltedSchema, renderSyncReport, StepSchema, streamPackRows, SummarySchema, syncSelectionEntries } from "./sync-shared.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";
import { isLocked, lockedFlag, lockedParam } from "./locked-param.ts";

const Result = v.object({
  verb: v.literal("sync"),
  dry_run: v.boolean(),
  packs: v.array(
    v.object({
      id: v.string(),
      result: v.picklist(["ok", "skipped", "dirty", "failed"]),
      sha_before: v.nullable(v.string()),
      sha_after: v.nullable(v.string()),
      message: v.string(),
    }),
  ),
  steps: v.array(StepSchema),
  halted: HaltedSchema,
  warnings: v.array(v.string()),
  summary: SummarySchema,
});

export const syncVerb = defineVerb({
  name: "sync",
  description:
    "Sync packs recursively: clone missing ones, fetch and fast-forward existing ones to their pinned ref (dirty packs are skipped, never modified), then run each pack's setup when it changed or was never installed. Optional ids limit it to those packs.",
  params: v.strictObject({
    ...syncSelectionEntries,
    only: desc(
      v.optional(v.array(v.string()), []),
      "Globs on the workspace-relative pack path; only packs matching one of them are synced, e.g. [\"tools/*\"] (* within one segment, ** across). Default []: no such limit.",
    ),
    fail_fast: desc(v.optional(v.boolean(), false), "true: start no further pack after the first failure (packs already running finish). Default false: every pack is tried."),
    recursive: desc(v.optional(v.boolean(), true), "false: sync only the top-level packs, not the children their pack.yaml declares. Default true."),
    locked: lockedParam,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun(MUTATION_PASS),
  destructive: false,
  mcp: true,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: ["grex sync", "grex sync --locked", "grex sync --filter 'depth<=1' --parallel 4"],
  cli: {
    args: "[...ids]",
    positionals: ["...ids"],
    flags: [
      { flag: "--only <glob>", description: "Only packs whose workspace path matches (repeatable)", repeatable: true },
      { flag: "--ref <ref>", description: "Use this branch, tag or sha for the selected packs (this run only)" },
      { flag: "--force", description: "Also move packs with uncommitted changes; reinstall every pack" },
      { flag: "--fail-fast", description: "Stop starting new packs after the first failure" },
      { flag: "--no-recursive", description: "Do not descend into children" },
      lockedFlag,
      allowOutsideHomeFlag,
    ],
  },
  async run(ctx, p, signal, progress) {
    const { runSync } = await import("../core/sync/engine.ts"); // lazy: `ls` and `--help` never load the engine
    const selected = await (await import("./select.ts")).selectedTopLevel(ctx, p.filter);
    const report = await runSync(
      ctx,
      {
        mode: "sync",
        ids: p.ids,
        only: p.only,
        selected,
        ref: p.ref ?? null,
        force: p.force,
        failFast: p.fail_fast,
        recursive: p.recursive,
        dryRun: p.dry_run,
        parallel: p.parallel,
        allowOutsideHome: allowsOutsideHome(ctx, p),
        onPackDone: streamPackRows(ctx.rows),
        locked: isLocked(ctx, p),
      },
      signal,
      progress,
    );
    return toSyncDocument(report, p.dry_run);
  },
  failure(r) {
    const failed = r.packs.filter((p) => p.result === "failed");
    if (failed.length === 0) return undefined;
    return packOpError(
      `${failed.length} pack${failed.length > 1 ? "s" : ""} failed to sync (${failed.length > 1 ? `${listIds(failed.map((f) => f.id))}; ` : ""}first: ${failed[0]?.id}: ${failed[0]?.message.replace(/\.$/, "")}); fix ${failed.length > 1 ? "them" : "it"} and run grex sync again.`,
    );
  },
  render: (r, _p, style) => renderSyncReport(r, style),
});

/** `a, b, c and 4 more` */
const listIds = (ids: readonly string[]) => (ids.length <= 5 ? ids.join(", ") : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`);

function toSyncDocument(report: SyncReport, dryRun: boolean) {
  return {
    verb: "sync" as const,
    dry_run: dryRun,
    packs: report.packs.map(({ id, result, sha_before, sha_after, message }) => ({ id, result, sha_before, sha_after, message })),
    steps: report.steps,
    halted: report.halted,
    warnings: report.warnings,
    summary: report.summary,
  };
}
