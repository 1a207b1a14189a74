// Attribute matching against `git check-attr --all` on the same files: patterns
// with and without slashes, `**`, classes, escapes, quoted patterns, nested
// files, macros, unset and unspecified states, and the precedence of the
// global, tree and info files.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Attributes, parseAttributes, wildmatchRegex } from "../../src/core/git/worktree/attributes.ts";
import { Conversion } from "../../src/core/git/worktree/convert.ts";
import { crlfAction, hasCrlfText, toGit, toWorktree } from "../../src/core/git/worktree/eol.ts";
import { gitEnv, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir("grex-attr-unit-");
});
afterAll(() => tmp.cleanup());

const FILES: Record<string, string> = {
  ".gitattributes": [
    "[attr]mine text -diff myval=x",
    "* top",
    "*.c lang=c",
    "*.[ch] cfam",
    "*.[!a-c]x notabc",
    "?.q single",
    "a/**/z.txt deep",
    "**/logs/*.log logfile",
    "/rooted.txt rooted",
    "mid/dle.txt middle",
    "dir/ dirslash",
    "docs/** indocs",
    "x\\*y.txt escaped",
    '"sp ace.txt" quoted',
    "*.bin binary",
    "*.m mine",
    "*.m -myval",
    "*.u text",
    "*.u !text",
    "!*.neg neg",
    "*.bad bad name!",
    "*.v val=one",
    "*.v val=two",
    "*.mm mine -text",
    "*.unb -binary",
    "[[:digit:]]*.n digitstart",
    "",
  ].join("\n"),
  "sub/.gitattributes": "[attr]ignoredmacro text\n*.c lang=subc\n/x.txt subroot\nnest/*.txt subnest\n*.im ignoredmacro\n",
  "sub/deeper/.gitattributes": "*.c -lang\n* !top\n",
};

const PATHS = [
  "a.c", "b.h", "c.x", "d.x", "ax", "zx.zx", "q.q", "qq.q", "a/z.txt", "a/b/c/z.txt", "b/a/z.txt", "logs/x.log", "p/q/logs/y.log",
  "rooted.txt", "sub/rooted.txt", "mid/dle.txt", "x/mid/dle.txt", "dir", "dir/f", "docs/x", "docs/a/b/c", "x*y.txt", "xzy.txt",
  "sp ace.txt", "f.bin", "f.m", "f.u", "f.neg", "f.bad", "f.v", "f.mm", "f.unb", "1abc.n", "abc.n", "sub/a.c", "sub/x.txt",
  "sub/nest/a.txt", "sub/nest/deep/a.txt", "sub/deeper/a.c", "sub/deeper/y", "sub/f.im",
];

function gitCheckAttr(repo: string, paths: string[]): Map<string, Map<string, string>> {
  const p = Bun.spawnSync(["git", "check-attr", "--all", "-z", "--stdin"], { cwd: repo, env: gitEnv(), stdin: Buffer.from(paths.join("\0")), stdout: "pipe", stderr: "pipe" });
  const parts = p.stdout.toString().split("\0");
  const out = new Map<string, Map<string, string>>(paths.map((x) => [x, new Map()]));
  for (let i = 0; i + 2 < parts.length; i += 3) out.get(parts[i] as string)?.set(parts[i + 1] as string, parts[i + 2] as string);
  return out;
}

const shown = (v: true | false | string | null): string | null => (v === true ? "set" : v === false ? "unset" : v);

test("attributes match git check-attr for every kind of pattern and state", () => {
  const repo = join(tmp.path, "r");
  mkdirSync(repo);
  Bun.spawnSync(["git", "init", "-q", repo], { env: gitEnv() });
  for (const [rel, body] of Object.entries(FILES)) {
    mkdirSync(join(repo, rel, ".."), { recursive: true });
    writeFileSync(join(repo, rel), body);
  }
  mkdirSync(join(repo, ".git", "info"), { recursive: true });
  writeFileSync(join(repo, ".git", "info", "attributes"), "*.v val=info\nf.c info\n");
  const want = gitCheckAttr(repo, PATHS);
  const conv = Conversion.forWorktree(repo, join(repo, ".git"), gitEnv());
  let compared = 0;
  for (const p of PATHS) {
    const got = new Map<string, string>();
    for (const [k, v] of conv.attributesOf(p)) {
      const s = shown(v);
      if (s !== null) got.set(k, s);
    }
    expect({ path: p, attrs: Object.fromEntries([...got].sort()) }).toEqual({ path: p, attrs: Object.fromEntries([...(want.get(p) ?? new Map())].sort()) });
    compared += got.size;
  }
  expect(compared).toBeGreaterThan(60);
});

test("wildmatch: ** only across whole directory names, classes never match a slash", () => {
  expect(wildmatchRegex("a/**/b", true).test("a/b")).toBe(true);
  expect(wildmatchRegex("a/**/b", true).test("a/x/y/b")).toBe(true);
  expect(wildmatchRegex("a/**b", true).test("a/x/b")).toBe(false);
  expect(wildmatchRegex("a/[!x]", true).test("a//")).toBe(false);
  expect(wildmatchRegex("a/*", true).test("a/b/c")).toBe(false);
  expect(wildmatchRegex("**/b", true).test("b")).toBe(true);
});

test("macros: only in the top-level file; a later line or attribute wins", () => {
  const top = parseAttributes("[attr]m text eol=crlf\n*.a m\n*.a -text\n", true);
  expect(top.macros.has("m")).toBe(true);
  expect(parseAttributes("[attr]m text\n", false).macros.size).toBe(0);
  const a = new Attributes({ outer: [], info: null, treeFile: (d) => (d === "" ? "[attr]m text eol=crlf\n*.a m\n*.a -text\n" : null) });
  const got = a.get("x/y.a");
  expect(got.get("text")).toBe(false);
  expect(got.get("eol")).toBe("crlf");
});

test("eol conversion: git's rules for text, auto and binary content", () => {
  const s = { autocrlf: "false" as const, eol: "crlf" as const };
  const b = (x: string) => Buffer.from(x);
  const str = (x: Uint8Array) => Buffer.from(x).toString("latin1");
  expect(str(toWorktree(b("a\nb\n"), "text", s))).toBe("a\r\nb\r\n");
  expect(str(toWorktree(b("a\r\nb\n"), "text", s))).toBe("a\r\nb\r\n");
  expect(str(toWorktree(b("a\r\nb\n"), "auto", s))).toBe("a\r\nb\n"); // auto leaves a file with CRLF alone
  expect(str(toWorktree(b("a\0\nb\n"), "auto", s))).toBe("a\0\nb\n"); // binary
  expect(str(toWorktree(b("a\nb\n"), "binary", s))).toBe("a\nb\n");
  expect(str(toGit(b("a\r\nb\r\n"), "text-input", () => false))).toBe("a\nb\n");
  expect(str(toGit(b("a\rb\r\n"), "text", () => false))).toBe("a\rb\n");
  expect(str(toGit(b("a\r\nb\r\n"), "auto", () => true))).toBe("a\r\nb\r\n"); // CRLF in the index: kept
  expect(hasCrlfText(b("x\r\n"))).toBe(true);
  expect(crlfAction(new Map([["eol", "lf"]]), { autocrlf: "true", eol: "native" })).toBe("text-input");
  expect(crlfAction(new Map(), { autocrlf: "input", eol: "native" })).toBe("auto-input");
  expect(crlfAction(new Map([["text", false]]), { autocrlf: "true", eol: "native" })).toBe("binary");
});

test("smudgeSync writes what smudge writes, and leaves a long-running filter's files to smudge", async () => {
  const repo = join(tmp.path, "smudge");
  mkdirSync(repo);
  Bun.spawnSync(["git", "init", "-q", repo], { env: gitEnv() });
  const env = {
    ...gitEnv(),
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: "filter.up.smudge",
    GIT_CONFIG_VALUE_0: "tr a-z A-Z",
    GIT_CONFIG_KEY_1: "filter.proc.process",
    GIT_CONFIG_VALUE_1: "false",
  };
  const attrs = new Map([[".gitattributes", "*.txt text eol=crlf\n*.up filter=up\n*.p filter=proc\n*.bin binary\n"]]);
  const conv = Conversion.forTree(repo, join(repo, ".git"), attrs, env);
  const str = (x: Uint8Array | null) => (x === null ? null : Buffer.from(x).toString("latin1"));
  try {
    const cases: Array<[string, string, string]> = [
      ["a.txt", "a\nb\n", "a\r\nb\r\n"],
      ["x.up", "hello\n", "HELLO\n"],
      ["f.bin", "a\nb\n", "a\nb\n"],
      ["plain", "a\nb\n", "a\nb\n"],
    ];
    for (const [path, stored, written] of cases) {
      expect({ path, got: str(conv.smudgeSync(path, Buffer.from(stored))) }).toEqual({ path, got: written });
      expect({ path, got: str(await conv.smudge(path, Buffer.from(stored))) }).toEqual({ path, got: written });
    }
    // A filter.<driver>.process file: only the awaited smudge talks to the process.
    expect(conv.smudgeSync("y.p", Buffer.from("z\n"))).toBeNull();
  } finally {
    conv.close();
  }
});
