// Submodules on request, compared with `git clone --recurse-submodules` on the
// same repositories, and hostile submodules refused before anything is cloned.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { movedSubmodulesOf } from "../../src/core/git/worktree/submodule-status.ts";
import { resolveSubmoduleUrl, submoduleUrl, updateSubmodules, validSubmoduleName, validSubmodulePath } from "../../src/core/git/submodules.ts";
import { git, tempDir, workTreeFiles } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
/** The user's opt-in to local submodule URLs (git's protocol.file.allow=always), in a global config of its own. */
function allowFile(dir: string): Record<string, string | undefined> {
  const file = join(dir, "allow-file.gitconfig");
  writeFileSync(file, '[protocol "file"]\n\tallow = always\n');
  return { ...process.env, GIT_CONFIG_GLOBAL: file };
}
let tmp: { path: string; cleanup: () => void };
beforeEach(() => {
  tmp = tempDir("grex-submodules-");
});
afterEach(() => tmp.cleanup());

function repo(dir: string, files: Record<string, string>): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "initial");
  return dir;
}

/** super → lib (relative URL) → inner (relative URL), as a family of repositories next to each other. */
function family(root: string) {
  const inner = repo(join(root, "inner"), { "inner.txt": "inner\n" });
  const lib = repo(join(root, "lib"), { "lib.txt": "lib\n" });
  git(lib, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../inner", "deps/inner");
  git(lib, "commit", "-q", "-m", "inner");
  const sup = repo(join(root, "super"), { "README": "super\n" });
  git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "vendor/lib");
  git(sup, "commit", "-q", "-m", "lib");
  return { inner, lib, sup };
}


test("submodules are cloned at the recorded commits, recursively, as git clone --recurse-submodules does", async () => {
  const { sup, lib } = family(tmp.path);
  const byGit = join(tmp.path, "by-git");
  git(tmp.path, "-c", "protocol.file.allow=always", "clone", "-q", "--recurse-submodules", sup, byGit);
  const byGrex = join(tmp.path, "by-grex");
  await backendFor(sup).clone(sup, byGrex, { ref: null, signal: never() });
  const env = allowFile(tmp.path);
  const done = await updateSubmodules(byGrex, sup, never(), env);
  expect(done.map((d) => [d.path, d.result])).toEqual([
    ["vendor/lib", "cloned"],
    ["vendor/lib/deps/inner", "cloned"],
  ]);
  expect(workTreeFiles(byGrex)).toEqual(workTreeFiles(byGit));
  expect(git(byGrex, "status", "--porcelain")).toBe("");
  expect(git(join(byGrex, "vendor", "lib"), "status", "--porcelain")).toBe("");
  // git sees them initialised at the recorded commits (no '-' or '+' in front).
  // (The name in parentheses is git describe's: git's clone also made a local branch there.)
  const shaAndPath = (dir: string) => git(dir, "submodule", "status", "--recursive").replace(/ \(.*\)$/gm, "");
  expect(shaAndPath(byGrex)).toBe(shaAndPath(byGit));
  expect(await backendFor(byGrex).isDirty(byGrex)).toBe(false);

  // Upstream moves the submodule: an update and a second pass bring it along.
  writeFileSync(join(lib, "lib.txt"), "lib 2\n");
  git(lib, "commit", "-q", "-am", "lib 2");
  git(join(sup, "vendor", "lib"), "pull", "-q", "--ff-only");
  git(sup, "commit", "-q", "-am", "lib moved");
  await backendFor(sup).update(byGrex, sup, { ref: null, signal: never() });
  const again = await updateSubmodules(byGrex, sup, never(), env);
  expect(again.map((d) => [d.path, d.result])).toEqual([
    ["vendor/lib", "updated"],
    ["vendor/lib/deps/inner", "unchanged"],
  ]);
  expect(readFileSync(join(byGrex, "vendor", "lib", "lib.txt"), "utf8")).toBe("lib 2\n");
  expect(git(byGrex, "status", "--porcelain")).toBe("");

  // Work inside a submodule: modified content for git status, dirty for grex, and local work a deletion would lose.
  writeFileSync(join(byGrex, "vendor", "lib", "deps", "inner", "inner.txt"), "edited\n");
  expect(git(byGrex, "status", "--porcelain=v2")).toMatch(/^1 \.M S\.M\. .* vendor\/lib$/); // a submodule with tracked changes
  expect(await backendFor(byGrex).isDirty(byGrex)).toBe(true);
  const { localWork } = await import("../../src/core/git/local-work.ts");
  expect(await localWork(byGrex)).toEqual(["submodule vendor/lib: submodule deps/inner: uncommitted or untracked files: inner.txt"]);
  git(join(byGrex, "vendor", "lib", "deps", "inner"), "checkout", "-q", "--", "inner.txt");
  expect(await backendFor(byGrex).isDirty(byGrex)).toBe(false);
  expect(await localWork(byGrex)).toEqual([]);

  // A submodule moved by hand: status says dirty and which one, like git status.
  git(join(byGrex, "vendor", "lib"), "checkout", "-q", "HEAD~1");
  expect(git(byGrex, "status", "--porcelain")).toBe("M vendor/lib"); // (the helper trims the leading space)
  expect(await backendFor(byGrex).isDirty(byGrex)).toBe(true);
  const moved = movedSubmodulesOf(byGrex, join(byGrex, ".git"));
  expect(moved.map((m) => m.path)).toEqual(["vendor/lib"]);
  expect(moved[0]?.recorded).toBe(git(byGrex, "rev-parse", "HEAD:vendor/lib"));
});

/** A commit of `sup` whose tree is given as index lines (mode sha path), with a .gitmodules text. */
function hostile(sup: string, gitmodules: string, lines: string[]): void {
  const blob = (text: string) => {
    const p = Bun.spawnSync(["git", "hash-object", "-w", "--stdin"], { cwd: sup, stdin: Buffer.from(text), stdout: "pipe" });
    return p.stdout.toString().trim();
  };
  git(sup, "rm", "-q", "-r", "--cached", ".");
  const info = [`100644 ${blob(gitmodules)}\t.gitmodules`, ...lines.map((l) => l.replace("BLOB:", "").replace(/^(\d+) TEXT\((.*?)\)/, (_m, mode: string, t: string) => `${mode} ${blob(t)}`))];
  const p = Bun.spawnSync(["git", "update-index", "--index-info"], { cwd: sup, stdin: Buffer.from(`${info.join("\n")}\n`), stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  git(sup, "commit", "-q", "-m", "hostile");
}

test("hostile submodules are refused before anything is cloned", async () => {
  const { lib } = family(tmp.path);
  const libSha = git(lib, "rev-parse", "HEAD");
  const cases: Array<{ name: string; gitmodules: string; lines: string[]; error: RegExp }> = [
    { name: "name-escape", gitmodules: `[submodule "../../evil"]\n\tpath = a\n\turl = ../lib\n`, lines: [`160000 ${libSha}\ta`], error: /unsafe name/ },
    { name: "absolute-path-url", gitmodules: `[submodule "a"]\n\tpath = a\n\turl = ${lib}\n`, lines: [`160000 ${libSha}\ta`], error: /local paths and other transports are refused/ },
    { name: "file-url", gitmodules: `[submodule "a"]\n\tpath = a\n\turl = file://${lib}\n`, lines: [`160000 ${libSha}\ta`], error: /transport other than https, http or ssh/ },
    { name: "ext-url", gitmodules: `[submodule "a"]\n\tpath = a\n\turl = ext::sh -c touch% /tmp/pwned\n`, lines: [`160000 ${libSha}\ta`], error: /refused/ },
    { name: "option-url", gitmodules: `[submodule "a"]\n\tpath = a\n\turl = -upload-pack=touch /tmp/x\n`, lines: [`160000 ${libSha}\ta`], error: /looks like an option/ },
    // CVE-2024-32002: a symlink 'a' to .git and a submodule at 'A/modules/x' (one path on a case-insensitive file system).
    {
      name: "symlink-case",
      gitmodules: `[submodule "x"]\n\tpath = A/modules/x\n\turl = ../lib\n`,
      lines: ["120000 TEXT(.git)\ta", `160000 ${libSha}\tA/modules/x`],
      error: /passes through a symlink \('a'\)|below the symbolic link "a" on a case-insensitive file system/,
    },
  ];
  for (const c of cases) {
    const sup = repo(join(tmp.path, `super-${c.name}`), { README: "x\n" });
    hostile(sup, c.gitmodules, c.lines);
    const dest = join(tmp.path, `clone-${c.name}`);
    // The checkout itself may refuse the tree first (a link and a path below its case-folded name): as good a stop.
    const cloneErr = await backendFor(sup)
      .clone(sup, dest, { ref: null, signal: never() })
      .then(() => null, (e: unknown) => e);
    const err = cloneErr ?? (await updateSubmodules(dest, sup, never()).catch((e: unknown) => e));
    expect({ name: c.name, message: String((err as Error).message) }).toEqual({ name: c.name, message: expect.stringMatching(c.error) });
    // Nothing was cloned anywhere inside.
    expect(existsSync(join(dest, "a", ".git")) || existsSync(join(dest, "A", "modules", "x", ".git"))).toBe(false);
    expect(existsSync("/tmp/pwned")).toBe(false);
  }

  // A symlink planted in the work tree where the submodule's parent directory was.
  const sup = repo(join(tmp.path, "super-planted"), { README: "x\n" });
  git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "d/sub");
  git(sup, "commit", "-q", "-m", "sub");
  const dest = join(tmp.path, "clone-planted");
  await backendFor(sup).clone(sup, dest, { ref: null, signal: never() });
  const elsewhere = join(tmp.path, "elsewhere");
  mkdirSync(join(elsewhere, "sub"), { recursive: true });
  rmSync(join(dest, "d"), { recursive: true });
  symlinkSync(elsewhere, join(dest, "d"));
  const err = await updateSubmodules(dest, sup, never()).catch((e: unknown) => e);
  expect(String((err as Error).message)).toMatch(/passes through a symlink \('d'\)/);
  expect(readdirSync(join(elsewhere, "sub"))).toEqual([]);
  expect(lstatSync(join(dest, "d")).isSymbolicLink()).toBe(true);
});

test("names, paths and URLs follow git's rules", () => {
  expect(validSubmoduleName("ok/name")).toBe(true);
  expect(validSubmoduleName("a/../b")).toBe(false);
  expect(validSubmoduleName("..")).toBe(false);
  expect(validSubmoduleName("a\\..\\b")).toBe(false);
  expect(validSubmoduleName("")).toBe(false);
  expect(validSubmodulePath("a/b")).toBe(true);
  expect(validSubmodulePath("a/../b")).toBe(false);
  expect(validSubmodulePath(".git/modules/x")).toBe(false);
  expect(validSubmodulePath("a/.GIT/x")).toBe(false);
  expect(validSubmodulePath("/abs")).toBe(false);
  expect(resolveSubmoduleUrl("https://host/org/super.git", "../lib.git")).toBe("https://host/org/lib.git");
  expect(resolveSubmoduleUrl("https://host/org/super", "./lib")).toBe("https://host/org/super/lib");
  expect(resolveSubmoduleUrl("git@host:org/super.git", "../lib.git")).toBe("git@host:org/lib.git");
  expect(resolveSubmoduleUrl("/srv/git/super", "../lib")).toBe("/srv/git/lib");
  expect(submoduleUrl("https://h/o/s", "git@github.com:o/x.git")).toEqual({ url: "git@github.com:o/x.git" });
  expect(submoduleUrl("https://h/o/s", "ssh://h/x")).toEqual({ url: "ssh://h/x" });
  expect("refused" in submoduleUrl("https://h/o/s", "git://h/x")).toBe(true);
  expect("refused" in submoduleUrl("https://h/o/s", "/abs/path")).toBe(true);
  expect("refused" in submoduleUrl("https://h/o/s", "C:/x")).toBe(true);
});

test("grex add --recurse-submodules clones them and later syncs keep them; pack.yaml submodules: true asks the same", async () => {
  const { TestWorkspace } = await import("../helpers/workspace.ts");
  const t = new TestWorkspace("grex-submodules-ws-");
  try {
    const { sup, lib } = family(t.upstream);
    writeFileSync(join(t.home, ".gitconfig"), '[protocol "file"]\n\tallow = always\n'); // local submodule URLs: the user's opt-in
    expect((await t.grex("init")).code).toBe(0);
    const r = await t.grex("add", sup, "--recurse-submodules", "--no-install", "--json");
    expect(r.code).toBe(0);
    const pack = join(t.ws, "super");
    expect(readFileSync(join(pack, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe("inner\n");
    expect(git(pack, "config", "submodule.recurse")).toBe("true");
    expect(git(pack, "status", "--porcelain")).toBe("");
    writeFileSync(join(lib, "lib.txt"), "lib 3\n");
    git(lib, "commit", "-q", "-am", "lib 3");
    git(join(sup, "vendor", "lib"), "pull", "-q", "--ff-only");
    git(sup, "commit", "-q", "-am", "lib moved");
    expect((await t.grex("sync")).code).toBe(0);
    expect(readFileSync(join(pack, "vendor", "lib", "lib.txt"), "utf8")).toBe("lib 3\n");
    expect(git(pack, "status", "--porcelain")).toBe("");

    // Another pack asks through its pack.yaml.
    const other = repo(join(t.upstream, "other"), { ".grex/pack.yaml": 'schema_version: "1"\nname: other\ntype: meta\nsubmodules: true\n' });
    git(other, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "lib");
    git(other, "commit", "-q", "-m", "lib");
    expect((await t.grex("add", other, "--json")).code).toBe(0);
    expect(readFileSync(join(t.ws, "other", "lib", "lib.txt"), "utf8")).toBe("lib 3\n");
    // Moved by hand: status names it.
    git(join(t.ws, "other", "lib"), "checkout", "-q", "HEAD~1");
    const st = await t.grex("status", "--json");
    const row = (st.json.packs as Array<{ id: string; drift: string; submodules_moved: Array<{ path: string }> }>).find((p) => p.id === "other");
    expect(row?.drift).toBe("dirty");
    expect(row?.submodules_moved.map((m) => m.path)).toEqual(["lib"]);
  } finally {
    t.cleanup();
  }
});
