// Help that teaches: `grex --help`, `grex help [verb]`, `grex <verb> --help`.
// Everything comes from the verb table: description, usage, the verb's own
// flags, then the universal ones, then examples.
import pkg from "../../package.json" with { type: "json" };
import { usageError } from "../core/base/errors.ts";
import { CLI_VERBS } from "./verbs.ts";
import type { CliFlag, VerbDef } from "../verbs/types.ts";
import { didYouMean } from "./suggest.ts";

/** Commands the CLI answers itself (not verbs: no MCP tool, no params schema). */
export const BUILTINS: ReadonlyArray<{ name: string; usage: string; description: string; examples: string[] }> = [
  { name: "help", usage: "[verb]", description: "Show the verbs, or one verb's flags and examples.", examples: ["grex help sync"] },
  {
    name: "completion",
    usage: "<bash|zsh|fish>",
    description: "Print a shell completion script (verbs, flags and the workspace's pack ids).",
    examples: ["source <(grex completion bash)", "grex completion fish > ~/.config/fish/completions/grex.fish"],
  },
];

/** The first clause of a verb's description, for one-line listings. */
export function summary(description: string): string {
  const end = description.search(/[.:;](\s|$)| \(/);
  let text = end === -1 ? description : description.slice(0, end);
  while (text.length > 60 && text.includes(", ")) text = text.slice(0, text.lastIndexOf(", "));
  return text;
}

function flagTable(flags: readonly CliFlag[]): string[] {
  // Aligned on the usual flags; a rare long one (the transfer limits)
  // one too long for the column puts its description on the next line, in the column.
  const width = Math.max(...flags.map((f) => f.flag.length).filter((n) => n <= 24));
  return flags.flatMap((f) =>
    f.flag.length <= width ? [`  ${f.flag.padEnd(width)}  ${f.description}`] : [`  ${f.flag}`, `  ${"".padEnd(width)}  ${f.description}`],
  );
}

/**
 * The verb table's description names params as MCP does (`unless keep_files`);
 * on the command line those are flags (`unless --keep-files`, `unless install
 * is false` → `unless --no-install is given`).
 */
export function inFlagWords(text: string, verb: VerbDef): string {
  const hasFlag = (flag: string) => verb.cli.flags.some((f) => f.flag === flag || f.flag.startsWith(`${flag} `) || f.flag.endsWith(` ${flag}`));
  return text
    .replace(/\bunless ([a-z][a-z_]*) is false\b/g, (whole, key: string) => {
      const flag = `--no-${key.replaceAll("_", "-")}`;
      return hasFlag(flag) ? `unless ${flag} is given` : whole;
    })
    .replace(/\bunless ([a-z][a-z_]*)\b/g, (whole, key: string) => {
      const flag = `--${key.replaceAll("_", "-")}`;
      return key in verb.params.entries && hasFlag(flag) ? `unless ${flag}` : whole;
    });
}

export function verbHelp(verb: VerbDef, universal: readonly CliFlag[]): string {
  const lines = [`grex ${verb.name}: ${inFlagWords(verb.description, verb)}`, "", `Usage: grex ${`${verb.name} ${verb.cli.args}`.trim()} [flags]`];
  if (verb.cli.flags.length > 0) lines.push("", "Flags:", ...flagTable(verb.cli.flags));
  // --dry-run is universal only for verbs that change something; a read-only verb has nothing to preview.
  // A verb's own flag of the same name (add's --filter <spec>) replaces the universal one.
  const own = new Set(verb.cli.flags.map((f) => f.flag.split(" ")[0]));
  const applies = universal.filter((f) => (f.flag !== "--dry-run" || "dry_run" in verb.params.entries) && !own.has(f.flag.split(" ")[0]));
  lines.push("", "Universal flags:", ...flagTable(applies));
  const examples = verb.examples ?? [];
  if (examples.length > 0) lines.push("", "Examples:", ...examples.map((e) => `  ${e}`));
  return `${lines.join("\n")}\n`;
}

export function rootHelp(universal: readonly CliFlag[]): string {
  const names = [...CLI_VERBS.map((v) => v.name), ...BUILTINS.map((b) => b.name)];
  const width = Math.max(...names.map((n) => n.length));
  const lines = [
    `grex ${pkg.version}: a tree of git repositories (packs) kept as one graph, synced in parallel.`,
    "",
    "Usage: grex <verb> [args] [flags]",
    "",
    "Verbs:",
    ...CLI_VERBS.map((v) => `  ${v.name.padEnd(width)}  ${summary(v.description)}`),
    ...BUILTINS.map((b) => `  ${b.name.padEnd(width)}  ${summary(b.description)}`),
    "",
    "Universal flags:",
    ...flagTable([...universal, { flag: "-V, --version", description: "Print grex's version" }, { flag: "-h, --help", description: "Show help" }]),
    "",
    "Examples:",
    "  grex init",
    "  grex add https://github.com/you/dotfiles",
    "  grex sync --parallel 4",
    "",
    "Run `grex help <verb>` for a verb's flags and examples.",
  ];
  return `${lines.join("\n")}\n`;
}

function builtinHelp(b: (typeof BUILTINS)[number]): string {
  return `grex ${b.name}: ${b.description}\n\nUsage: grex ${b.name} ${b.usage}\n\nExamples:\n${b.examples.map((e) => `  ${e}`).join("\n")}\n`;
}

/** Help for `name` (a verb or builtin); unknown names are a usage error with a suggestion. */
export function helpFor(name: string | undefined, universal: readonly CliFlag[]): string {
  if (name === undefined) return rootHelp(universal);
  const verb = CLI_VERBS.find((v) => v.name === name);
  if (verb) return verbHelp(verb, universal);
  const builtin = BUILTINS.find((b) => b.name === name);
  if (builtin) return builtinHelp(builtin);
  throw unknownVerb(name);
}

export function unknownVerb(name: string) {
  const hint = didYouMean(name, [...CLI_VERBS.map((v) => v.name), ...BUILTINS.map((b) => b.name)]);
  return usageError(`Unknown verb '${name}'.${hint} Run \`grex help\` to see the verbs.`);
}
