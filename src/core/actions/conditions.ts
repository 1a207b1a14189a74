// Predicates and combiners shared by `require` and `when`.
//   predicates: path_exists, cmd_available, os, symlink_ok, reg_key*, psversion*
//   combiners:  all_of, any_of, none_of (nestable)
// (* Windows only: elsewhere "not supported" — false inside a combiner, an
// error when used on its own.)
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packOpError } from "../errors.ts";
import { targetPath } from "./paths.ts";
import type { ActionContext } from "./types.ts";

export const COMBINERS = ["all_of", "any_of", "none_of"] as const;
const PREDICATES = ["path_exists", "cmd_available", "os", "symlink_ok", "reg_key", "psversion"] as const;
const WINDOWS_ONLY = new Set(["reg_key", "psversion"]);
const OS_NAMES = new Set(["linux", "macos", "windows"]);

type Verdict = boolean | "unsupported";

let symlinkOk: boolean | undefined;
function canSymlink(): boolean {
  if (symlinkOk !== undefined) return symlinkOk;
  const dir = mkdtempSync(join(tmpdir(), "grex-symlink-probe-"));
  try {
    writeFileSync(join(dir, "a"), "");
    symlinkSync(join(dir, "a"), join(dir, "b"));
    symlinkOk = true;
  } catch {
    symlinkOk = false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return symlinkOk;
}

function predicate(key: string, value: unknown, ctx: ActionContext, where: string): Verdict {
  switch (key) {
    case "path_exists":
      if (typeof value !== "string") throw badCondition(where, "path_exists takes a path");
      return existsSync(targetPath(value, ctx, `${where}.path_exists`));
    case "cmd_available":
      if (typeof value !== "string") throw badCondition(where, "cmd_available takes a command name");
      return Bun.which(value, { PATH: ctx.env.PATH ?? "" }) !== null;
    case "os":
      if (typeof value !== "string" || !OS_NAMES.has(value)) throw badCondition(where, "os takes linux, macos or windows");
      return ctx.os === value;
    case "symlink_ok":
      return value === false ? !canSymlink() : canSymlink();
    default:
      if (WINDOWS_ONLY.has(key)) return ctx.os === "windows" ? windowsPredicate(key) : "unsupported";
      throw badCondition(where, `unknown predicate '${key}' (use ${PREDICATES.join(", ")} or ${COMBINERS.join(", ")})`);
  }
}

/** Registry/PowerShell checks need Windows APIs grex does not ship yet. */
function windowsPredicate(key: string): Verdict {
  return key === "psversion" ? Bun.which("pwsh") !== null || Bun.which("powershell") !== null : "unsupported";
}

function badCondition(where: string, why: string) {
  return packOpError(`${where}: ${why}; fix the condition in pack.yaml.`);
}

/** Evaluate one condition object (`{path_exists: x}` or `{all_of: [...]}`). */
export function evaluate(cond: unknown, ctx: ActionContext, where: string): Verdict {
  if (cond === null || typeof cond !== "object" || Array.isArray(cond)) throw badCondition(where, "a condition must be a mapping");
  const entries = Object.entries(cond as Record<string, unknown>);
  if (entries.length !== 1) throw badCondition(where, "a condition has exactly one key");
  const [key, value] = entries[0] as [string, unknown];
  if ((COMBINERS as readonly string[]).includes(key)) {
    if (!Array.isArray(value)) throw badCondition(`${where}.${key}`, "a combiner takes a list of conditions");
    // Inside a combiner an unsupported predicate counts as false.
    const vals = value.map((c, i) => evaluate(c, ctx, `${where}.${key}[${i}]`) === true);
    if (key === "all_of") return vals.every(Boolean);
    if (key === "any_of") return vals.some(Boolean);
    return !vals.some(Boolean);
  }
  return predicate(key, value, ctx, where);
}

/** All of the given top-level condition keys must hold; an unsupported predicate here is an error. */
export function conditionsHold(conds: Record<string, unknown>, ctx: ActionContext, where: string): boolean {
  for (const [key, value] of Object.entries(conds)) {
    const verdict = evaluate({ [key]: value }, ctx, where);
    if (verdict === "unsupported") {
      throw packOpError(`${where}: the ${key} check is not supported on ${ctx.os} (Windows only); wrap it in any_of/all_of or a when: {os: windows}.`);
    }
    if (!verdict) return false;
  }
  return true;
}
