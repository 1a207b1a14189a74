// Help that teaches (`grex help [verb]`, `<verb> --help`), "did you mean" for
// verbs and flags, `-V`, `exec -- <cmd>`, and the flag-value errors.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { closest, editDistance } from "../../src/core/base/closest.ts";
import { VERBS } from "../../src/verbs/index.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

const UNIVERSAL = "--json --plain --dry-run --parallel --filter --manifest --verbose";

let t: TestWorkspace;
beforeEach(() => {
  t = new TestWorkspace("grex-help-");
});
afterEach(() => t.cleanup());

describe("help", () => {
  test("help speaks in flags, lists --dry-run only where it applies, and keeps long flags' descriptions in the column", async () => {
    const rm = (await t.grex("help", "rm")).stdout;
    expect(rm).toContain("unless --skip-teardown");
    expect(rm).toContain("(unless --keep-files)");
    expect(rm).not.toMatch(/\bskip_teardown\b|\bkeep_files\b/);
    expect((await t.grex("help", "add")).stdout).toContain("unless --no-install is given");
    expect((await t.grex("help", "ls")).stdout).not.toContain("--dry-run");
    expect((await t.grex("help", "sync")).stdout).toContain("--dry-run");
    const lines = (await t.grex("help", "sync")).stdout.split("\n");
    const at = lines.indexOf("  --http-connect-timeout <s>");
    expect(at).toBeGreaterThan(0);
    const column = (lines.find((l) => l.startsWith("  --json")) ?? "").indexOf("Print");
    expect(lines[at + 1]?.indexOf("Seconds")).toBe(column);
  });

  test("a URL with spaces is suggested quoted, so the command can be pasted", async () => {
    await t.grex("init");
    const r = await t.grex("add", "not a url at all");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("give the path: `grex add 'not a url at all' <path>`");
  });

  test("`grex help sync` = `grex sync --help`: description, own flags, then universal ones, then examples", async () => {
    const viaHelp = await t.grex("help", "sync");
    const viaFlag = await t.grex("sync", "--help");
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    const out = viaHelp.stdout;
    process.stdout.write(`--- grex help sync ---\n${out}`);
    const sync = VERBS.find((v) => v.name === "sync");
    expect(out.startsWith(`grex sync: ${sync?.description}\n`)).toBe(true);
    expect(out).toContain("Usage: grex sync [...ids] [flags]");
    const own = out.indexOf("\nFlags:\n");
    const universal = out.indexOf("\nUniversal flags:\n");
    const examples = out.indexOf("\nExamples:\n");
    expect(own).toBeGreaterThan(0);
    expect(universal).toBeGreaterThan(own);
    expect(examples).toBeGreaterThan(universal);
    expect(out.slice(own, universal)).toContain("--fail-fast");
    expect(out.slice(own, universal)).not.toContain("--json");
    expect(out.slice(universal, examples)).toContain("--json");
    expect(out.slice(examples)).toContain("  grex sync --filter");
  });

  test("every verb has 1 to 3 examples, each starting with `grex <verb>`", () => {
    for (const verb of VERBS) {
      const examples = verb.examples ?? [];
      expect(examples.length, verb.name).toBeGreaterThanOrEqual(1);
      expect(examples.length, verb.name).toBeLessThanOrEqual(3);
      for (const e of examples) expect(e.startsWith(`grex ${verb.name}`), e).toBe(true);
    }
  });

  test("every flag an example uses is one the verb or the universal set defines", () => {
    for (const verb of VERBS) {
      const known = new Set([...verb.cli.flags.flatMap((f) => f.flag.match(/--[a-z-]+/g) ?? []), ...UNIVERSAL.split(" ")]);
      for (const e of verb.examples ?? []) {
        const mine = e.split(" -- ")[0] as string;
        for (const flag of mine.match(/(?<=\s)--[a-z][a-z-]*/g) ?? []) expect(known.has(flag), `${e}: ${flag}`).toBe(true);
      }
    }
  });

  test("`grex help` and `grex --help` list every verb with a one-line summary", async () => {
    const r = await t.grex("help");
    expect(r.code).toBe(0);
    expect((await t.grex("--help")).stdout).toBe(r.stdout);
    for (const verb of VERBS) expect(r.stdout).toMatch(new RegExp(`^  ${verb.name} +\\S`, "m"));
    expect(r.stdout).toContain("completion");
    for (const line of r.stdout.split("\n")) expect(line.length).toBeLessThanOrEqual(100);
  });

  test("`grex help snyc` is a usage error with a suggestion", async () => {
    const r = await t.grex("help", "snyc");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: Unknown verb 'snyc'. Did you mean 'sync'? Run `grex help` to see the verbs.\n");
  });
});

describe("did you mean", () => {
  test("`grex snyc` suggests sync (through the real entry point)", async () => {
    const proc = t.spawnGrex(["snyc"]);
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    process.stdout.write(`--- grex snyc ---\n${stderr}`);
    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: "",
      stderr: "grex: Unknown verb 'snyc'. Did you mean 'sync'? Run `grex help` to see the verbs.\n",
    });
  });

  test("a far-off word gets no suggestion", async () => {
    const r = await t.grex("frobnicate");
    expect(r.stderr).toBe("grex: Unknown verb 'frobnicate'. Run `grex help` to see the verbs.\n");
  });

  test("a mistyped flag suggests the verb's or a universal flag", async () => {
    await t.grex("init");
    const r = await t.grex("sync", "--forse");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: Unknown flag '--forse' for `grex sync`. Did you mean '--force'? See `grex sync --help`.\n");
    expect((await t.grex("ls", "--filtr", "x")).stderr).toContain("Did you mean '--filter'?");
  });

  test("edit distance counts a swap of neighbours as one edit", () => {
    expect(editDistance("snyc", "sync")).toBe(1);
    expect(editDistance("status", "stats")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(closest("stauts", ["status", "sync"])).toBe("status");
    expect(closest("xyz", ["status", "sync"])).toBeUndefined();
  });
});

describe("version and flag values", () => {
  test("-V = --version (in process and through main.ts)", async () => {
    expect((await t.grex("-V")).stdout).toBe(`grex ${pkg.version}\n`);
    const proc = t.spawnGrex(["-V"]);
    expect(await new Response(proc.stdout).text()).toBe(`grex ${pkg.version}\n`);
    expect(await proc.exited).toBe(0);
  });

  test("--parallel -1 says the flag takes a whole number", async () => {
    await t.grex("init");
    const r = await t.grex("ls", "--parallel", "-1");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: Flag --parallel takes a whole number (0 or more), got '-1'; see `grex ls --help`.\n");
  });

  test('--manifest "" is a usage error, not silently ignored', async () => {
    await t.grex("init");
    const r = await t.grex("ls", "--manifest", "");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: --manifest is empty; pass the path of a grex.jsonl (or of its directory), or leave the flag out.\n");
  });
});

describe("exec -- <cmd>", () => {
  test("`grex exec -- git log -1` runs like `grex exec git -- log -1`", async () => {
    const url = t.repo("meta-basic");
    await t.grex("init");
    expect((await t.grex("add", url, "tools", "--no-install")).code).toBe(0);
    const a = await t.grex("exec", "--json", "--", "git", "log", "-1", "--format=%s");
    const b = await t.grex("exec", "--json", "git", "--", "log", "-1", "--format=%s");
    expect(a.code).toBe(0);
    expect(a.json).toEqual(b.json);
    expect(a.json).toEqual({ results: [{ pack: "tools", stdout: "meta-basic: initial\n", stderr: "", exit: 0 }] });
  });
});
