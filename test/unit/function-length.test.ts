// No function in src/ is longer than a reader can hold in their head: 100
// lines, from the line of its opening brace to that of its closing one. The
// file-length rule (layering.test.ts) cannot see a long function in a short
// file. The scan is a small tokenizer (strings, templates, comments and
// regex literals skipped) that finds function bodies: `function f(…) {`,
// methods `f(…) {`, and arrow bodies `=> {`.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "..", "..", "src");
const MAX_LINES = 100;

interface Token {
  text: string;
  line: number;
}

const IDENT = /[A-Za-z0-9_$]/;
const PUNCT3 = ["===", "!==", "...", "**=", "<<=", ">>=", "&&=", "||=", "??="];
const PUNCT2 = ["=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<"];
/** After these a `/` starts a regex literal, not a division. */
const BEFORE_REGEX = new Set(["(", ",", "=", ":", "[", "!", "&", "|", "?", "{", "}", ";", "+", "-", "*", "%", "<", ">", "~", "^", "=>", "==", "===", "!=", "!==", "&&", "||", "??", "return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield", "await"]);

/** Significant tokens of TypeScript source: identifiers, numbers and punctuation; strings, templates, regexes and comments become one placeholder each. */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let line = 1;
  let i = 0;
  const push = (text: string, at: number) => out.push({ text, line: at });
  // Template literals: the brace depth of each open `${`, so the `}` closing it resumes the template.
  const templates: number[] = [];
  let depth = 0;
  const scanTemplate = () => {
    // At the character after "`" or after the "}" closing a substitution.
    for (; i < src.length; i++) {
      const c = src[i];
      if (c === "\n") line++;
      if (c === "\\") {
        i++;
        continue;
      }
      if (c === "`") {
        i++;
        return;
      }
      if (c === "$" && src[i + 1] === "{") {
        i += 2;
        templates.push(depth);
        depth++;
        push("{", line);
        return;
      }
    }
  };
  while (i < src.length) {
    const c = src[i] as string;
    if (c === "\n") {
      line++;
      i++;
    } else if (c === " " || c === "\t" || c === "\r") i++;
    else if (c === "/" && src[i + 1] === "/") {
      while (i < src.length && src[i] !== "\n") i++;
    } else if (c === "/" && src[i + 1] === "*") {
      const end = src.indexOf("*/", i + 2);
      const stop = end === -1 ? src.length : end + 2;
      for (let k = i; k < stop; k++) if (src[k] === "\n") line++;
      i = stop;
    } else if (c === '"' || c === "'") {
      const at = line;
      for (i++; i < src.length && src[i] !== c; i++) if (src[i] === "\\") i++;
      i++;
      push("<str>", at);
    } else if (c === "`") {
      push("<tpl>", line);
      i++;
      scanTemplate();
    } else if (c === "/" && (out.length === 0 || BEFORE_REGEX.has((out[out.length - 1] as Token).text))) {
      const at = line;
      let inClass = false;
      for (i++; i < src.length; i++) {
        const r = src[i];
        if (r === "\\") i++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
      }
      i++;
      while (i < src.length && IDENT.test(src[i] as string)) i++;
      push("<re>", at);
    } else if (IDENT.test(c)) {
      let j = i;
      while (j < src.length && IDENT.test(src[j] as string)) j++;
      push(src.slice(i, j), line);
      i = j;
    } else {
      const three = src.slice(i, i + 3);
      const two = src.slice(i, i + 2);
      const p = PUNCT3.includes(three) ? three : PUNCT2.includes(two) ? two : c;
      i += p.length;
      if (p === "{") depth++;
      if (p === "}") {
        depth--;
        if (templates.length > 0 && templates[templates.length - 1] === depth) {
          templates.pop();
          push("}", line);
          scanTemplate();
          continue;
        }
      }
      push(p, line);
    }
  }
  return out;
}

const CONTROL = new Set(["if", "for", "while", "switch", "catch", "with", "function"]);
const OPEN: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/** Index of the token closing the bracket opened at `k` (forward), or -1. */
function closeOf(t: Token[], k: number): number {
  let d = 0;
  for (let j = k; j < t.length; j++) {
    const x = (t[j] as Token).text;
    if (x in OPEN) d++;
    else if (x === ")" || x === "]" || x === "}") {
      d--;
      if (d === 0) return j;
    }
  }
  return -1;
}

/** Index of the token opening the bracket closed at `k` (backward), or -1. */
function openOf(t: Token[], k: number): number {
  let d = 0;
  for (let j = k; j >= 0; j--) {
    const x = (t[j] as Token).text;
    if (x === ")" || x === "]" || x === "}") d++;
    else if (x in OPEN) {
      d--;
      if (d === 0) return j;
    }
  }
  return -1;
}

/** The `{` of the body after a parameter list closed at `k`: past an optional return type (`): T {`), or -1 when none follows. */
function bodyAfterParams(t: Token[], k: number): number {
  let j = k + 1;
  if (t[j]?.text === "{") return j;
  if (t[j]?.text !== ":") return -1;
  // A return type: skip brackets and generics; the body is the first `{` that cannot start a type.
  let angle = 0;
  for (j++; j < t.length; j++) {
    const x = (t[j] as Token).text;
    const prev = (t[j - 1] as Token).text;
    if (x === "<") angle++;
    else if (x === ">") angle--;
    else if (x === "(" || x === "[") j = closeOf(t, j);
    else if (x === "{") {
      if (angle > 0 || [":", "|", "&", "<", ",", "=>", "?"].includes(prev)) j = closeOf(t, j);
      else return j;
    } else if (x === ";" || x === "=" || x === "=>" || x === "}" || x === ")") return -1;
    if (j < 0) return -1;
  }
  return -1;
}

/** The name an arrow function is bound to (`const f = (…) =>`, `f: (…) =>`), or undefined. */
function arrowName(t: Token[], arrow: number): string | undefined {
  for (let j = arrow - 1, d = 0; j > 0 && arrow - j < 60; j--) {
    const x = (t[j] as Token).text;
    if (x === ")" || x === "]" || x === "}" || x === ">") d++;
    else if (x === "(" || x === "[" || x === "{" || x === "<") {
      if (--d < 0) return undefined;
    } else if (d === 0 && (x === "=" || x === ":") && IDENT.test((t[j - 1] as Token).text[0] as string)) {
      if (x === ":" && (t[j - 2]?.text === "?" || t[j + 1]?.text === undefined)) continue;
      // `(a: string) =>`'s colon is inside the params (depth > 0); a return type's follows `)`.
      if ((t[j - 1] as Token).text !== ")") return (t[j - 1] as Token).text;
    } else if (d === 0 && (x === ";" || x === ",")) return undefined;
  }
  return undefined;
}

export interface FunctionSpan {
  name: string;
  lines: number;
  line: number;
}

/** Every function body in `src` with its name (methods, functions, bound arrows; `<anonymous>` otherwise) and length in lines. */
export function functionSpans(src: string): FunctionSpan[] {
  const t = tokenize(src);
  const spans: FunctionSpan[] = [];
  const add = (name: string, open: number) => {
    const close = closeOf(t, open);
    if (close < 0) return;
    const line = (t[open] as Token).line;
    spans.push({ name, line, lines: (t[close] as Token).line - line + 1 });
  };
  for (let k = 0; k < t.length; k++) {
    const x = (t[k] as Token).text;
    if (x === "=>" && t[k + 1]?.text === "{") add(arrowName(t, k) ?? "<anonymous>", k + 1);
    else if (x === ")") {
      const open = openOf(t, k);
      const before = open > 0 ? (t[open - 1] as Token).text : "";
      // A generic method or function: `f<T>(…)`.
      const nameAt = before === ">" ? openAngle(t, open - 1) - 1 : open - 1;
      const name = nameAt >= 0 ? (t[nameAt] as Token).text : "";
      const isFunction = name === "function" || t[nameAt - 1]?.text === "function";
      if (!IDENT.test(name[0] ?? "") || (CONTROL.has(name) && !isFunction)) continue;
      const body = bodyAfterParams(t, k);
      if (body >= 0) add(name === "function" ? "<anonymous>" : name, body);
    }
  }
  return spans;
}

function openAngle(t: Token[], k: number): number {
  let d = 0;
  for (let j = k; j >= 0; j--) {
    const x = (t[j] as Token).text;
    if (x === ">") d++;
    else if (x === "<" && --d === 0) return j;
  }
  return -1;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const body = (n: number) => Array.from({ length: n }, (_, i) => `  step(${i});`).join("\n");

describe("the scan itself", () => {
  test("finds functions, methods, generic and typed ones, and bound arrows, with their lengths", () => {
    const src = [
      "export async function plain(a: string, { b }: { b: number } = { b: 1 }): Promise<{ ok: boolean }> {",
      body(3),
      "}",
      "class C {",
      "  async method<T extends object>(x: T): Promise<void> {",
      body(2),
      "  }",
      "}",
      "const arrow = async (s: string): Promise<number> => {",
      "  const re = /[{}(\"'`]/g; const t = `${s.replace(re, '}')}{`;",
      "  if (t) { return 1; }",
      "  return 2;",
      "};",
      "const obj = { key: (v: number) => {\n  return v;\n} };",
      "list.map((x) => {\n  return x;\n});",
    ].join("\n");
    const found = functionSpans(src).map((s) => `${s.name}:${s.lines}`);
    expect(found).toEqual(["plain:5", "method:4", "arrow:5", "key:3", "<anonymous>:3"]);
  });

  test("a function over the limit is seen through strings, templates, regexes and comments", () => {
    const src = `function long() {\n  const s = "}"; // }\n  /* } */ const r = /\\}/; const t = \`}\${"{"}\`;\n${body(MAX_LINES)}\n}\nfunction after() {\n}\n`;
    const spans = functionSpans(src);
    expect(spans.map((s) => s.name)).toEqual(["long", "after"]);
    expect(spans[0]?.lines).toBe(MAX_LINES + 4);
  });
});

describe("src/", () => {
  const files = sourceFiles(SRC);
  const spans = files.flatMap((f) => functionSpans(readFileSync(f, "utf8")).map((s) => ({ ...s, file: relative(SRC, f) })));

  test("the scan sees the functions", () => {
    expect(spans.length).toBeGreaterThan(1000);
    expect(spans.some((s) => s.file === "cli/run.ts" && s.name === "runCli")).toBe(true);
    expect(spans.some((s) => s.file === "mcp/http.ts" && s.name === "serveHttp")).toBe(true);
  });

  test(`no function is over ${MAX_LINES} lines (split it along its phases)`, () => {
    const long = spans.filter((s) => s.lines > MAX_LINES);
    expect(long.map((s) => `${s.file}:${s.line} ${s.name} (${s.lines} lines)`)).toEqual([]);
  });
});
