// when: run nested actions only if every condition holds; otherwise they are skipped, not failed.
import * as v from "valibot";
import { currentOs } from "../os.ts";
import { conditionsHold } from "./conditions.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  os: v.optional(v.picklist(["linux", "macos", "windows"])),
  all_of: v.optional(v.array(v.unknown())),
  any_of: v.optional(v.array(v.unknown())),
  none_of: v.optional(v.array(v.unknown())),
  actions: v.array(v.record(v.string(), v.unknown())),
});
type Args = v.InferOutput<typeof Args>;

function holds(a: Args, ctx: ActionContext): boolean {
  const { actions: _, ...conds } = a;
  const defined = Object.fromEntries(Object.entries(conds).filter(([, val]) => val !== undefined));
  return conditionsHold(defined, ctx, `${ctx.where}.when`);
}

async function nested(a: Args, ctx: ActionContext, undo: boolean): Promise<ActionOutcome> {
  if (!holds(a, ctx)) return { result: "skipped", details: { reason: "conditions not met", os: currentOs() } };
  const where = `${ctx.where}.when.actions`;
  const r = undo ? await ctx.undoNested(a.actions, where) : await ctx.runNested(a.actions, where);
  const changed = r.steps.some((s) => s.result === "performed_change" || s.result === "would_perform_change");
  const out: ActionOutcome = {
    result: r.failed ? "failed" : changed ? (ctx.dryRun ? "would_perform_change" : "performed_change") : "already_satisfied",
    details: { nested: r.steps.length },
    nested: r.steps,
    skipRest: r.skipRest,
  };
  if (r.failed) out.failure = r.failed;
  if (r.rollbacks.length > 0) {
    out.rollback = async () => {
      const done: string[] = [];
      for (const rb of [...r.rollbacks].reverse()) done.push(await rb());
      return done.join("; ");
    };
  }
  return out;
}

export const whenAction: ActionDef<Args> = {
  name: "when",
  schema: Args,
  apply: (a, ctx) => nested(a, ctx, false),
  undo: (a, ctx) => nested(a, ctx, true),
};
