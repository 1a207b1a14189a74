// Path helpers shared by the filesystem actions.
import { lstatSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { packOpError } from "../errors.ts";
import { expandVars } from "../vars.ts";
import type { ActionContext } from "./types.ts";

/** Expand variables and `~`, resolve against the pack dir. */
export function targetPath(raw: string, ctx: ActionContext, field: string): string {
  let p = expandVars(raw, ctx.env, `${ctx.where}.${field} of pack '${ctx.packId}'`);
  if (p === "~" || p.startsWith("~/")) p = (ctx.env.HOME ?? "") + p.slice(1);
  return resolve(ctx.packDir, p);
}

/** A source path that must stay inside the pack directory. */
export function packSource(raw: string, ctx: ActionContext, field: string): string {
  const p = targetPath(raw, ctx, field);
  const rel = relative(ctx.packDir, p);
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw packOpError(`${ctx.where}.${field} '${raw}' of pack '${ctx.packId}' points outside the pack directory; keep sources inside the pack.`);
  }
  return p;
}

export function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

export const backupName = (p: string): string => `${p}.grex-bak.${new Date().toISOString().replace(/[:.]/g, "-")}`;

/** A failed step's outcome. */
export const failed = (reason: string, details: Record<string, unknown> = {}, stderr = "") => ({
  result: "failed" as const,
  details: { ...details, reason },
  failure: { reason, stderr },
});
