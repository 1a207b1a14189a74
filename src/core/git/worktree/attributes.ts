// gitattributes(5), as git matches them: which attributes a path has, from
// (lowest precedence first) the system file, `core.attributesFile`, the
// `.gitattributes` files from the top of the tree down to the path's own
// directory, and `<gitdir>/info/attributes`. Within a file a later line wins;
// within a line a later attribute wins. A pattern without a slash matches the
// file name at any depth below its file's directory; one with a slash matches
// the path relative to that directory (`*` stops at `/`, `**/`, `/**/` and
// `/**` cross directories). Patterns ending in `/` name directories and so
// never match a file; `!pattern` lines are ignored, as git ignores them.
// Macros (`[attr]name …`, built in: `binary` = `-diff -merge -text`) are
// defined only in the top-level `.gitattributes`, the info and global files;
// setting one applies its attributes where it is set.

/** `true` set, `false` unset (`-a`), a string (`a=v`), `null` unspecified (`!a`, or never named). */
export type AttrState = true | false | string | null;
type Assignment = [name: string, state: AttrState];

interface Rule {
  /** `rel`: the path relative to the directory of the rule's file. */
  match: (rel: string) => boolean;
  attrs: Assignment[];
}

export interface AttrFile {
  rules: Rule[];
  macros: Map<string, Assignment[]>;
}

const BLANK = /[ \t\r\n]/;
const NAME = /^[._0-9a-zA-Z][-._0-9a-zA-Z]*$/;

/** git's C-style quoted pattern (`"a b"`, `"\t"`, octal escapes). */
function unquoteC(s: string): { text: string; rest: string } | null {
  let out = "";
  const bytes: number[] = [];
  const flush = () => {
    if (bytes.length > 0) out += Buffer.from(bytes.splice(0)).toString("utf8");
  };
  for (let i = 1; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '"') {
      flush();
      return { text: out, rest: s.slice(i + 1) };
    }
    if (c !== "\\") {
      flush();
      out += c;
      continue;
    }
    const n = s[++i];
    if (n === undefined) return null;
    if (/[0-3]/.test(n) && /^[0-7]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(s.slice(i, i + 3), 8));
      i += 2;
      continue;
    }
    flush();
    const map: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"' };
    const m = map[n];
    if (m === undefined) return null;
    out += m;
  }
  return null;
}

function parseAssignments(tokens: string[]): Assignment[] | null {
  const out: Assignment[] = [];
  for (const t of tokens) {
    let name = t;
    let state: AttrState = true;
    if (t.startsWith("-")) {
      name = t.slice(1);
      state = false;
    } else if (t.startsWith("!")) {
      name = t.slice(1);
      state = null;
    } else {
      const eq = t.indexOf("=");
      if (eq >= 0) {
        name = t.slice(0, eq);
        state = t.slice(eq + 1);
      }
    }
    // An invalid or reserved name drops the whole line, as in git.
    if (!NAME.test(name) || name.startsWith("builtin_")) return null;
    out.push([name, state]);
  }
  return out;
}

/** A character class body starting after `[`; returns the regex class and where it ended, or null if unterminated. */
function charClass(p: string, start: number): { re: string; end: number } | null {
  let i = start;
  let negate = false;
  if (p[i] === "!" || p[i] === "^") {
    negate = true;
    i++;
  }
  let body = "";
  let first = true;
  for (; i < p.length; i++) {
    const c = p[i] as string;
    if (c === "]" && !first) return { re: `[${negate ? "^" : ""}${body}${negate ? "/" : ""}]`, end: i };
    first = false;
    if (c === "[" && p[i + 1] === ":") {
      const close = p.indexOf(":]", i + 2);
      if (close < 0) return null;
      const cls = p.slice(i + 2, close);
      const named: Record<string, string> = {
        alnum: "a-zA-Z0-9", alpha: "a-zA-Z", blank: " \\t", cntrl: "\\x00-\\x1f\\x7f", digit: "0-9", graph: "\\x21-\\x7e",
        lower: "a-z", print: "\\x20-\\x7e", punct: "!-\\/:-@\\[-`{-~", space: " \\t\\n\\r\\f\\v", upper: "A-Z", xdigit: "0-9a-fA-F",
      };
      const r = named[cls];
      if (r === undefined) return null;
      body += r;
      i = close + 1;
      continue;
    }
    if (c === "\\" && i + 1 < p.length) {
      body += escapeClass(p[++i] as string);
      continue;
    }
    body += c === "-" && body !== "" && p[i + 1] !== "]" ? "-" : escapeClass(c);
  }
  return null;
}

const escapeClass = (c: string) => (/[\\\]\[^-]/.test(c) ? `\\${c}` : c);
const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** git's wildmatch as a regular expression; `pathname`: `*` and `?` stop at `/` (WM_PATHNAME). */
export function wildmatchRegex(p: string, pathname: boolean): RegExp {
  let re = "";
  const oneChar = pathname ? "[^/]" : ".";
  for (let i = 0; i < p.length; i++) {
    const c = p[i] as string;
    if (c === "*") {
      let j = i;
      while (p[j + 1] === "*") j++;
      const double = j > i;
      const atStart = i === 0 || p[i - 1] === "/";
      const atEnd = j + 1 === p.length || p[j + 1] === "/";
      if (pathname && double && atStart && atEnd) {
        if (j + 1 === p.length) re += ".*"; // `dir/**`: everything inside
        else {
          re += "(?:.*/)?"; // `**/`: zero or more directories
          j++; // the slash is part of it
        }
      } else re += `${oneChar}*`;
      i = j;
    } else if (c === "?") re += oneChar;
    else if (c === "[") {
      const cls = charClass(p, i + 1);
      if (cls === null) re += "\\[";
      else {
        re += pathname ? `(?!/)${cls.re}` : cls.re;
        i = cls.end;
      }
    } else if (c === "\\" && i + 1 < p.length) re += escapeRe(p[++i] as string);
    else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, "s");
}

function matcherFor(pattern: string): Rule["match"] | null {
  if (pattern.endsWith("/")) return null; // a directory pattern never matches a file
  const slash = pattern.indexOf("/");
  if (slash < 0) {
    const re = wildmatchRegex(pattern, false);
    return (rel) => re.test(rel.slice(rel.lastIndexOf("/") + 1));
  }
  const re = wildmatchRegex(pattern.startsWith("/") ? pattern.slice(1) : pattern, true);
  return (rel) => re.test(rel);
}

/** One attributes file; `macroOk` for the top-level, info and global files. */
export function parseAttributes(text: string, macroOk: boolean): AttrFile {
  const file: AttrFile = { rules: [], macros: new Map() };
  for (const raw of text.split("\n")) {
    if (raw.length >= 2048) continue; // git ignores lines this long (a guard against hostile files)
    let line = raw.replace(/^[ \t\r\n]+/, "");
    if (line === "" || line.startsWith("#")) continue;
    let pattern: string;
    if (line.startsWith('"')) {
      const q = unquoteC(line);
      if (q === null) continue;
      pattern = q.text;
      line = q.rest;
    } else {
      const end = line.search(BLANK);
      pattern = end < 0 ? line : line.slice(0, end);
      line = end < 0 ? "" : line.slice(end);
    }
    const tokens = line.split(/[ \t\r\n]+/).filter((t) => t !== "");
    const attrs = parseAssignments(tokens);
    if (attrs === null) continue;
    if (pattern.startsWith("[attr]")) {
      const name = pattern.slice(6);
      if (macroOk && NAME.test(name)) file.macros.set(name, attrs);
      continue;
    }
    if (pattern.startsWith("!")) continue; // negative patterns are ignored in attributes
    const match = matcherFor(pattern);
    if (match) file.rules.push({ match, attrs });
  }
  return file;
}

const BUILTIN = parseAttributes("[attr]binary -diff -merge -text\n", true);

export interface AttributeSources {
  /** System, then global (`core.attributesFile`) texts, lowest precedence first. */
  outer: string[];
  /** `<gitdir>/info/attributes`, or null. */
  info: string | null;
  /** The `.gitattributes` of a tree directory ("" is the top), or null when it has none. */
  treeFile: (dir: string) => string | null;
}

export class Attributes {
  private readonly outer: AttrFile[];
  private readonly info: AttrFile | null;
  private readonly dirs = new Map<string, AttrFile | null>();
  private readonly chains = new Map<string, Array<[AttrFile, number]>>();
  private macros: Map<string, Assignment[]> | null = null;

  constructor(private readonly src: AttributeSources) {
    this.outer = src.outer.map((t) => parseAttributes(t, true));
    this.outer = this.outer.filter((f) => f.rules.length > 0 || f.macros.size > 0);
    this.info = src.info === null ? null : parseAttributes(src.info, true);
  }

  private dirFile(dir: string): AttrFile | null {
    let f = this.dirs.get(dir);
    if (f === undefined) {
      const text = this.src.treeFile(dir);
      f = text === null ? null : parseAttributes(text, dir === "");
      this.dirs.set(dir, f);
    }
    return f;
  }

  private allMacros(): Map<string, Assignment[]> {
    if (this.macros) return this.macros;
    const m = new Map(BUILTIN.macros);
    for (const f of [...this.outer, this.dirFile(""), this.info]) if (f) for (const [k, v] of f.macros) m.set(k, v);
    this.macros = m;
    return m;
  }

  /** Nothing outside the tree (system, global, info) names an attribute. */
  get outerEmpty(): boolean {
    return this.outer.length === 0 && this.info === null;
  }

  /** The attribute files that apply inside `dir`, top first, with the length of their base ("" → 0, "a/b" → 4). */
  private chain(dir: string): Array<[AttrFile, number]> {
    let c = this.chains.get(dir);
    if (c === undefined) {
      const slash = dir.lastIndexOf("/");
      const up = dir === "" ? [] : this.chain(slash < 0 ? "" : dir.slice(0, slash));
      const own = this.dirFile(dir);
      c = own && own.rules.length > 0 ? [...up, [own, dir === "" ? 0 : dir.length + 1]] : up;
      this.chains.set(dir, c);
    }
    return c;
  }

  /** Every attribute the path has (unspecified ones absent or null). */
  get(path: string): Map<string, AttrState> {
    const out = new Map<string, AttrState>();
    const slash = path.lastIndexOf("/");
    const chain = this.chain(slash < 0 ? "" : path.slice(0, slash));
    if (chain.length === 0 && this.outer.length === 0 && this.info === null) return out; // the usual repository: nothing to match
    const macros = this.allMacros();
    const assign = (attrs: Assignment[], depth: number) => {
      for (const [name, state] of attrs) {
        out.set(name, state);
        const m = macros.get(name);
        if (m && state === true && depth < 8) assign(m, depth + 1);
      }
    };
    const apply = (f: AttrFile, rel: string) => {
      for (const r of f.rules) if (r.match(rel)) assign(r.attrs, 0);
    };
    for (const f of this.outer) apply(f, path);
    for (const [f, base] of chain) apply(f, base === 0 ? path : path.slice(base));
    if (this.info) apply(this.info, path);
    return out;
  }
}
