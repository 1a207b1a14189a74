// Ignore rules as git applies them: every untracked path is judged by grex
// and by `git ls-files --others --exclude-standard`, over nested .gitignore
// files, .git/info/exclude and the user's global excludes file; then status
// itself against `git status --porcelain`.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { IgnoreRules } from "../../src/core/git/worktree/ignore-rules.ts";
import { agreeing, dirtyVerdicts } from "../helpers/differential.ts";
import { commit, git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let xdg: string;
const savedXdg = process.env.XDG_CONFIG_HOME;

beforeAll(() => {
  tmp = tempDir("grex-ignore-rules-");
  xdg = join(tmp.path, "xdg");
  mkdirSync(join(xdg, "git"), { recursive: true });
  writeFileSync(join(xdg, "git", "ignore"), "*.global\n.DS_Store\nglobal-dir/\n");
  process.env.XDG_CONFIG_HOME = xdg;
});
afterEach(() => {
  process.env.XDG_CONFIG_HOME = xdg;
});
afterAll(() => {
  if (savedXdg === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = savedXdg;
  tmp.cleanup();
});

/** git with the test's XDG_CONFIG_HOME, so it reads the same global excludes file as grex. */
function gitX(cwd: string, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], { cwd, env: { ...gitEnv(), XDG_CONFIG_HOME: xdg }, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

const write = (root: string, files: string[]) => {
  for (const f of files) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), "x");
  }
};

const GITIGNORE = [
  "# a comment",
  "*.log",
  "!keep.log",
  "build/",
  "/root-only",
  "doc/**/*.md",
  "**/tmp",
  "a?c",
  "[abc]x",
  "[!0-9]y",
  "[[:digit:]]z",
  "vendor/**",
  "\\#hash",
  "trail\\ ",
  "spaces   ",
  "dironly/",
  "!keep.global",
  "deep/a/**/b",
  "ignored-dir",
  "!ignored-dir/back",
  "",
].join("\n");

const UNTRACKED = [
  "x.log", "keep.log", "sub/y.log", "sub/keep.log",
  "build/out", "sub/build/out", "build-not/out",
  "root-only", "sub/root-only",
  "doc/a.md", "doc/x/y/z.md", "doc/a.txt", "other/doc/a.md",
  "tmp/file", "sub/tmp/file", "tmpx/file",
  "abc", "a/c", "abbc",
  "ax", "dx", "1y", "zy", "5z", "az",
  "vendor/lib/x.js", "vendorx",
  "#hash", "trail ", "spaces",
  "dironly", "sub/dironly/f",
  "f.global", "keep.global", ".DS_Store", "sub/.DS_Store", "global-dir/f",
  "f.info", "sub/f.info",
  "deep/a/b", "deep/a/x/y/b", "deep/a/bb",
  "ignored-dir/f", "ignored-dir/back",
  "nested/x.local", "nested/inner/x.local", "nested/inner/keep.local", "nested/anch/x", "nested/other/anch/x",
  "plain.txt", "sub/plain.txt",
];

test("each untracked path: ignored exactly when git ignores it", () => {
  const r = join(tmp.path, "paths");
  makeRepo(r, { ".gitignore": GITIGNORE, "nested/.gitignore": "*.local\n/anch/\n", "nested/inner/.gitignore": "!keep.local\n", "tracked.txt": "t\n" });
  mkdirSync(join(r, ".git", "info"), { recursive: true });
  writeFileSync(join(r, ".git", "info", "exclude"), "*.info\n");
  write(r, UNTRACKED);
  const all = gitX(r, "-c", "core.quotepath=off", "ls-files", "--others", "-z").split("\0").filter(Boolean);
  const listed = new Set(gitX(r, "-c", "core.quotepath=off", "ls-files", "--others", "--exclude-standard", "-z").split("\0").filter(Boolean));
  expect(all.length).toBeGreaterThan(UNTRACKED.length - 2);
  const rules = new IgnoreRules(r, join(r, ".git"));
  const ours = all.filter((p) => !rules.isIgnored(p, false)).sort();
  expect(ours).toEqual([...listed].sort());
});

test("core.excludesFile in the repository's config replaces the default file", () => {
  const r = join(tmp.path, "cfg");
  makeRepo(r, { "a.txt": "a\n" });
  writeFileSync(join(tmp.path, "my-excludes"), "*.mine\n");
  git(r, "config", "core.excludesFile", join(tmp.path, "my-excludes"));
  write(r, ["x.mine", "x.global"]);
  const rules = new IgnoreRules(r, join(r, ".git"));
  expect([rules.isIgnored("x.mine", false), rules.isIgnored("x.global", false)]).toEqual([true, false]);
  expect(gitX(r, "ls-files", "--others", "--exclude-standard")).toBe("x.global\n");
});

const scenarios: Record<string, (d: string) => void> = {
  "a file only the global excludes file ignores": (d) => write(d, ["notes.global"]),
  "a directory only the global excludes file ignores": (d) => write(d, ["global-dir/inner/f"]),
  "a file the global file ignores and .gitignore re-includes": (d) => write(d, ["keep.global"]),
  "a file only info/exclude ignores": (d) => {
    mkdirSync(join(d, ".git", "info"), { recursive: true });
    writeFileSync(join(d, ".git", "info", "exclude"), "*.info\n");
    write(d, ["src/x.info"]);
  },
  "a file in an ignored directory that a negation cannot re-include": (d) => write(d, ["ignored-dir/back"]),
  "an untracked file inside an uninitialised submodule's directory": (d) => write(d, ["mod/stray.txt"]),
  "an untracked file beside the submodule": (d) => write(d, ["mod-stray.txt"]),
  "no excludes file at all": (d) => {
    process.env.XDG_CONFIG_HOME = join(tmp.path, "nowhere");
    write(d, ["plain.global"]);
  },
};

test.each(Object.keys(scenarios))("status: %s", async (name) => {
  const base = join(tmp.path, "base");
  const d = join(tmp.path, `s-${Object.keys(scenarios).indexOf(name)}`);
  if (!Bun.file(join(base, ".git", "HEAD")).size) {
    makeRepo(base, { ".gitignore": GITIGNORE, "src/a.txt": "a\n" });
    const sub = join(tmp.path, "subrepo");
    makeRepo(sub, { "s.txt": "s\n" });
    git(base, "-c", "protocol.file.allow=always", "submodule", "add", "--quiet", sub, "mod");
    commit(base, {}, "submodule");
  }
  git(tmp.path, "clone", "--quiet", base, d); // the submodule is not initialised: an empty directory
  (scenarios[name] as (d: string) => void)(d);
  const env = process.env.XDG_CONFIG_HOME;
  const p = Bun.spawnSync(["git", "--no-optional-locks", "status", "--porcelain"], { cwd: d, env: { ...gitEnv(), XDG_CONFIG_HOME: env ?? "" }, stdout: "pipe" });
  const v = await dirtyVerdicts(d, `${d}.status-cache.json`);
  const porcelain = p.stdout.toString().trim();
  expect({ ...v, git: porcelain !== "", porcelain }).toEqual(agreeing({ git: porcelain !== "", porcelain }));
});
