// Messages are written for the CLI ("run `grex sync --force`"). Over MCP the
// model calls tools, so a CLI command line in a message becomes the tool call
// it stands for ("call the sync tool with force: true"). Commands that are
// not tools, or use a CLI-only flag, stay command lines, marked as such.
import { shellWords } from "../core/base/shell-words.ts";
import type { VerbDef } from "../verbs/types.ts";

const CLI_GLOBALS = new Set(["--json", "--plain", "--manifest", "--parallel", "-v", "--verbose"]);

/** One `grex …` command line (without `grex`) as a tool call, or undefined when it is not one. */
function asToolCall(words: string[], tools: readonly VerbDef[]): string | undefined {
  const [name, ...rest] = words;
  const verb = tools.find((t) => t.name === name);
  if (!verb) return undefined;
  const args: string[] = [];
  const positionals = verb.cli.positionals.map((p) => p.replace(/^\.\.\./, ""));
  const variadic = verb.cli.positionals.at(-1)?.startsWith("...") ?? false;
  let pos = 0;
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i] as string;
    if (CLI_GLOBALS.has(w)) return undefined;
    if (w.startsWith("--")) {
      const negated = w.startsWith("--no-");
      const key = (negated ? w.slice(5) : w.slice(2)).replaceAll("-", "_");
      if (!(key in verb.params.entries) || verb.cliOnly?.includes(key)) return undefined;
      const spec = verb.cli.flags.find((f) => f.flag.startsWith(`--${key.replaceAll("_", "-")} `));
      if (spec && /[<[]/.test(spec.flag) && rest[i + 1] !== undefined) args.push(`${key}: ${JSON.stringify(rest[++i])}`);
      else args.push(`${key}: ${!negated}`);
      continue;
    }
    // More words than positionals: not a command line this verb takes, so it stays as written.
    if (pos >= positionals.length && !variadic) return undefined;
    const key = positionals[Math.min(pos, positionals.length - 1)];
    if (key === undefined) return undefined;
    pos++;
    const placeholder = /^[<[]/.test(w);
    args.push(placeholder ? key : `${key}: ${JSON.stringify(w)}`);
  }
  return `the ${verb.name} tool${args.length > 0 ? ` (${args.join(", ")})` : ""}`;
}

/** `text` with `grex <verb> …` command lines replaced by the tool calls they stand for. */
export function inToolWords(text: string, tools: readonly VerbDef[]): string {
  const swap = (cmd: string): string | undefined => asToolCall(shellWords(cmd.trim()), tools);
  let out = text.replace(/`grex ([^`]+)`/g, (whole, cmd: string) => swap(cmd) ?? `${whole} (on the command line)`);
  // Unquoted "see grex status" / "run grex sync": the verb alone.
  out = out.replace(/\b(see|run|use|try) grex ([a-z]+)\b/g, (whole, lead: string, name: string) => {
    const call = swap(name);
    return call ? `${lead === "see" ? "see" : "call"} ${call}` : whole;
  });
  // A bare flag ("or pass --force") that some tool takes as an argument: its argument form.
  out = out.replace(/(^|[\s(])--([a-z][a-z-]*)\b(?![`\w-])/g, (whole, lead: string, flag: string) => {
    const key = flag.replaceAll("-", "_");
    const taken = tools.some((t) => key in t.params.entries && !t.cliOnly?.includes(key));
    return taken ? `${lead}${key}: true` : whole;
  });
  return out.replace(/\brun the (\w+) tool/g, "call the $1 tool");
}
