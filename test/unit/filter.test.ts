// `--filter <expr>` (SPEC §8): a table of expressions against a small pack tree.
import { describe, expect, test } from "bun:test";
import { GrexError } from "../../src/core/base/errors.ts";
import { type FilterablePack, globMatch, parseFilter } from "../../src/core/base/filter.ts";

const PACKS: FilterablePack[] = [
  { id: "dev-env", path: "dev-env", type: "meta", depth: 0 },
  { id: "dev-env/themes", path: "dev-env/themes", type: "declarative", depth: 1 },
  { id: "dev-env/themes/dark", path: "dev-env/themes/dark", type: "declarative", depth: 2 },
  { id: "dev-env/tools", path: "dev-env/tools", type: "scripted", depth: 1 },
  { id: "tools", path: "tools", type: "scripted", depth: 0 },
  { id: "notes.md", path: "notes.md", type: "declarative", depth: 0 },
];

const select = (expr: string | undefined) => PACKS.filter(parseFilter(expr)).map((p) => p.id);

const good: Array<[string | undefined, string[]]> = [
  [undefined, PACKS.map((p) => p.id)],
  ["", PACKS.map((p) => p.id)],
  ["   ", PACKS.map((p) => p.id)],
  // bare globs: id or path; * and ? stay within a segment, ** crosses segments
  ["tools", ["tools"]],
  ["dev-env", ["dev-env"]],
  ["dev-env/*", ["dev-env/themes", "dev-env/tools"]],
  ["dev-env/**", ["dev-env/themes", "dev-env/themes/dark", "dev-env/tools"]],
  ["*", ["dev-env", "tools", "notes.md"]],
  ["**", PACKS.map((p) => p.id)],
  ["t?ols", ["tools"]],
  ["*/t*", ["dev-env/themes", "dev-env/tools"]],
  ["notes.md", ["notes.md"]],
  ["notes?md", ["notes.md"]],
  ["notesXmd", []], // '.' is literal, not a regex wildcard
  ["dev-env/themes/d[ar]rk", []], // '[' is literal
  ["nothing-here", []],
  // name=<glob>: the last path segment
  ["name=tools", ["dev-env/tools", "tools"]],
  ["name=t*", ["dev-env/themes", "dev-env/tools", "tools"]],
  ["name=dark", ["dev-env/themes/dark"]],
  ["name=dev-env", ["dev-env"]],
  // type=<type>: exact
  ["type=declarative", ["dev-env/themes", "dev-env/themes/dark", "notes.md"]],
  ["type=meta", ["dev-env"]],
  ["type=decl*", []],
  // depth
  ["depth=0", ["dev-env", "tools", "notes.md"]],
  ["depth=1", ["dev-env/themes", "dev-env/tools"]],
  ["depth=2", ["dev-env/themes/dark"]],
  ["depth=7", []],
  ["depth<=1", ["dev-env", "dev-env/themes", "dev-env/tools", "tools", "notes.md"]],
  ["depth<=0", ["dev-env", "tools", "notes.md"]],
  // terms combine with AND; whitespace around terms and operators is fine
  ["type=scripted,depth=0", ["tools"]],
  ["dev-env/**, type=declarative", ["dev-env/themes", "dev-env/themes/dark"]],
  [" name = tools , depth <= 0 ", ["tools"]],
  ["type=meta,type=scripted", []],
];

describe("parseFilter: valid expressions", () => {
  for (const [expr, want] of good) {
    test(JSON.stringify(expr), () => {
      expect(select(expr)).toEqual(want);
    });
  }
});

const bad: Array<[string, string]> = [
  ["a,,b", "empty term"],
  [",", "empty term"],
  ["tools,", "empty term"],
  ["depth>=1", "use a glob, name=<glob>, type=<type>, depth=<n> or depth<=<n>"],
  ["depth<1", "use a glob"],
  ["depth>1", "use a glob"],
  ["colour=red", "use a glob"],
  ["a=b", "use a glob"],
  ["depth=", "'depth' needs a value"],
  ["name=", "'name' needs a value"],
  ["type=", "'type' needs a value"],
  ["depth=-1", "depth takes a whole number"],
  ["depth=1.5", "depth takes a whole number"],
  ["depth=one", "depth takes a whole number"],
  ["depth<=x", "depth takes a whole number"],
  ["name<=x", "only depth supports '<='"],
  ["type<=meta", "only depth supports '<='"],
];

describe("parseFilter: invalid expressions are usage errors (exit 2)", () => {
  for (const [expr, says] of bad) {
    test(JSON.stringify(expr), () => {
      let err: unknown;
      try {
        parseFilter(expr);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GrexError);
      const g = err as GrexError;
      expect(g.kind).toBe("usage");
      expect(g.exitCode).toBe(2);
      expect(g.message).toContain(says);
      expect(g.message).toContain("--filter");
      expect(g.message).not.toContain("\n");
    });
  }
});

describe("globMatch", () => {
  test("anchored on both ends; regex metacharacters are literal", () => {
    expect(globMatch("a", "a")).toBe(true);
    expect(globMatch("a", "ab")).toBe(false);
    expect(globMatch("a", "ba")).toBe(false);
    expect(globMatch("a+b", "a+b")).toBe(true);
    expect(globMatch("a+b", "aab")).toBe(false);
    expect(globMatch("(x)|y", "(x)|y")).toBe(true);
    expect(globMatch("(x)|y", "y")).toBe(false);
    expect(globMatch("$^", "$^")).toBe(true);
    expect(globMatch("a\\b", "a\\b")).toBe(true);
  });

  test("* and ? never cross '/', ** does", () => {
    expect(globMatch("a*", "a/b")).toBe(false);
    expect(globMatch("a?b", "a/b")).toBe(false);
    expect(globMatch("a**", "a/b/c")).toBe(true);
    expect(globMatch("a/**/c", "a/b/x/c")).toBe(true);
    expect(globMatch("*", "")).toBe(true);
    expect(globMatch("?", "")).toBe(false);
  });
});
