// `--filter <expr>` (SPEC §8): a table of expressions against a small pack tree.
import { describe, expect, test } from "bun:test";
import { GrexError } from "../../src/core/base/errors.ts";
import { type FilterablePack, globMatch, type PackFacts, parseFilter, parseFilters } from "../../src/core/base/filter.ts";

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
  // more depth comparisons
  ["depth>=1", ["dev-env/themes", "dev-env/themes/dark", "dev-env/tools"]],
  ["depth<1", ["dev-env", "tools", "notes.md"]],
  ["depth>1", ["dev-env/themes/dark"]],
  // {a,b} alternatives, also inside name=, with commas inside braces not splitting terms
  ["{tools,notes.md}", ["tools", "notes.md"]],
  ["name={tools,dark}", ["dev-env/themes/dark", "dev-env/tools", "tools"]],
  ["name={tools,dark},depth=0", ["tools"]],
  ["dev-env/{th*,to*}", ["dev-env/themes", "dev-env/tools"]],
  // ! negates any term
  ["!dev-env/**", ["dev-env", "tools", "notes.md"]],
  ["!type=declarative,depth=0", ["dev-env", "tools"]],
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
  ["colour=red", "use a glob, name=, type=, tag=, branch="],
  ["tga=x", "did you mean 'tag'?"],
  ["!", "'!' needs a term"],
  ["a=b", "use a glob"],
  ["depth=", "'depth' needs a value"],
  ["name=", "'name' needs a value"],
  ["type=", "'type' needs a value"],
  ["depth=-1", "depth takes a whole number"],
  ["depth=1.5", "depth takes a whole number"],
  ["depth=one", "depth takes a whole number"],
  ["depth<=x", "depth takes a whole number"],
  ["name<=x", "only depth compares with '<='"],
  ["type<=meta", "only depth compares with '<='"],
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

describe("parseFilters: union, tags, state terms, and the static check", () => {
  const TAGGED: FilterablePack[] = [
    { id: "web", path: "web", type: "meta", depth: 0, tags: ["frontend"] },
    { id: "ui", path: "ui", type: "meta", depth: 0, tags: ["frontend", "legacy"] },
    { id: "services/api", path: "services/api", type: "meta", depth: 0 },
  ];
  const facts = (f: Partial<PackFacts>): PackFacts => ({ missing: false, dirty: false, ahead: 0, behind: 0, branch: "main", tracked: "main", state: "clean", ...f });

  test("several filters are the union; tag= matches any tag (globs too); ! negates it", () => {
    const ids = (input: string | string[]) => TAGGED.filter((p) => parseFilters(input).matches(p)).map((p) => p.id);
    expect(ids(["web", "ui"])).toEqual(["web", "ui"]);
    expect(ids(["services/*", "name={web,ui}"])).toEqual(["web", "ui", "services/api"]);
    expect(ids("tag=frontend")).toEqual(["web", "ui"]);
    expect(ids("tag=leg*")).toEqual(["ui"]);
    expect(ids("tag=frontend,!tag=legacy")).toEqual(["web"]);
  });

  test("state terms read the facts; without facts they never match; topic is a branch other than the tracked one", () => {
    const sel = parseFilters(["dirty", "topic", "behind,!ahead"]);
    expect(sel.needsFacts).toBe(true);
    const web = TAGGED[0] as FilterablePack;
    expect(sel.matches(web)).toBe(false);
    expect(sel.matches(web, facts({ dirty: true }))).toBe(true);
    expect(sel.matches(web, facts({ branch: "feature" }))).toBe(true);
    expect(sel.matches(web, facts({ branch: null }))).toBe(false); // detached is not a topic branch
    expect(sel.matches(web, facts({ behind: 2 }))).toBe(true);
    expect(sel.matches(web, facts({ behind: 2, ahead: 1 }))).toBe(false);
    expect(parseFilters("diverged").matches(web, facts({ behind: 2, ahead: 1 }))).toBe(true);
    expect(parseFilters("drift").matches(web, facts({ state: "behind" }))).toBe(true);
    expect(parseFilters("!drift").matches(web, facts({ state: "clean" }))).toBe(true);
    expect(parseFilters("missing").matches(web, facts({ missing: true, state: "missing" }))).toBe(true);
    expect(parseFilters("branch=feat*").matches(web, facts({ branch: "feature" }))).toBe(true);
    expect(parseFilters("tag=frontend,dirty").mayMatch(TAGGED[2] as FilterablePack)).toBe(false);
  });

  const checkError = (input: string | string[]) => {
    try {
      parseFilters(input).check(TAGGED);
    } catch (e) {
      return (e as GrexError).message;
    }
    return null;
  };
  test("a static term no registered pack matches is exit 2 with the closest; negated ones too; state terms never", () => {
    expect(checkError("tag=frontnd")).toBe("No registered pack has tag 'frontnd' (--filter term 'tag=frontnd'). Did you mean 'frontend'?");
    expect(checkError(["web", "!tag=nope"])).toBe("No registered pack has tag 'nope' (--filter term '!tag=nope'). Tags in use: frontend, legacy.");
    expect(checkError("wbe")).toBe("No registered pack matches 'wbe' (--filter term 'wbe'). Did you mean 'web'?");
    expect(checkError("drity")).toBe("No registered pack matches 'drity' (--filter term 'drity'). Did you mean the state 'dirty'?");
    expect(checkError("type=scripted")).toBe("No registered pack is of type 'scripted' (--filter term 'type=scripted').");
    expect(checkError("depth=2")).toBe("No registered pack is at depth=2 (--filter term 'depth=2'). The deepest is at depth 0.");
    expect(checkError("dirty,behind,branch=x")).toBeNull();
    expect(checkError("services/*,tag=frontend")).toBeNull(); // each term matches some pack; together they match none: an empty selection
  });
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

test("docs/cli.md documents every term of FILTER_TERMS (the grammar is written down once, from the same list)", async () => {
  const { FILTER_TERMS } = await import("../../src/core/base/filter.ts");
  const doc = await Bun.file(new URL("../../docs/cli.md", import.meta.url)).text();
  for (const t of FILTER_TERMS) expect(doc).toContain(`| \`${t.term}\` |`);
});
