// --locked (and GREX_LOCKED=1 for CI): `sync` and `init` put every pack on
// the commit grex.lock.jsonl records and never write the lockfile
// (core/sync/locked.ts). Over MCP the param is the same; the environment
// variable is read from the call's own environment.
import * as v from "valibot";
import type { CliFlag, VerbContext } from "./types.ts";

export const lockedParam = v.optional(v.boolean(), false);

export const lockedFlag: CliFlag = {
  flag: "--locked",
  description: "Check out exactly the commits in grex.lock.jsonl (children too) and never write it; also GREX_LOCKED=1",
};

/** The flag, or GREX_LOCKED set to 1/true in this call's environment. */
export function isLocked(ctx: VerbContext, p: { locked: boolean }): boolean {
  const env = (ctx.env.GREX_LOCKED ?? "").trim().toLowerCase();
  return p.locked || env === "1" || env === "true";
}
