// "Did you mean …?" for mistyped verbs and flags: the closest known word by
// edit distance (a swap of two neighbours counts as one edit, as in `snyc`).
import { closest } from "../core/base/closest.ts";
import { type GrexError, usageError } from "../core/base/errors.ts";
import type { CliFlag, VerbDef } from "../verbs/types.ts";

/** ` Did you mean 'x'?` or nothing. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const hit = closest(word, candidates);
  return hit === undefined ? "" : ` Did you mean '${hit}'?`;
}

const longName = (f: CliFlag) => f.flag.split(/[ ,]+/).find((p) => p.startsWith("--")) as string;

/**
 * A clearer sentence for cac's "Unknown option `-x`": a negative number given
 * to a value flag (`--parallel -1`), or a near miss of a real flag.
 */
export function explainUnknownOption(cacMessage: string, argv: readonly string[], verb: VerbDef, universal: readonly CliFlag[]): GrexError | undefined {
  const m = /^Unknown option `(.+)`$/.exec(cacMessage);
  if (!m) return undefined;
  // cac names the flag camelCased (`--failOnDrfit`): find what the user typed.
  const camel = (a: string) => a.replace(/(?<=\w)-([a-z])/g, (_, c: string) => c.toUpperCase());
  const dashes = argv.indexOf("--");
  const own = dashes === -1 ? argv : argv.slice(0, dashes);
  const typed = own.find((a) => a.startsWith("-") && (a === m[1] || camel(a.split("=")[0] as string) === m[1]));
  const given = typed === undefined ? (m[1] as string) : (typed.split("=")[0] as string);
  const flags = [...verb.cli.flags, ...universal];
  const at = argv.findIndex((a) => a === given || a.startsWith(`${given}=`));
  const before = at > 0 ? argv[at - 1] : undefined;
  const owner = flags.find((f) => /[<[]/.test(f.flag) && longName(f) === before);
  if (owner && /^-\d/.test(argv[at] as string)) {
    const what = owner.number ? "takes a whole number (0 or more)" : "needs a value";
    return usageError(`Flag ${before} ${what}, got '${argv[at]}'; see \`grex ${verb.name} --help\`.`, { field: before?.slice(2) });
  }
  const hint = didYouMean(given.split("=")[0] as string, flags.map(longName));
  // A verb running a command (exec): the flag was probably the command's own.
  const rest = verb.cli.positionals.at(-1)?.startsWith("...") === true && verb.cli.args.startsWith("<");
  if (rest && hint === "") {
    const words = argv.slice(argv.indexOf(verb.name) + 1).filter((w) => w !== "--");
    const example = words.length > 1 ? `grex ${verb.name} ${words[0]} -- ${words.slice(1).join(" ")}` : `grex ${verb.name} <command> -- ${given}`;
    return usageError(
      `Unknown flag '${given}' for \`grex ${verb.name}\`; if it is the command's own, put \`--\` before the command's arguments: \`${example}\`.`,
    );
  }
  return usageError(`Unknown flag '${given}' for \`grex ${verb.name}\`.${hint} See \`grex ${verb.name} --help\`.`);
}

/**
 * `grex exec -- git log -1` → `grex exec git -- log -1`: a verb whose first
 * positional is required and whose last takes the rest may take its first
 * word from after `--` when none came before. Returns the new argv, or undefined.
 */
export function moveCommandAfterDashes(argv: readonly string[], args: readonly unknown[], verbName: string | undefined, verbs: readonly VerbDef[]): string[] | undefined {
  const verb = verbs.find((v) => v.name === verbName);
  const dashes = argv.indexOf("--");
  if (!verb || dashes === -1 || dashes === argv.length - 1 || args.length > 0) return undefined;
  const pos = verb.cli.positionals;
  if (pos.length < 2 || !(pos.at(-1) as string).startsWith("...") || !verb.cli.args.startsWith("<")) return undefined;
  return [...argv.slice(0, dashes), argv[dashes + 1] as string, "--", ...argv.slice(dashes + 2)];
}
