// The CLI reads a plain argv without cac (src/cli/fast-argv.ts) and loads only
// the named verb's module (src/cli/verb-loaders.ts). Both must be invisible:
// whatever argv the fast reader accepts, cac accepts too, with no error, and
// the verb gets the very same params; the loaders yield exactly the table's
// verbs. The corpus is built from the verb table, so new verbs and flags are
// covered without editing this file.
import { describe, expect, test } from "bun:test";
import { fastArgv } from "../../src/cli/fast-argv.ts";
import { buildCli, collectParams, GLOBAL_FLAGS, normaliseSwitches } from "../../src/cli/run.ts";
import { LOADABLE_VERBS, loadVerb } from "../../src/cli/verb-loaders.ts";
import { CLI_VERBS } from "../../src/cli/verbs.ts";
import type { CliFlag, VerbDef } from "../../src/verbs/types.ts";
import { parseParams } from "../../src/verbs/validate.ts";
import { prng } from "../helpers/prng.ts";

type Read = { ok: true; params: unknown; typed: unknown } | { ok: false; error: string };

/** What the CLI's cac path makes of argv: params, or the error it raises (and at which stage). */
function viaCac(verb: VerbDef, argv: string[]): Read {
  let parsed: ReturnType<ReturnType<typeof buildCli>["parse"]>;
  try {
    const cli = buildCli(verb);
    parsed = cli.parse(["grex", "grex", ...normaliseSwitches(argv)], { run: false });
    const command = cli.matchedCommand;
    if (command?.name !== verb.name) return { ok: false, error: "cac: no match" };
    command.checkUnknownOptions();
    command.checkRequiredArgs();
    command.checkUnusedArgs();
  } catch (err) {
    return { ok: false, error: `cac: ${String(err)}` };
  }
  return collected(verb, parsed.args, parsed.options as Record<string, unknown>, argv);
}

function viaFast(verb: VerbDef, argv: string[]): Read | undefined {
  const fast = fastArgv(argv, verb, GLOBAL_FLAGS);
  return fast === undefined ? undefined : collected(verb, fast.args, fast.options, argv);
}

/** The verb's params from a parse (collectParams can still refuse a flag's value). */
function collected(verb: VerbDef, args: readonly string[], options: Record<string, unknown>, argv: string[]): Read {
  try {
    const params = collectParams(verb, args, options, argv);
    return { ok: true, params, typed: typed(verb, params) };
  } catch (err) {
    return { ok: false, error: `params: ${String(err)}` };
  }
}

function typed(verb: VerbDef, params: Record<string, unknown>): unknown {
  try {
    return parseParams(verb, params, "cli");
  } catch (err) {
    return `invalid: ${String(err)}`;
  }
}

const WORDS = ["tools", "a/b", "1.10", "12", "true", "false", "-x", "--", "", "=", "https://example.invalid/x.git", "-1"];
const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;

/** One argv for `verb`: its word, flags of every kind and spelling, positionals and stray words, shuffled in. */
function randomArgv(rand: () => number, verb: VerbDef, others: readonly CliFlag[]): string[] {
  const flags = [...GLOBAL_FLAGS, ...verb.cli.flags, ...others];
  const argv: string[] = [];
  const n = Math.floor(rand() * 6);
  for (let i = 0; i < n; i++) {
    const r = rand();
    if (r < 0.35) argv.push(pick(rand, WORDS.slice(0, 7)));
    else if (r < 0.45) argv.push(pick(rand, WORDS));
    else {
      const f = pick(rand, flags);
      const long = f.flag.split(/[ ,]+/).find((p) => p.startsWith("-")) as string;
      const form = rand();
      if (form < 0.5) argv.push(long);
      else if (form < 0.8) argv.push(long, pick(rand, WORDS));
      else argv.push(`${long}=${pick(rand, WORDS)}`);
    }
  }
  argv.splice(Math.floor(rand() * (argv.length + 1)), 0, verb.name);
  return argv;
}

describe("fast argv reading agrees with cac", () => {
  const everyFlag = CLI_VERBS.flatMap((v) => v.cli.flags);

  test("plain calls take the fast path", () => {
    const ls = CLI_VERBS.find((v) => v.name === "ls") as VerbDef;
    const rm = CLI_VERBS.find((v) => v.name === "rm") as VerbDef;
    expect(fastArgv(["ls", "--json"], ls, GLOBAL_FLAGS)).toEqual({ args: [], options: { json: true } });
    expect(fastArgv(["--json", "ls", "--filter", "tools/*", "--long"], ls, GLOBAL_FLAGS)).toEqual({ args: [], options: { json: true, filter: "tools/*", long: true } });
    expect(fastArgv(["rm", "tools", "--dry-run"], rm, GLOBAL_FLAGS)).toEqual({ args: ["tools"], options: { dryRun: true } });
  });

  test("what it cannot read with certainty is left to cac", () => {
    const ls = CLI_VERBS.find((v) => v.name === "ls") as VerbDef;
    for (const argv of [["ls", "-v"], ["ls", "--bogus"], ["ls", "extra"], ["ls", "--json=true"], ["ls", "--long", "false"], ["ls", "--filter"], ["ls", "--filter", "-x"], ["ls", "--filter="], ["ls", "--", "x"], ["sync"]]) {
      expect(fastArgv(argv, ls, GLOBAL_FLAGS)).toBeUndefined();
    }
  });

  for (const verb of CLI_VERBS) {
    test(`${verb.name}: every argv the fast reader accepts reads the same through cac`, () => {
      const rand = prng(0x5eed + verb.name.length * 7919 + verb.name.charCodeAt(0));
      let accepted = 0;
      for (let trial = 0; trial < 400; trial++) {
        const argv = randomArgv(rand, verb, everyFlag);
        const fast = viaFast(verb, argv);
        if (fast === undefined) continue;
        accepted++;
        const slow = viaCac(verb, argv);
        // Equal outcomes, so cac never refused what the fast reader took (its errors are tagged "cac:").
        if (JSON.stringify(fast) !== JSON.stringify(slow)) throw new Error(`argv ${JSON.stringify(argv)}: fast ${JSON.stringify(fast)} vs cac ${JSON.stringify(slow)}`);
      }
      expect(accepted).toBeGreaterThan(10); // the property is not vacuous
    });
  }
});

describe("verb loaders", () => {
  test("name exactly the CLI's verbs and yield the table's own objects", async () => {
    expect([...LOADABLE_VERBS].sort()).toEqual(CLI_VERBS.map((v) => v.name).sort());
    for (const verb of CLI_VERBS) expect(await loadVerb(verb.name)).toBe(verb);
  });

  test("any other word loads nothing", () => {
    for (const word of ["frobnicate", "constructor", "__proto__", "toString", "help", ""]) expect(loadVerb(word)).toBeUndefined();
  });
});
