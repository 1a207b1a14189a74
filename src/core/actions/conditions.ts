// Predicates and combiners shared by `require` and `when`:
//   predicates: path_exists: <path>, cmd_available: <name>, os: linux|macos|windows,
//               symlink_ok: {src, dst}, reg_key: {path, name?}, psversion: ">=5.1"
//   combiners:  all_of / any_of / none_of: [ {<one condition>}, ... ] (nestable, at most
//               MAX_CONDITION_DEPTH lists deep, the Rust grex's limit)
// reg_key and psversion are Windows only: elsewhere they are "not supported",
// which counts as false inside a combiner and is an error on its own.
import { accessSync, constants, readlinkSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import * as v from "valibot";
import { packOpError } from "../base/errors.ts";
import type { OsName } from "../base/os.ts";
import { existsOrPlanned, fieldName, lstatOrNull, targetPath } from "./paths.ts";
import { MAX_CONDITION_DEPTH, parseVersionSpec, versionSatisfies } from "./version-spec.ts";
import type { ActionContext } from "./types.ts";

export const COMBINERS = ["all_of", "any_of", "none_of"] as const;
export const PREDICATES = ["path_exists", "cmd_available", "os", "symlink_ok", "reg_key", "psversion"] as const;
const CONDITION_KEYS: readonly string[] = [...PREDICATES, ...COMBINERS];
const WINDOWS_ONLY = new Set(["reg_key", "psversion"]);
const OS_NAMES: readonly string[] = ["linux", "macos", "windows"];

export type Verdict = boolean | "unsupported";

// ---------------------------------------------------------------- validation

interface Problem {
  path: Array<string | number>;
  message: string;
}

const isMapping = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);
const nonEmptyString = (x: unknown): x is string => typeof x === "string" && x.length > 0;

/** A mapping whose `fields` are strings (`optional` ones may be absent or null) and nothing else. */
function stringFieldsProblem(value: unknown, fields: string[], optional: string[], example: string): Problem | null {
  if (!isMapping(value)) return { path: [], message: `must be a mapping such as ${example}` };
  for (const k of Object.keys(value)) {
    if (![...fields, ...optional].includes(k)) return { path: [k], message: `is not a known field (allowed: ${[...fields, ...optional].join(", ")})` };
  }
  for (const k of fields) if (!nonEmptyString(value[k])) return { path: [k], message: "must be a non-empty string" };
  for (const k of optional) {
    const x = value[k];
    if (x !== undefined && x !== null && typeof x !== "string") return { path: [k], message: "must be a string" };
  }
  return null;
}

/** The first problem with the value of condition `key` found `depth` combiner lists deep, or null. */
function valueProblem(key: string, value: unknown, depth = 0): Problem | null {
  const bad = (message: string): Problem => ({ path: [], message });
  switch (key) {
    case "path_exists":
      return nonEmptyString(value) ? null : bad("must be a path (a non-empty string)");
    case "cmd_available":
      return nonEmptyString(value) ? null : bad("must be a command name (a non-empty string)");
    case "os":
      return typeof value === "string" && OS_NAMES.includes(value) ? null : bad("must be linux, macos or windows");
    case "symlink_ok":
      return stringFieldsProblem(value, ["src", "dst"], [], "{src: files/x, dst: $HOME/.x} (the link dst must point at src)");
    case "reg_key":
      return stringFieldsProblem(value, ["path"], ["name"], "{path: HKCU\\Software\\Vendor, name: Value}");
    case "psversion":
      return (typeof value === "string" || typeof value === "number") && parseVersionSpec(String(value)) !== null
        ? null
        : bad('must be a version requirement such as ">=5.1" (quote it)');
    default: {
      if (!Array.isArray(value)) return bad("must be a list of conditions");
      if (depth + 1 >= MAX_CONDITION_DEPTH && value.length > 0) {
        return bad(
          `nests conditions ${MAX_CONDITION_DEPTH} or more lists deep, over the limit; flatten it (at most ${MAX_CONDITION_DEPTH - 1} nested all_of/any_of/none_of lists)`,
        );
      }
      for (let i = 0; i < value.length; i++) {
        const p = conditionProblem(value[i], depth + 1);
        if (p) return { path: [i, ...p.path], message: p.message };
      }
      return null;
    }
  }
}

/** The first problem with one `{<key>: value}` condition `depth` lists deep, or null. */
function conditionProblem(cond: unknown, depth: number): Problem | null {
  if (!isMapping(cond)) return { path: [], message: "must be a mapping with one condition, such as {os: linux}" };
  const keys = Object.keys(cond);
  if (keys.length !== 1) {
    return { path: [], message: `has ${keys.length} keys but a condition takes exactly one (wrap several in all_of)` };
  }
  const key = keys[0] as string;
  if (!CONDITION_KEYS.includes(key)) {
    return { path: [key], message: `is not a known condition (use one of ${CONDITION_KEYS.join(", ")})` };
  }
  const p = valueProblem(key, cond[key], depth);
  return p ? { path: [key, ...p.path], message: p.message } : null;
}

/** valibot schema for the value of condition `key` (used as an args field); issues carry the nested path. */
export function conditionField(key: string) {
  return v.pipe(
    v.unknown(),
    v.rawCheck(({ dataset, addIssue }) => {
      const p = valueProblem(key, dataset.value);
      if (!p) return;
      const first = p.path[0];
      addIssue({
        message: p.message,
        path:
          first === undefined
            ? undefined
            : (p.path.map((k) => ({ type: "unknown", origin: "value", input: undefined, key: k, value: undefined })) as [
                v.UnknownPathItem,
                ...v.UnknownPathItem[],
              ]),
      });
    }),
  );
}

// ---------------------------------------------------------------- evaluation

/** symlink_ok: `dst` is a symlink whose target is `src` (both expanded; relative ones against the pack dir). */
function linkPointsAt(value: { src: string; dst: string }, ctx: ActionContext, where: string): boolean {
  const dst = targetPath(value.dst, ctx, `${where}.dst`);
  if (!lstatOrNull(dst)?.isSymbolicLink()) return false;
  try {
    return resolve(dirname(dst), readlinkSync(dst)) === targetPath(value.src, ctx, `${where}.src`);
  } catch {
    return false;
  }
}

const isExecutableFile = (p: string, os: OsName): boolean => {
  try {
    if (!statSync(p).isFile()) return false;
    if (os !== "windows") accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** Look a command up on PATH the way execvp would (no shell); a name with a separator is a path (relative to `baseDir`). */
export function findCommand(name: string, env: Record<string, string | undefined>, os: OsName, baseDir: string): string | null {
  const exts = os === "windows" ? ["", ...(env.PATHEXT ?? ".COM;.EXE;.BAT;.CMD").split(";").filter(Boolean)] : [""];
  const hasSep = name.includes("/") || (os === "windows" && name.includes("\\"));
  const candidates = hasSep
    ? [resolve(baseDir, name)]
    : (env.PATH ?? env.Path ?? "")
        .split(os === "windows" ? ";" : delimiter)
        .filter((d) => d !== "" && isAbsolute(d)) // a relative PATH entry would depend on the cwd
        .map((d) => join(d, name));
  for (const base of candidates) for (const ext of exts) if (isExecutableFile(base + ext, os)) return base + ext;
  return null;
}

/** Windows-only checks, through the stock tools (reg.exe, PowerShell). */
function windowsPredicate(key: string, value: unknown, ctx: ActionContext): boolean {
  // Required here: loading node:child_process at the top would cost every `status` that checks setup drift.
  const { spawnSync } = require("node:child_process") as typeof import("node:child_process");
  const opts = { encoding: "utf8" as const, timeout: 30_000, windowsHide: true, env: ctx.env };
  if (key === "reg_key") {
    const { path, name } = value as { path: string; name?: string | null };
    const args = ["query", path.replaceAll("/", "\\"), ...(name ? ["/v", name] : [])];
    return spawnSync("reg", args, opts).status === 0;
  }
  const spec = parseVersionSpec(String(value));
  for (const exe of ["pwsh", "powershell"]) {
    const r = spawnSync(exe, ["-NoProfile", "-NonInteractive", "-Command", "$PSVersionTable.PSVersion.ToString()"], opts);
    if (r.status === 0 && typeof r.stdout === "string" && r.stdout.trim() !== "") {
      return spec !== null && versionSatisfies(r.stdout, spec);
    }
  }
  return false;
}

/** Evaluate one condition. `where` names its field for messages (without the pack). */
export function evaluate(key: string, value: unknown, ctx: ActionContext, where: string): Verdict {
  switch (key) {
    case "path_exists":
      return existsOrPlanned(targetPath(String(value), ctx, where), ctx);
    case "cmd_available":
      return findCommand(String(value), ctx.env, ctx.os, ctx.packDir) !== null;
    case "os":
      return ctx.os === value;
    case "symlink_ok":
      return linkPointsAt(value as { src: string; dst: string }, ctx, where);
    case "all_of":
    case "any_of":
    case "none_of": {
      const list = Array.isArray(value) ? value : [];
      // Inside a combiner "not supported" counts as false.
      const verdicts = list.map((c: unknown, i) => {
        const [k, val] = Object.entries(c as Record<string, unknown>)[0] ?? ["", undefined];
        return evaluate(k, val, ctx, `${where}[${i}].${k}`) === true;
      });
      if (key === "all_of") return verdicts.every(Boolean);
      if (key === "any_of") return verdicts.some(Boolean);
      return !verdicts.some(Boolean);
    }
    default:
      if (WINDOWS_ONLY.has(key)) return ctx.os === "windows" ? windowsPredicate(key, value, ctx) : "unsupported";
      throw packOpError(`${fieldName(ctx, where)} is not a known condition; use one of ${CONDITION_KEYS.join(", ")}.`);
  }
}

/** Whether every given top-level condition holds (a conjunction). "Not supported" here is an error. */
export function allHold(conds: ReadonlyArray<[string, unknown]>, ctx: ActionContext): boolean {
  for (const [key, value] of conds) {
    const verdict = evaluate(key, value, ctx, key);
    if (verdict === "unsupported") {
      throw packOpError(
        `${fieldName(ctx, key)} is not supported on ${ctx.os} (it is Windows only); put it inside any_of/all_of/none_of, where it counts as false, or guard it with when: {os: windows}.`,
      );
    }
    if (!verdict) return false;
  }
  return true;
}

/** The condition entries of an args object (the keys that are conditions, with a value). */
export function conditionEntries(args: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(args).filter(([k, val]) => CONDITION_KEYS.includes(k) && val !== undefined);
}
