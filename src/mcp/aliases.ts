// Tool arguments as the Rust grex's MCP server spells them, mapped to this
// grex's names before validation, so agents configured for that server keep
// working. Only unambiguous cases: when both spellings are given, nothing is
// mapped and validation reports the unknown one. The schemas list only the
// canonical names.
//
//   camelCase of a param (dryRun, fromReposJson, lintConfig, keepFiles, ...)
//   sync   packRoot / workspace: must name this server's workspace; dropped
//   rm     path → id                  update  pack → ids: [pack]
//   exec   cmd: [bin, ...args] → cmd: bin, args
import { resolve } from "node:path";
import { usageError } from "../core/base/errors.ts";
import type { VerbDef } from "../verbs/types.ts";

const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

const snakeCase = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Rust-only parameters that name the workspace: accepted when they name the one this server serves. */
const WORKSPACE_ALIASES: Record<string, readonly string[]> = { sync: ["packRoot", "workspace"] };

/** A copy of `args` with the Rust spellings mapped to this grex's params of `verb` (`root`: the server's workspace). */
export function mapRustAliases(verb: VerbDef, args: unknown, root: string): unknown {
  if (!isObject(args)) return args;
  const known = new Set(Object.keys(verb.params.entries).filter((k) => !(verb.cliOnly ?? []).includes(k)));
  const out: Record<string, unknown> = { ...args };
  const move = (from: string, to: string, value: unknown = out[from]) => {
    if (!(from in out) || to in out || !known.has(to)) return;
    delete out[from];
    out[to] = value;
  };
  for (const key of Object.keys(out)) if (/[A-Z]/.test(key)) move(key, snakeCase(key));
  for (const key of WORKSPACE_ALIASES[verb.name] ?? []) {
    const value = out[key];
    if (value === undefined) continue;
    if (typeof value !== "string" || resolve(root, value) !== resolve(root)) {
      throw usageError(
        `'${key}' names ${JSON.stringify(value)}, but this server serves the workspace ${root}; leave '${key}' out, or start grex serve in that directory.`,
        { field: key },
      );
    }
    delete out[key];
  }
  if (verb.name === "rm") move("path", "id");
  if (verb.name === "update" && typeof out.pack === "string") move("pack", "ids", [out.pack]);
  if (verb.name === "exec" && Array.isArray(out.cmd) && out.cmd.length > 0 && out.cmd.every((c) => typeof c === "string") && !("args" in out)) {
    const [bin, ...rest] = out.cmd as string[];
    out.cmd = bin;
    out.args = rest;
  }
  return out;
}
