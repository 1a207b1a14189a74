// The argv of a plain call (`grex ls --json`, `grex rm tools --force`) read
// without building cac's program. It takes only the forms whose meaning is
// unambiguous — long flags the verb or the universal set declares, spelled
// `--flag`, `--flag value` or `--flag=value`, and positionals within the
// usage line's bounds — and hands back what cac's parse would: positionals
// and option keys (camelCased as cac does). Anything else (short flags,
// `--no-…`, `--`, an unknown or repeated-looking case, a missing or odd
// value, a wrong positional count) returns undefined and cac parses it, so
// every error keeps cac's path and wording. A test runs both parsers over a
// corpus built from the verb table and requires the same params.
import type { CliFlag, VerbDef } from "../verbs/types.ts";

export interface FastParse {
  /** Positionals after the verb word. */
  args: string[];
  /** Option keys as cac names them (camelCase); switches true, value flags their last raw value. */
  options: Record<string, unknown>;
}

interface FlagShape {
  camel: string;
  takesValue: boolean;
}

/** `--dry-run` → `dryRun`, the way cac names a parsed option. */
const camelOf = (name: string) => name.replace(/([a-z])-([a-z])/g, (_, a: string, b: string) => a + b.toUpperCase());

/** The flags this parser may read: one long name, a required value or none (no aliases, `--no-…` or optional values). */
function shapes(flags: readonly CliFlag[]): Map<string, FlagShape> {
  const out = new Map<string, FlagShape>();
  for (const f of flags) {
    const m = /^--([a-z][a-z0-9-]*)(?: <[^>]+>)?$/.exec(f.flag);
    if (!m || (m[1] as string).startsWith("no-")) continue;
    out.set(`--${m[1]}`, { camel: camelOf(m[1] as string), takesValue: f.flag.includes("<") });
  }
  return out;
}

/** cac's defaults: a `--no-x` switch makes `x` true unless given (and given, it is left to cac). */
function defaults(flags: readonly CliFlag[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of flags) {
    const m = /^--no-([a-z][a-z0-9-]*)$/.exec(f.flag);
    if (m) out[camelOf(m[1] as string)] = true;
  }
  return out;
}

/** Positional bounds of a usage line such as `<url> [path]` or `[...ids]`. */
function bounds(usage: string): { min: number; max: number } {
  const words = usage.split(" ").filter((w) => w !== "");
  const min = words.filter((w) => w.startsWith("<")).length;
  return { min, max: words.some((w) => w.includes("...")) ? Infinity : words.length };
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
  const known = shapes(flags);
  const options = defaults(flags);
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith("-")) {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const shape = known.get(eq === -1 ? a : a.slice(0, eq));
    if (shape === undefined) return undefined;
    if (!shape.takesValue) {
      // `--flag=…`, and a following true/false or number, can read differently on cac's paths (mri may take it as the value).
      if (eq !== -1 || readsAsValue(argv[i + 1])) return undefined;
      options[shape.camel] = true;
      continue;
    }
    const value = eq === -1 ? argv[++i] : a.slice(eq + 1);
    if (value === undefined || value === "" || value.startsWith("-")) return undefined;
    options[shape.camel] = value;
  }
  if (positionals[0] !== verb.name) return undefined;
  const args = positionals.slice(1);
  const { min, max } = bounds(verb.cli.args);
  if (args.length < min || args.length > max) return undefined;
  return { args, options };
}
