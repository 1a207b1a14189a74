// when: run nested actions only if every condition holds (os and/or
// all_of/any_of/none_of, a conjunction); otherwise the step is skipped, not
// failed. On teardown the same conditions decide whether the nested actions are undone.
import * as v from "valibot";
import { COMBINERS, allHold, conditionEntries, conditionField } from "./conditions.ts";
import type { ActionContext, ActionDef, ActionOutcome, StepResult } from "./types.ts";

const Args = v.pipe(
  v.strictObject({
    os: v.optional(v.picklist(["linux", "macos", "windows"], "must be linux, macos or windows")),
    all_of: v.optional(conditionField("all_of")),
    any_of: v.optional(conditionField("any_of")),
    none_of: v.optional(conditionField("none_of")),
    actions: v.array(v.record(v.string(), v.unknown()), "must be a list of actions"),
  }),
  v.check((a) => conditionEntries(a).length > 0, `needs a condition: os and/or ${COMBINERS.join(", ")}`),
);
type Args = v.InferOutput<typeof Args>;

function summarise(results: StepResult[], dryRun: boolean): StepResult {
  if (results.includes("failed")) return "failed";
  if (results.some((r) => r === "performed_change" || r === "would_perform_change")) return dryRun ? "would_perform_change" : "performed_change";
  if (results.includes("skipped")) return "skipped";
  return "already_satisfied";
}

async function nested(a: Args, ctx: ActionContext, undo: boolean): Promise<ActionOutcome> {
  if (!allHold(conditionEntries(a), ctx)) return { result: "skipped", details: { reason: "conditions not met" } };
  const where = `${ctx.where}.actions`;
  const r = undo ? await ctx.undoNested(a.actions, where) : await ctx.runNested(a.actions, where);
  const out: ActionOutcome = {
    result: summarise(r.steps.map((s) => s.result), ctx.dryRun),
    details: { actions: a.actions.length },
    nested: r.steps,
    nestedRollbacks: r.rollbacks,
    skipRest: r.skipRest,
  };
  if (r.failed) {
    out.result = "failed";
    out.failure = r.failed;
    out.details.reason = r.failed.reason;
  }
  return out;
}

export const whenAction: ActionDef<Args> = {
  name: "when",
  schema: Args,
  apply: (a, ctx) => nested(a, ctx, false),
  undo: (a, ctx) => nested(a, ctx, true),
};
