// require: check prerequisites. The conditions (a combiner or a predicate; several
// keys form a conjunction) must hold, else on_fail decides: error fails the
// pack, skip stops the pack here (reported skipped), warn carries on.
import * as v from "valibot";
import { COMBINERS, PREDICATES, allHold, conditionEntries, conditionField } from "./conditions.ts";
import { failed } from "./paths.ts";
import type { ActionDef } from "./types.ts";

const conditionFields = Object.fromEntries([...COMBINERS, ...PREDICATES].map((k) => [k, v.optional(conditionField(k))]));

const Args = v.pipe(
  v.strictObject({ ...conditionFields, on_fail: v.optional(v.picklist(["error", "skip", "warn"]), "error") }),
  v.check(
    (a) => conditionEntries(a).length > 0,
    `needs a condition: one of ${COMBINERS.join(", ")} (or a predicate such as path_exists)`,
  ),
);
type Args = v.InferOutput<typeof Args>;

export const requireAction: ActionDef<Args> = {
  name: "require",
  schema: Args,
  async apply(a, ctx) {
    const conds = conditionEntries(a);
    if (allHold(conds, ctx)) return { result: "already_satisfied", details: {} };
    const what = conds.map(([k, val]) => `${k}: ${JSON.stringify(val)}`).join(", ");
    const reason = `requirement not met (${what})`;
    if (a.on_fail === "skip") return { result: "skipped", details: { reason }, skipRest: true };
    if (a.on_fail === "warn") return { result: "noop", details: { warning: reason } };
    return failed(`${reason}; install what is missing, or set on_fail: skip or warn`);
  },
  // A check changes nothing, so there is nothing to undo.
  async undo() {
    return { result: "noop", details: {} };
  },
};
