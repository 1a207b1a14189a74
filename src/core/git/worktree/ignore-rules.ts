// git's ignore rules for status: which untracked paths git would not list.
// Sources by priority, highest first: the `.gitignore` of each directory from
// the path's own up to the root, then `.git/info/exclude`, then the user's
// `core.excludesFile` (by default `$XDG_CONFIG_HOME/git/ignore`, else
// `~/.config/git/ignore`). Within a source the last matching line wins; the
// first source with a match decides. A path inside an ignored directory is
// ignored whatever the rules say about it (git does not look inside).
// (The workspace's own `.gitignore` blocks are a different matter:
// core/workspace/gitignore.ts edits them.)
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { expandConfigPath, LayeredConfig, xdgConfigPath } from "../refs/config.ts";
import { infoExcludePath } from "../layout/layout.ts";

export interface Rule {
  pattern: string;
  negate: boolean;
  dirOnly: boolean;
  /** Has a slash before its end: matched against the path from its file's directory, not the basename. */
  anchored: boolean;
}

/** One line of an ignore file, or null for blanks and comments. */
export function parseRule(line: string): Rule | null {
  let l = line.endsWith("\r") ? line.slice(0, -1) : line;
  if (l === "" || l.startsWith("#")) return null;
  // Trailing spaces go unless escaped with a backslash.
  let end = l.length;
  while (end > 0 && l[end - 1] === " " && !(end > 1 && l[end - 2] === "\\")) end--;
  l = l.slice(0, end);
  let negate = false;
  if (l.startsWith("!")) {
    negate = true;
    l = l.slice(1);
  }
  if (l === "") return null;
  let dirOnly = false;
  if (l.endsWith("/")) {
    dirOnly = true;
    l = l.slice(0, -1);
  }
  const anchored = l.includes("/");
  if (l.startsWith("/")) l = l.slice(1);
  return l === "" ? null : { pattern: l, negate, dirOnly, anchored };
}

/** git's wildmatch with WM_PATHNAME: `*` and `?` stop at slashes, `**` between slashes spans directories. */
export function wildmatch(p: string, t: string): boolean {
  return matchAt(p, 0, t, 0);
}

function matchAt(p: string, pi: number, t: string, ti: number): boolean {
  while (pi < p.length) {
    const c = p[pi] as string;
    if (c === "*") {
      let q = pi;
      while (p[q] === "*") q++;
      if (q - pi >= 2 && (pi === 0 || p[pi - 1] === "/") && (q === p.length || p[q] === "/")) {
        if (q === p.length) return true; // trailing "/**": everything inside
        // "**/": zero or more whole directories.
        if (matchAt(p, q + 1, t, ti)) return true;
        for (let k = ti; k < t.length; k++) if (t[k] === "/" && matchAt(p, q + 1, t, k + 1)) return true;
        return false;
      }
      if (q === p.length) return t.indexOf("/", ti) < 0;
      for (let k = ti; k <= t.length; k++) {
        if (matchAt(p, q, t, k)) return true;
        if (t[k] === "/") break;
      }
      return false;
    }
    if (ti >= t.length) return false;
    const ch = t[ti] as string;
    if (c === "?") {
      if (ch === "/") return false;
    } else if (c === "[") {
      const r = matchBracket(p, pi, ch);
      if (r === null) {
        if (ch !== "[") return false; // an unclosed bracket is a literal
      } else {
        if (!r.ok || ch === "/") return false;
        pi = r.next;
        ti++;
        continue;
      }
    } else if (c === "\\" && pi + 1 < p.length) {
      pi++;
      if (p[pi] !== ch) return false;
    } else if (c !== ch) return false;
    pi++;
    ti++;
  }
  return ti === t.length;
}

const CLASSES: Record<string, RegExp> = {
  alnum: /[A-Za-z0-9]/,
  alpha: /[A-Za-z]/,
  blank: /[ \t]/,
  cntrl: /[\x00-\x1f\x7f]/,
  digit: /[0-9]/,
  graph: /[!-~]/,
  lower: /[a-z]/,
  print: /[ -~]/,
  punct: /[!-/:-@[-`{-~]/,
  space: /[ \t\n\r\f\v]/,
  upper: /[A-Z]/,
  xdigit: /[0-9A-Fa-f]/,
};

/** A `[...]` expression at p[pi] against `ch`: whether it matches and where the pattern goes on; null when unclosed. */
function matchBracket(p: string, pi: number, ch: string): { ok: boolean; next: number } | null {
  let i = pi + 1;
  let negate = false;
  if (p[i] === "!" || p[i] === "^") {
    negate = true;
    i++;
  }
  let ok = false;
  let first = true;
  while (i < p.length && (first || p[i] !== "]")) {
    first = false;
    if (p[i] === "[" && p[i + 1] === ":") {
      const close = p.indexOf(":]", i + 2);
      if (close < 0) return null;
      const cls = CLASSES[p.slice(i + 2, close)];
      if (cls?.test(ch)) ok = true;
      i = close + 2;
      continue;
    }
    let lo = p[i] as string;
    if (lo === "\\" && i + 1 < p.length) lo = p[++i] as string;
    i++;
    if (p[i] === "-" && i + 1 < p.length && p[i + 1] !== "]") {
      let hi = p[i + 1] as string;
      i += 2;
      if (hi === "\\" && i < p.length) hi = p[i++] as string;
      if (ch >= lo && ch <= hi) ok = true;
    } else if (ch === lo) ok = true;
  }
  if (i >= p.length) return null;
  return { ok: ok !== negate, next: i + 1 };
}

/** The verdict of one list of rules for `rel` (relative to the list's directory): true ignored, false re-included, undefined no match. */
export function verdict(rules: Rule[], rel: string, isDir: boolean): boolean | undefined {
  const base = rel.slice(rel.lastIndexOf("/") + 1);
  for (let i = rules.length - 1; i >= 0; i--) {
    const r = rules[i] as Rule;
    if (r.dirOnly && !isDir) continue;
    if (r.anchored ? wildmatch(r.pattern, rel) : wildmatch(r.pattern, base)) return !r.negate;
  }
  return undefined;
}

export function readRules(path: string): Rule[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const out: Rule[] = [];
  for (const line of text.split("\n")) {
    const r = parseRule(line);
    if (r) out.push(r);
  }
  return out;
}

/**
 * The user's global excludes file: `core.excludesFile` as git's layered
 * config gives it (the config manager's one list of files), else the XDG
 * default; null when there is none (no HOME to find it in).
 */
export function excludesFilePath(gitdir: string, workTree: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const v = LayeredConfig.load(gitdir, env).get("core", null, "excludesfile");
  if (v === null) return xdgConfigPath("ignore", env);
  const expanded = expandConfigPath(v, env);
  if (expanded === null) return null;
  return isAbsolute(expanded) ? expanded : join(workTree, expanded);
}

export class IgnoreRules {
  private readonly perDir = new Map<string, Rule[]>();
  private readonly dirVerdicts = new Map<string, boolean>();
  private readonly info: Rule[];
  private readonly global: Rule[];

  constructor(
    private readonly workTree: string,
    gitdir: string,
  ) {
    this.info = readRules(infoExcludePath(gitdir));
    const excludes = excludesFilePath(gitdir, workTree);
    this.global = excludes === null ? [] : readRules(excludes);
  }

  private rulesIn(dir: string): Rule[] {
    let r = this.perDir.get(dir);
    if (!r) {
      r = readRules(join(this.workTree, dir, ".gitignore"));
      this.perDir.set(dir, r);
    }
    return r;
  }

  /** The rules' verdict on `rel` itself (its directories not considered). */
  private matches(rel: string, isDir: boolean): boolean {
    for (let d = rel.lastIndexOf("/"); ; d = rel.lastIndexOf("/", d - 1)) {
      const dir = d < 0 ? "" : rel.slice(0, d);
      const v = verdict(this.rulesIn(dir), d < 0 ? rel : rel.slice(d + 1), isDir);
      if (v !== undefined) return v;
      if (d < 0) break;
    }
    return verdict(this.info, rel, isDir) ?? verdict(this.global, rel, isDir) ?? false;
  }

  /** Would git leave `rel` (relative to the work tree, no trailing slash) out of `git status`? */
  isIgnored(rel: string, isDir: boolean): boolean {
    for (let d = rel.indexOf("/"); d >= 0; d = rel.indexOf("/", d + 1)) {
      const dir = rel.slice(0, d);
      let v = this.dirVerdicts.get(dir);
      if (v === undefined) {
        v = this.matches(dir, true);
        this.dirVerdicts.set(dir, v);
      }
      if (v) return true;
    }
    return this.matches(rel, isDir);
  }
}
