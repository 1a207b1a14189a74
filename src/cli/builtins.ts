// What the CLI answers before cac parses anything: help in all its spellings
// and `grex completion`. Returns the exit code, or undefined to go on to a verb.
import { usageError } from "../core/errors.ts";
import type { CliFlag } from "../verbs/types.ts";

/** The verb word: the first argument that is neither a flag nor a flag's value. */
export function verbWord(argv: readonly string[], universal: readonly CliFlag[]): string | undefined {
  const valueFlags = new Set(universal.filter((f) => /[<[]/.test(f.flag)).map((f) => f.flag.split(/[ ,]+/).find((p) => p.startsWith("--"))));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") return undefined;
    if (!a.startsWith("-")) return a;
    if (valueFlags.has(a)) i++;
  }
  return undefined;
}

export interface BuiltinIO {
  stdout(text: string): void;
  cwd: string;
  env: Record<string, string | undefined>;
}

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
