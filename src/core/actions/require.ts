// require: check prerequisites; on_fail decides between failing, skipping the rest of the pack, or warning.
import * as v from "valibot";
import { conditionsHold } from "./conditions.ts";
import { failed } from "./paths.ts";
import type { ActionDef } from "./types.ts";

const Args = v.pipe(
  v.looseObject({ on_fail: v.optional(v.picklist(["error", "skip", "warn"]), "error") }),
  v.check((o) => Object.keys(o).some((k) => k !== "on_fail"), "needs a condition (all_of, any_of, none_of or a predicate)"),
);
type Args = v.InferOutput<typeof Args>;

const conditionsOf = (a: Args): Record<string, unknown> => {
  const { on_fail: _, ...rest } = a;
  return rest;
};

export const requireAction: ActionDef<Args> = {
  name: "require",
  schema: Args,
  async apply(a, ctx) {
    if (conditionsHold(conditionsOf(a), ctx, `${ctx.where}.require`)) return { result: "already_satisfied", details: {} };
    const reason = "requirement not met";
    if (a.on_fail === "skip") return { result: "skipped", details: { reason }, skipRest: true };
    if (a.on_fail === "warn") return { result: "noop", details: { warning: reason } };
    return failed(`${reason} (${JSON.stringify(conditionsOf(a))})`);
  },
  async undo() {
    return { result: "noop", details: {} };
  },
};
