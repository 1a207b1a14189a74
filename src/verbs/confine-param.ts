// --allow-outside-home: the user's opt-in, for one run, to let packs' actions
// touch paths outside HOME (the rest of the confinement rule still holds). A
// CLI-only param of every verb that applies actions: an MCP client can never
// pass it, and a pack can never set it for itself.
import * as v from "valibot";
import type { CliFlag, VerbContext } from "./types.ts";

export const ALLOW_OUTSIDE_HOME = "allow_outside_home";

export const allowOutsideHomeEntry = {
  allow_outside_home: v.pipe(
    v.optional(v.boolean(), false),
    v.description("CLI only: let packs' actions touch paths outside HOME for this run."),
  ),
};

export const allowOutsideHomeFlag: CliFlag = {
  flag: "--allow-outside-home",
  description: "Let packs' actions touch paths outside HOME for this run (never the workspace, packs, .git or grex's files)",
};

/** The opt-in counts only when a person gave it on the command line. */
export const allowsOutsideHome = (ctx: VerbContext, p: { allow_outside_home: boolean }): boolean =>
  ctx.surface === "cli" && p.allow_outside_home;
