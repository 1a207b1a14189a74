// Variable expansion in action arguments (SPEC §5): `$VAR` and `${VAR}` from
// the environment (HOME always defined), `$$` for a literal `$`. An unset
// variable is an error naming it — never silently empty.
import { homedir } from "node:os";
import { packOpError } from "./errors.ts";

const VAR = /\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

export function expandVars(input: string, env: Record<string, string | undefined>, where: string): string {
  return input.replace(VAR, (_m, all: string, braced: string | undefined, bare: string | undefined) => {
    if (all === "$") return "$";
    const name = (braced ?? bare) as string;
    const value = env[name] ?? (name === "HOME" ? homedir() : undefined);
    if (value === undefined) {
      throw packOpError(`Variable $${name} used in ${where} is not set; export it, or write $$ for a literal dollar sign.`, {
        variable: name,
      });
    }
    return value;
  });
}

/** Expand every string inside a JSON-like value. */
export function expandDeep<T>(value: T, env: Record<string, string | undefined>, where: string): T {
  if (typeof value === "string") return expandVars(value, env, where) as T;
  if (Array.isArray(value)) return value.map((v, i) => expandDeep(v, env, `${where}[${i}]`)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = expandDeep(v, env, `${where}.${k}`);
    return out as T;
  }
  return value;
}
