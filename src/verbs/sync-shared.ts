// Schema pieces and rendering shared by `sync`, `update` and `add`.
import * as v from "valibot";
import { dryRunParam, filterParam, parallelParam } from "./common.ts";
import { allowOutsideHomeEntry } from "./confine-param.ts";
import type { RenderStyle } from "./types.ts";

/** Params `sync` and `update` share: which packs, which ref, force, and the universal flags. */
export const syncSelectionEntries = {
  ids: v.optional(v.array(v.string()), []),
  ref: v.optional(v.pipe(v.string(), v.minLength(1))),
  force: v.optional(v.boolean(), false),
  dry_run: dryRunParam,
  filter: filterParam,
  parallel: parallelParam,
  ...allowOutsideHomeEntry,
};

export const StepSchema = v.object({
  pack: v.string(),
  action: v.string(),
  idx: v.number(),
  result: v.picklist(["performed_change", "would_perform_change", "already_satisfied", "noop", "skipped", "failed"]),
  details: v.record(v.string(), v.unknown()),
});

export const HaltedSchema = v.nullable(
  v.object({ pack: v.string(), action: v.string(), idx: v.number(), reason: v.string() }),
);

export const SummarySchema = v.object({
  total: v.number(),
  ok: v.number(),
  skipped: v.number(),
  dirty: v.number(),
  failed: v.number(),
});

interface Reportish {
  dry_run: boolean;
  packs: Array<{ id: string; result: string; message: string }>;
  steps: Array<{ pack: string; action: string; idx: number; result: string }>;
  summary: { total: number; ok: number; skipped: number; dirty: number; failed: number };
}

export function renderSyncReport(r: Reportish, style: RenderStyle): string {
  const mark = (res: string) =>
    style.plain ? res.padEnd(7) : ({ ok: "✓", skipped: "–", dirty: "!", failed: "✗" }[res] ?? res);
  const lines = r.packs.map((p) => `${mark(p.result)} ${p.id}${p.message ? `  ${p.message}` : ""}`);
  const changed = r.steps.filter((s) => s.result === "performed_change" || s.result === "would_perform_change");
  for (const s of changed) lines.push(`  ${s.pack}: ${s.action}[${s.idx}] ${s.result}`);
  const s = r.summary;
  lines.push(
    `${r.dry_run ? "dry run: " : ""}${s.total} packs: ${s.ok} ok, ${s.skipped} skipped, ${s.dirty} dirty, ${s.failed} failed`,
  );
  return lines.join("\n");
}
