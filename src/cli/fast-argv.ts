// The argv of a plain call (`grex ls --json`, `grex rm tools --force`) read
// without building cac's program. It takes only the forms whose meaning is
// unambiguous — long flags the verb or the universal set declares, spelled
// `--flag`, `--flag value` or `--flag=value`, and positionals within the
// usage line's bounds — and hands back what cac's parse would: positionals
// and option keys (camelCased as cac does). Anything else (short flags,
// `--no-…`, `--`, an unknown flag, a switch followed by a word mri could take
// as its value, a missing or odd value, a wrong positional count) returns
// undefined and cac parses it, so every error keeps cac's path and wording. A test runs both parsers over a
// corpus built from the verb table and requires the same params.
import type { CliFlag, VerbDef } from "../verbs/types.ts";

export interface FastParse {
  /** Positionals after the verb word. */
  args: string[];
  /** Option keys as cac names them (camelCase); switches true, value flags their last raw value. */
  options: Record<string, unknown>;
}

/** `dry-run` → `dryRun`, the way cac names a parsed option (its `([a-z])-([a-z])` rule, left to right). */
function camelOf(name: string): string {
  let out = "";
  for (let i = 0; i < name.length; i++) {
    const c = name[i] as string;
    const next = name[i + 2];
    if (isLower(c) && name[i + 1] === "-" && next !== undefined && isLower(next)) {
      out += c + next.toUpperCase();
      i += 2;
    } else out += c;
  }
  return out;
}

const isLower = (c: string) => c >= "a" && c <= "z";

// Plain string tests, no regex or Map: this runs on every call in cold code,
// where each builtin's first use costs more than the whole parse.
/** The flag `--name` names, when its spec is one this parser reads: `--name` or `--name <value>`, no alias or `--no-`. */
function specOf(name: string, flags: readonly CliFlag[]): { takesValue: boolean } | undefined {
  if (name.startsWith("--no-")) return undefined;
  for (const f of flags) {
    const spec = f.flag;
    if (spec === name) return { takesValue: false };
    if (spec.startsWith(`${name} <`) && spec.endsWith(">") && spec.indexOf(" ", name.length + 1) === -1) return { takesValue: true };
  }
  return undefined;
}

/** cac's defaults: a `--no-x` switch makes `x` true unless given (and given, it is left to cac). */
function defaults(flags: readonly CliFlag[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of flags) {
    const spec = f.flag;
    if (spec.startsWith("--no-") && spec.indexOf(" ") === -1 && spec.indexOf(",") === -1) out[camelOf(spec.slice(5))] = true;
  }
  return out;
}

/** Positional bounds of a usage line such as `<url> [path]` or `[...ids]`. */
function bounds(usage: string): { min: number; max: number } {
  let min = 0;
  let max = 0;
  for (const word of usage.split(" ")) {
    if (word === "") continue;
    max = word.includes("...") || max === Infinity ? Infinity : max + 1;
    if (word.startsWith("<")) min++;
  }
  return { min, max };
}

/** A word mri could read as a switch's value, or turn into a number: `true`, `false`, `12`. */
function readsAsValue(next: string | undefined): boolean {
  if (next === undefined || next.startsWith("-")) return false;
  const n = +next;
  return next === "true" || next === "false" || n * 0 === 0;
}

/** cac's reading of `argv` for `verb` when the argv is plain; undefined when cac must read it. */
export function fastArgv(argv: readonly string[], verb: VerbDef, universal: readonly CliFlag[]): FastParse | undefined {
  const flags = [...universal, ...verb.cli.flags];
  const options = defaults(flags);
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith("-")) {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq === -1 ? a : a.slice(0, eq);
    const shape = specOf(name, flags);
    if (shape === undefined) return undefined;
    const key = camelOf(name.slice(2));
    if (!shape.takesValue) {
      // `--flag=…`, and a following true/false or number, can read differently on cac's paths (mri may take it as the value).
      if (eq !== -1 || readsAsValue(argv[i + 1])) return undefined;
      options[key] = true;
      continue;
    }
    const value = eq === -1 ? argv[++i] : a.slice(eq + 1);
    if (value === undefined || value === "" || value.startsWith("-")) return undefined;
    options[key] = value;
  }
  if (positionals[0] !== verb.name) return undefined;
  const args = positionals.slice(1);
  const { min, max } = bounds(verb.cli.args);
  if (args.length < min || args.length > max) return undefined;
  return { args, options };
}
