// Variable expansion in action arguments (SPEC §5): `$VAR` and `${VAR}` from
// the environment (HOME always defined), `$$` for a literal `$`. An unset
// variable is an error naming it — never silently empty. A `$` not followed by
// a name, `{` or `$` (e.g. `$5`, a trailing `$`) stays literal, as in sh.
import { packOpError } from "./errors.ts";

type Env = Record<string, string | undefined>;

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** HOME as actions see it: the environment's, else the OS account's (node:os loads only then: it is on every verb's import path). */
export const homeOf = (env: Env): string => env.HOME ?? (import.meta.require("node:os") as typeof import("node:os")).homedir();

function lookup(name: string, env: Env, where: string): string {
  const value = name === "HOME" ? homeOf(env) : env[name];
  if (value === undefined) {
    throw packOpError(`Variable $${name} used in ${where} is not set; export it or use $$ for a literal dollar.`, {
      variable: name,
      where,
    });
  }
  return value;
}

/** Expand `$VAR`, `${VAR}` and `$$` in `input`; `where` names the field for errors ("actions[2].symlink.dst of pack 'x'"). */
export function expandVars(input: string, env: Env, where: string): string {
  if (!input.includes("$")) return input;
  let out = "";
  let i = 0;
  while (i < input.length) {
    const ch = input[i] as string;
    if (ch !== "$") {
      out += ch;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === "$") {
      out += "$";
      i += 2;
    } else if (next === "{") {
      const close = input.indexOf("}", i + 2);
      const name = close === -1 ? "" : input.slice(i + 2, close);
      if (!NAME.test(name)) {
        const shown = close === -1 ? input.slice(i) : input.slice(i, close + 1);
        throw packOpError(`${where} has a malformed variable reference '${shown}'; write \${NAME} with a letter or _ first, or $$ for a literal dollar.`, { where });
      }
      out += lookup(name, env, where);
      i = close + 1;
    } else if (next !== undefined && NAME_START.test(next)) {
      let j = i + 1;
      while (j < input.length && NAME_CHAR.test(input[j] as string)) j++;
      out += lookup(input.slice(i + 1, j), env, where);
      i = j;
    } else {
      out += "$";
      i++;
    }
  }
  return out;
}

/**
 * Expand every string inside a JSON-like value (object keys are left alone).
 * `where` is the field path ("actions[3].exec.env"), extended per element;
 * `suffix` follows it in messages (" of pack 'x'").
 */
export function expandDeep<T>(value: T, env: Env, where: string, suffix = ""): T {
  if (typeof value === "string") return expandVars(value, env, where + suffix) as T;
  if (Array.isArray(value)) return value.map((x, i) => expandDeep(x, env, `${where}[${i}]`, suffix)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(value)) out[k] = expandDeep(x, env, `${where}.${k}`, suffix);
    return out as T;
  }
  return value;
}
