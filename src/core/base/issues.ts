// The first problem of a failed valibot parse, in the shape grex's one-sentence
// messages use: which field (dotted path) and what is wrong with it.
import type { BaseIssue } from "valibot";

export interface FirstIssue {
  /** Dotted path of the offending field; "" when the value as a whole is wrong. */
  field: string;
  /** Valibot's message, without a final period. */
  message: string;
  /** The field is absent (rather than present with a bad value). */
  missing: boolean;
}

export function firstIssue(issues: readonly [BaseIssue<unknown>, ...BaseIssue<unknown>[]]): FirstIssue {
  const issue = issues[0];
  return {
    field: issue.path?.map((p) => String(p.key)).join(".") ?? "",
    message: issue.message.replace(/\.$/, ""),
    missing: issue.input === undefined,
  };
}
