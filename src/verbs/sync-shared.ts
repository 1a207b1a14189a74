// Schema pieces and rendering shared by `sync`, `update` and `add`.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { dryRunParam, filterParam, noControlChars, parallelParam } from "./common.ts";
import { allowOutsideHomeEntry } from "./confine-param.ts";
import { stepLines, type StepLike } from "./render-steps.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import type { RenderStyle, VerbContext } from "./types.ts";

/** Params `sync` and `update` share: which packs, which ref, force, and the universal flags. */
export const syncSelectionEntries = {
  ids: desc(
    v.optional(v.array(v.string()), []),
    "Registered pack ids to work on, as ls shows them, e.g. [\"dotfiles\", \"tools/mine\"]. Default []: every registered pack.",
  ),
  ref: desc(
    v.optional(v.pipe(v.string(), v.minLength(1), noControlChars)),
    "A branch, tag or commit sha to move the selected packs to, e.g. \"main\", \"v1.2.0\" or a 40-hex sha. Default: each pack's pinned ref (the remote HEAD when none is pinned).",
  ),
  force: desc(
    v.optional(v.boolean(), false),
    "true: also move packs that have uncommitted changes or are off their branch, and reinstall every selected pack. Default false: such packs are left as they are and reported.",
  ),
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
  steps: StepLike[];
  summary: { total: number; ok: number; skipped: number; dirty: number; failed: number };
}

/** One aligned row per pack: a coloured mark (the word with --plain), the id, what happened. */
export function renderPackTable(packs: ReadonlyArray<{ id: string; result: string; message: string }>, style: RenderStyle, idWidth = 0): string {
  const c = paint(style.color);
  const colour = (res: string) => (res === "ok" ? c.green : res === "failed" ? c.red : c.yellow);
  // With --plain the mark is a word: pad it to the widest ("skipped") so streamed rows line up too.
  const mark = (res: string) => colour(res)(style.plain ? res.padEnd(idWidth > 0 ? 7 : 0) : ({ ok: "✓", skipped: "–", dirty: "!", failed: "✗" }[res] ?? res));
  return table(packs.map((p) => [mark(p.result), c.bold(p.id) + " ".repeat(Math.max(0, idWidth - p.id.length)), p.message]));
}

/**
 * The engine's per-pack callback when the caller shows rows as they complete
 * (VerbContext.rows): one row per pack with its action lines under it.
 */
export function streamPackRows(
  rows: VerbContext["rows"],
  row: (p: { id: string; result: string; message: string; reinstalled: boolean; reason: string }) => { id: string; result: string; message: string } = (p) => p,
): ((p: { id: string; result: string; message: string; reinstalled: boolean; reason: string }, steps: StepLike[], idWidth: number) => void) | undefined {
  if (!rows) return undefined;
  return (p, steps, idWidth) => rows((style) => [renderPackTable([row(p)], style, idWidth), ...stepLines(steps, style)].filter((l) => l !== "").join("\n"));
}

/** `3 packs: 2 ok, 0 skipped, 0 dirty, 1 failed` (with `dry run: ` in front). */
export function summaryLine(dryRun: boolean, s: Reportish["summary"]): string {
  const parts = [`${s.ok} ok`, `${s.skipped} skipped`, `${s.dirty} dirty`, `${s.failed} failed`];
  return `${dryRun ? "dry run: " : ""}${s.total} pack${s.total === 1 ? "" : "s"}: ${parts.join(", ")}`;
}

export function renderSyncReport(r: Reportish, style: RenderStyle): string {
  if (style.rowsStreamed) return summaryLine(r.dry_run, r.summary);
  const lines = [renderPackTable(r.packs, style)];
  lines.push(...stepLines(r.steps, style));
  const s = r.summary;
  const parts = [`${s.ok} ok`, `${s.skipped} skipped`, `${s.dirty} dirty`, `${s.failed} failed`];
  lines.push(`${r.dry_run ? "dry run: " : ""}${s.total} pack${s.total === 1 ? "" : "s"}: ${parts.join(", ")}`);
  return lines.filter((l) => l !== "").join("\n");
}
