// --locked (and GREX_LOCKED=1 for CI): `sync` and `init` put every pack on
// the commit grex.lock.jsonl records and never write the lockfile
// (core/sync/locked.ts). Over MCP the param is the same; the environment
// variable is read from the call's own environment.
import * as v from "valibot";
import { desc } from "./describe.ts";
import type { CliFlag, VerbContext } from "./types.ts";

export const lockedParam = desc(
  v.optional(v.boolean(), false),
  "true: clone and check out exactly the commits recorded in grex.lock.jsonl (children too), on each pack's tracked branch when the commit is on it (else detached), and never write the lockfile; packs grex put in place earlier move to a new lock without force. Fails before anything changes when a pack has no locked commit or its upstream lacks it; a pack holding the user's work (changes, a topic branch, a HEAD the user detached) is left and fails. Default false (also true when GREX_LOCKED=1 in the server's environment).",
);

export const lockedFlag: CliFlag = {
  flag: "--locked",
  description: "Check out exactly the commits in grex.lock.jsonl (children too) and never write it; also GREX_LOCKED=1",
};

/** The flag, or GREX_LOCKED set to 1/true in this call's environment. */
export function isLocked(ctx: VerbContext, p: { locked: boolean }): boolean {
  const env = (ctx.env.GREX_LOCKED ?? "").trim().toLowerCase();
  return p.locked || env === "1" || env === "true";
}
