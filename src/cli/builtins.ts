// What the CLI answers before cac parses anything: help in all its spellings
// and `grex completion`. Returns the exit code, or undefined to go on to a verb.
import { usageError } from "../core/base/errors.ts";
import type { CliFlag } from "../verbs/types.ts";
import type { BuiltinIO } from "./builtin-io.ts";

/** The verb word: the first argument that is neither a flag nor a flag's value. */
export function verbWord(argv: readonly string[], universal: readonly CliFlag[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") return undefined;
    if (!a.startsWith("-")) return a;
    if (isValueFlag(a, universal)) i++;
  }
  return undefined;
}

// Plain loops, no regex: this runs on every call, in cold code, where each
// first use of a builtin such as filter or a regex split costs a parse.
/** Whether `long` (e.g. `--manifest`) names one of `flags` that takes a value. */
function isValueFlag(long: string, flags: readonly CliFlag[]): boolean {
  for (const f of flags) {
    const spec = f.flag;
    if ((spec.includes("<") || spec.includes("[")) && longFlagName(spec) === long) return true;
  }
  return false;
}

/** The `--name` part of a flag spec such as `-v, --verbose` or `--parallel <n>`. */
export function longFlagName(spec: string): string | undefined {
  let start = 0;
  while (start < spec.length) {
    let end = start;
    while (end < spec.length && spec[end] !== " " && spec[end] !== ",") end++;
    if (spec.startsWith("--", start) && end > start) return spec.slice(start, end);
    start = end + 1;
  }
  return undefined;
}

export type { BuiltinIO } from "./builtin-io.ts";

export async function runBuiltin(argv: readonly string[], io: BuiltinIO, universal: readonly CliFlag[]): Promise<number | undefined> {
  const end = argv.indexOf("--");
  const own = end === -1 ? argv : argv.slice(0, end);
  const word = verbWord(own, universal);
  if (word === "help") {
    const rest = own.slice(own.indexOf("help") + 1).filter((a) => !a.startsWith("-"));
    if (rest.length > 1) throw usageError("`grex help` takes at most one verb; run `grex help` to see them.");
    const { helpFor } = await import("./help.ts");
    io.stdout(helpFor(rest[0], universal));
    return 0;
  }
  if (own.includes("--help") || own.includes("-h")) {
    const { helpFor } = await import("./help.ts");
    io.stdout(helpFor(word, universal));
    return 0;
  }
  if (word === "completion") {
    const { completionCommand } = await import("./completion.ts");
    return completionCommand(own.slice(own.indexOf("completion") + 1), io, universal);
  }
  return undefined;
}
