// `--filter <expr>`: the one grammar every verb that selects packs reads, on
// the CLI and over MCP. FILTER_TERMS below is its single source: docs/cli.md
// documents it, and the MCP `filter` description and the CLI's flag line are
// built from it.
//
//   expr      = term *("," term)       every term must match (AND)
//   several   = expr, expr, …          repeated --filter / an MCP array: union (OR)
//   term      = ["!"] atom             "!" negates
//   atom      = <glob> | key "=" <value> | "depth" op <n> | <state>
//
// Static terms describe what is registered (id/path, name, type, depth, tag):
// one that matches no registered pack is a usage error with a suggestion.
// State terms describe the work tree now (dirty, ahead, …, branch=): one that
// matches nothing is just an empty selection.
import { closest } from "./closest.ts";
import { usageError } from "./errors.ts";

export interface FilterablePack {
  id: string;
  path: string;
  type: string;
  depth: number;
  /** Tags (a child carries its top-level pack's); absent = none. */
  tags?: readonly string[];
}

/** What the state terms read: a pack's work tree as `status` sees it. */
export interface PackFacts {
  missing: boolean;
  dirty: boolean;
  ahead: number;
  behind: number;
  /** The checked-out branch, or null when detached (or missing). */
  branch: string | null;
  /** The branch sync tracks for it (the lockfile's), or null when pinned to a commit. */
  tracked: string | null;
  /** Its state word (`clean`, `dirty`, `behind`, …; `status`'s drift). */
  state: string;
}

/** The grammar's terms, one line each: the single source of the docs' table, the MCP description and the CLI help. */
export const FILTER_TERMS: ReadonlyArray<{ term: string; kind: "static" | "state"; meaning: string }> = [
  { term: "<glob>", kind: "static", meaning: "id or workspace path; * and ? within one segment, ** across '/', {a,b} alternatives" },
  { term: "name=<glob>", kind: "static", meaning: "last path segment" },
  { term: "type=<type>", kind: "static", meaning: "meta, declarative or scripted" },
  { term: "tag=<glob>", kind: "static", meaning: "one of its tags (a child has its top-level pack's)" },
  { term: "depth=<n>, depth<=<n>, depth>=<n>, depth<<n>, depth><n>", kind: "static", meaning: "top-level packs are depth 0" },
  { term: "branch=<glob>", kind: "state", meaning: "the branch checked out now" },
  { term: "dirty", kind: "state", meaning: "uncommitted or untracked files" },
  { term: "ahead", kind: "state", meaning: "local commits origin lacks" },
  { term: "behind", kind: "state", meaning: "origin commits it lacks (as of the last fetch)" },
  { term: "diverged", kind: "state", meaning: "both ahead and behind" },
  { term: "topic", kind: "state", meaning: "on a local branch other than the one it tracks" },
  { term: "missing", kind: "state", meaning: "registered but not on disk" },
  { term: "drift", kind: "state", meaning: "any state but clean (as status reports it)" },
];

const STATE_WORDS = ["dirty", "ahead", "behind", "diverged", "topic", "missing", "drift"] as const;
type StateWord = (typeof STATE_WORDS)[number];

/** The MCP `filter` description and the CLI's flag text, built from FILTER_TERMS. */
export function filterDescription(): string {
  const terms = FILTER_TERMS.map((t) => `${t.term} (${t.meaning})`).join("; ");
  return `Which packs: comma-separated terms that must all match; several filters (an array, or --filter repeated) select every pack any of them matches. Each term may start with ! to negate it. Terms: ${terms}. A registered-pack term (glob, name, type, tag, depth) that matches no pack is an error with a suggestion; a state term (branch, dirty, ahead, behind, diverged, topic, missing, drift) that matches none selects nothing. Example: 'tag=frontend,dirty' or ['services/*', 'name={web,ui}']. Default: every pack.`;
}

const globCache = new Map<string, (s: string) => boolean>();

/** The regex source of a glob: `*` and `?` within one segment, `**` across, `{a,b}` alternatives (nestable); anything else literal. */
function globSource(pattern: string): string {
  let re = "";
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "*") {
      if (pattern[i + 1] === "*") {
        re += ".*";
        i++;
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else if (c === "{" && closingBrace(pattern, i) !== -1) {
      re += "(?:";
      depth++;
    } else if (c === "}" && depth > 0) {
      re += ")";
      depth--;
    } else if (c === "," && depth > 0) re += "|";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return re;
}

/** Index of the `}` closing the `{` at `open`, or -1 (an unclosed brace is literal). */
function closingBrace(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === "{") depth++;
    else if (s[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

/** Glob match: `*` and `?` stay within one path segment, `**` crosses segments, `{a,b}` is either. */
export function globMatch(pattern: string, text: string): boolean {
  let fn = globCache.get(pattern);
  if (!fn) {
    const compiled = new RegExp(`^${globSource(pattern)}$`);
    fn = (s) => compiled.test(s);
    globCache.set(pattern, fn);
  }
  return fn(text);
}

/** Split on commas outside `{…}`: `name={web,ui},dirty` is two terms. */
function splitTerms(expr: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (c === "{" && closingBrace(expr, i) !== -1) depth++;
    else if (c === "}" && depth > 0) depth--;
    else if (c === "," && depth === 0) {
      out.push(expr.slice(start, i));
      start = i + 1;
    }
  }
  out.push(expr.slice(start));
  return out;
}

interface StaticTerm {
  kind: "static";
  text: string;
  neg: boolean;
  test(p: FilterablePack): boolean;
  /** What is missing and a suggestion (" Did you mean …?"), when no registered pack matches the (un-negated) term. */
  none(packs: readonly FilterablePack[]): { what: string; hint: string };
}
interface StateTerm {
  kind: "state";
  text: string;
  neg: boolean;
  test(f: PackFacts): boolean;
}
type Term = StaticTerm | StateTerm;

const lastSegment = (id: string) => id.slice(id.lastIndexOf("/") + 1);
const hasGlob = (s: string) => /[*?{]/.test(s);
const didYouMean = (want: string, known: Iterable<string>) => {
  const hint = hasGlob(want) ? undefined : closest(want, [...new Set(known)]);
  return hint && hint !== want ? ` Did you mean '${hint}'?` : "";
};

const STATE_TESTS: Record<StateWord, (f: PackFacts) => boolean> = {
  dirty: (f) => f.dirty,
  ahead: (f) => f.ahead > 0,
  behind: (f) => f.behind > 0,
  diverged: (f) => f.ahead > 0 && f.behind > 0,
  // A local branch other than the tracked one (the `topic` state, where status reports it).
  topic: (f) => f.state === "topic" || (f.branch !== null && f.tracked !== null && f.branch !== f.tracked),
  missing: (f) => f.missing,
  drift: (f) => f.state !== "clean" && f.state !== "topic",
};

const TERM_HELP = "use a glob, name=, type=, tag=, branch=, depth=/depth<=/depth>=, or one of dirty, ahead, behind, diverged, topic, missing, drift (each may start with !)";

function parseTerm(raw: string, expr: string): Term {
  let text = raw.trim();
  if (text === "") throw usageError(`Invalid --filter '${expr}': empty term; separate terms with single commas.`, { field: "filter" });
  const neg = text.startsWith("!");
  if (neg) text = text.slice(1).trim();
  if (text === "") throw usageError(`Invalid --filter term '${raw.trim()}': '!' needs a term after it.`, { field: "filter" });
  const word = text.toLowerCase();
  if ((STATE_WORDS as readonly string[]).includes(word)) return { kind: "state", text, neg, test: STATE_TESTS[word as StateWord] };
  const m = /^(name|type|tag|branch|depth)\s*(<=|>=|=|<|>)\s*(.*)$/.exec(text);
  if (!m) {
    if (/[=<>]/.test(text)) {
      const key = /^[^=<>]*/.exec(text)?.[0]?.trim() ?? "";
      const hint = closest(key, ["name", "type", "tag", "branch", "depth"]);
      throw usageError(`Invalid --filter term '${text}': ${hint ? `did you mean '${hint}'? ` : ""}${TERM_HELP}.`, { field: "filter" });
    }
    const hint = closest(word, [...STATE_WORDS]);
    return {
      kind: "static",
      text,
      neg,
      test: (p) => globMatch(text, p.id) || globMatch(text, p.path),
      none: (packs) => {
        const known = packs.flatMap((p) => [p.id, lastSegment(p.id)]);
        const pack = didYouMean(text, known);
        return { what: `No registered pack matches '${text}'`, hint: pack || (hint ? ` Did you mean the state '${hint}'?` : "") };
      },
    };
  }
  const [, key, op, value = ""] = m as unknown as [string, string, string, string];
  if (value === "") throw usageError(`Invalid --filter term '${text}': '${key}' needs a value.`, { field: "filter" });
  if (key !== "depth" && op !== "=") throw usageError(`Invalid --filter term '${text}': only depth compares with '${op}'; ${key} takes '='.`, { field: "filter" });
  switch (key) {
    case "depth": {
      if (!/^\d+$/.test(value)) throw usageError(`Invalid --filter term '${text}': depth takes a whole number.`, { field: "filter" });
      const n = Number(value);
      const cmp: Record<string, (d: number) => boolean> = { "=": (d) => d === n, "<=": (d) => d <= n, ">=": (d) => d >= n, "<": (d) => d < n, ">": (d) => d > n };
      const f = cmp[op] as (d: number) => boolean;
      return {
        kind: "static",
        text,
        neg,
        test: (p) => f(p.depth),
        none: (packs) => ({ what: `No registered pack is at ${text}`, hint: ` The deepest is at depth ${Math.max(0, ...packs.map((p) => p.depth))}.` }),
      };
    }
    case "name":
      return {
        kind: "static",
        text,
        neg,
        test: (p) => globMatch(value, lastSegment(p.id)),
        none: (packs) => ({ what: `No registered pack is named '${value}'`, hint: didYouMean(value, packs.map((p) => lastSegment(p.id))) }),
      };
    case "type":
      return {
        kind: "static",
        text,
        neg,
        test: (p) => p.type === value,
        none: (packs) => ({ what: `No registered pack is of type '${value}'`, hint: didYouMean(value, ["meta", "declarative", "scripted", ...packs.map((p) => p.type)]) }),
      };
    case "tag":
      return {
        kind: "static",
        text,
        neg,
        test: (p) => p.tags !== undefined && p.tags.some((t) => globMatch(value, t)),
        none: (packs) => {
          const tags = packs.flatMap((p) => p.tags ?? []);
          const inUse = tags.length > 0 ? ` Tags in use: ${[...new Set(tags)].sort().join(", ")}.` : " No pack has tags yet; grex update <id> --tag <tag> gives one.";
          return { what: `No registered pack has tag '${value}'`, hint: didYouMean(value, tags) || inUse };
        },
      };
    default:
      return { kind: "state", text, neg, test: (f) => f.branch !== null && globMatch(value, f.branch) };
  }
}

/** A parsed selection: the union of filters, each the AND of its terms. */
export interface Selection {
  /** No filter given: every pack. */
  readonly all: boolean;
  /** Some term reads the work tree: facts are needed for packs whose static terms pass. */
  readonly needsFacts: boolean;
  /** The state terms' text, for the note when they select nothing. */
  readonly stateTerms: readonly string[];
  /** Could the pack be selected, judging by static terms only (any filter)? */
  mayMatch(p: FilterablePack): boolean;
  /** Is the pack selected? `facts` is needed when `needsFacts` (else state terms count as not matching). */
  matches(p: FilterablePack, facts?: PackFacts): boolean;
  /** Usage error (exit 2) for a static term no registered pack matches, with a suggestion. */
  check(registered: readonly FilterablePack[]): void;
}

/** Parse `--filter` (one expression, repeated ones, or an MCP array). Empty input is every pack. */
export function parseFilters(input: string | readonly string[] | undefined): Selection {
  const exprs = (input === undefined ? [] : typeof input === "string" ? [input] : input).filter((e) => e.trim() !== "");
  const filters: Term[][] = exprs.map((expr) => splitTerms(expr).map((t) => parseTerm(t, expr)));
  const stateTerms = filters.flatMap((f) => f.filter((t) => t.kind === "state").map((t) => `${t.neg ? "!" : ""}${t.text}`));
  const all = filters.length === 0;
  const staticOk = (terms: Term[], p: FilterablePack) => terms.every((t) => t.kind !== "static" || t.test(p) !== t.neg);
  return {
    all,
    needsFacts: stateTerms.length > 0,
    stateTerms,
    mayMatch: (p) => all || filters.some((terms) => staticOk(terms, p)),
    matches: (p, facts) =>
      all ||
      filters.some((terms) => staticOk(terms, p) && terms.every((t) => t.kind !== "state" || (facts !== undefined && t.test(facts) !== t.neg))),
    check(registered) {
      for (const terms of filters) {
        for (const t of terms) {
          if (t.kind === "static" && !registered.some((p) => t.test(p))) {
            const { what, hint } = t.none(registered);
            throw usageError(`${what} (--filter term '${t.neg ? "!" : ""}${t.text}').${hint}`, { field: "filter" });
          }
        }
      }
    },
  };
}

/** A predicate for static-only filters (tests, callers without state): state terms never match. */
export function parseFilter(expr: string | readonly string[] | undefined): (pack: FilterablePack) => boolean {
  const sel = parseFilters(expr);
  return (p) => sel.matches(p);
}
