// Every switch (a flag without a value) of every verb is a boolean wherever it
// stands: it never takes the next word as its value, so `sync --dry-run tools`
// is a dry run of `tools` and never a real sync of everything. Table-driven over
// the verb table itself, so a new verb or flag is covered without editing this.
import { describe, expect, test } from "bun:test";
import { buildCli, collectParams, flagParam, normaliseSwitches } from "../../src/cli/run.ts";
import { VERBS } from "../../src/verbs/index.ts";
import type { CliFlag, VerbDef } from "../../src/verbs/types.ts";
import { parseParams } from "../../src/verbs/validate.ts";

const UNIVERSAL_SWITCHES: CliFlag[] = [
  { flag: "--json", description: "" },
  { flag: "--plain", description: "" },
  { flag: "--dry-run", description: "" },
];

/** argv → the verb's typed params, through the same cac parse and collection the CLI uses. */
function parse(argv: string[]): { verb: VerbDef; params: Record<string, unknown> } {
  const cli = buildCli();
  const parsed = cli.parse(["grex", "grex", ...normaliseSwitches(argv)], { run: false });
  const command = cli.matchedCommand;
  if (!command) throw new Error(`no verb matched ${argv.join(" ")}`);
  command.checkUnknownOptions();
  command.checkUnusedArgs();
  const verb = VERBS.find((v) => v.name === command.name) as VerbDef;
  const raw = collectParams(verb, parsed.args, parsed.options as Record<string, unknown>, argv);
  return { verb, params: parseParams(verb, raw, "cli") as Record<string, unknown> };
}

/** Positional words that satisfy the verb's usage line, and the params they fill. */
function positionalsFor(verb: VerbDef): { words: string[]; expected: Record<string, unknown> } {
  const words: string[] = [];
  const expected: Record<string, unknown> = {};
  for (const name of verb.cli.positionals) {
    if (name.startsWith("...")) {
      words.push("tools", "extra");
      expected[name.slice(3)] = ["tools", "extra"];
    } else {
      const word = name === "subcommand" ? "status" : name === "url" ? "https://example.invalid/tools.git" : "tools";
      words.push(word);
      expected[name] = word;
    }
  }
  return { words, expected };
}

const switchesOf = (verb: VerbDef) =>
  [...UNIVERSAL_SWITCHES, ...verb.cli.flags]
    .filter((f) => !/[<[]/.test(f.flag) && f.flag.startsWith("--"))
    .filter((f) => flagParam(f) in verb.params.entries);

const cases = VERBS.flatMap((verb) => switchesOf(verb).map((flag) => ({ verb, flag })));

describe("every switch of every verb is a boolean wherever it stands", () => {
  test("the table is not empty and covers the switches the bug report names", () => {
    const names = cases.map((c) => `${c.verb.name} ${c.flag.flag}`);
    for (const n of ["sync --dry-run", "update --dry-run", "sync --fail-fast", "add --dry-run", "run --dry-run", "rm --keep-files"]) {
      expect(names).toContain(n);
    }
  });

  for (const { verb, flag } of cases) {
    const key = flagParam(flag);
    const negated = flag.flag.startsWith("--no-");
    const { words, expected } = positionalsFor(verb);

    test(`${verb.name} ${flag.flag} followed by positionals`, () => {
      if (words.length === 0) {
        // A verb without positionals: the stray word is an error, never the flag's value.
        expect(() => parse([verb.name, flag.flag, "tools"])).toThrow(/Unused args|Unexpected/);
        expect(parse([verb.name, flag.flag]).params[key]).toBe(!negated);
        return;
      }
      for (const argv of [
        [verb.name, flag.flag, ...words],
        [verb.name, ...words.slice(0, 1), flag.flag, ...words.slice(1)],
        [flag.flag, verb.name, ...words],
      ]) {
        const { verb: matched, params } = parse(argv);
        expect(matched.name).toBe(verb.name);
        expect(params[key]).toBe(!negated);
        for (const [k, want] of Object.entries(expected)) expect(params[k]).toEqual(want);
      }
    });

    if (!negated) {
      test(`${verb.name} ${flag.flag}=false / =true`, () => {
        expect(parse([verb.name, `${flag.flag}=false`, ...words]).params[key]).toBe(false);
        expect(parse([verb.name, `${flag.flag}=true`, ...words]).params[key]).toBe(true);
        expect(() => parse([verb.name, `${flag.flag}=maybe`, ...words])).toThrow(/true or false/);
      });
    }
  }

  test("a switch-looking word after `--` belongs to the child command", () => {
    const { params } = parse(["exec", "echo", "--", "--dry-run", "x"]);
    expect(params.dry_run ?? false).toBe(false);
    expect(params.args).toEqual(["--dry-run", "x"]);
  });
});
