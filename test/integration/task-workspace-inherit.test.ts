// What a task workspace's pack takes from the source pack's worktree, compared
// with git on the same repositories:
//  - submodules: each submodule of a linked worktree is cloned from the same
//    submodule of the source's clone (objects hard-linked, no fetch from its
//    URL), laid out where git puts a linked worktree's submodules
//    (`.git/worktrees/<name>/modules/<name>`), equal to what `git worktree add`
//    + `git submodule update --init --recursive` make;
//  - a sparse checkout: its patterns and per-worktree config, as `git worktree
//    add` run in the source copies them, and the same files left out.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { workTreeFiles } from "../helpers/git-fixtures.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let env: Record<string, string | undefined>;
let upstreams: { sup: string; lib: string; inner: string };

/** super → lib → inner, each submodule named by a relative URL. */
function family(): { sup: string; lib: string; inner: string } {
  const inner = t.repo("inner", { "inner.txt": "inner\n" });
  const lib = t.repo("lib", { "lib.txt": "lib\n" });
  git(lib, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../inner", "deps/inner");
  git(lib, "commit", "-q", "-m", "inner");
  const sup = t.repo("super", { "README.md": "super\n" });
  git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "vendor/lib");
  git(sup, "commit", "-q", "-m", "lib");
  return { sup, lib, inner };
}

beforeAll(async () => {
  t = new TestWorkspace("grex-task-sub-");
  upstreams = family();
  // The user's opt-in to local submodule URLs (git's protocol.file.allow=always).
  const allow = join(t.root, "allow-file.gitconfig");
  writeFileSync(allow, '[protocol "file"]\n\tallow = always\n');
  env = { ...t.env, GIT_CONFIG_GLOBAL: allow };
  expect((await t.grexAt(t.ws, ["init"], env)).code).toBe(0);
  const added = await t.grexAt(t.ws, ["add", upstreams.sup, "--recurse-submodules"], env);
  expect(added.stderr).toBe("");
  expect(added.code).toBe(0);
});
afterAll(() => t.cleanup());


const status = (dir: string) => git(dir, "submodule", "status", "--recursive");

test("a task workspace's submodules come from the source's, with their upstreams gone, as git lays out a linked worktree's", async () => {
  const source = join(t.ws, "super");
  const before = status(source);
  // Nothing is fetched from the submodules' URLs: they no longer exist.
  const gone = join(t.root, "gone");
  mkdirSync(gone);
  renameSync(upstreams.lib, join(gone, "lib"));
  renameSync(upstreams.inner, join(gone, "inner"));
  const task = join(t.root, "task");
  mkdirSync(task);
  let r;
  try {
    r = await t.grexAt(task, ["init", "--from", t.ws, "--branch", "topic", "--json"], env);
  } finally {
    renameSync(join(gone, "lib"), upstreams.lib);
    renameSync(join(gone, "inner"), upstreams.inner);
  }
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const pack = join(task, "super");

  // What git makes of the same repositories: a linked worktree, then its submodules.
  const byGit = join(t.root, "by-git");
  git(source, "worktree", "add", "-q", "-b", "by-git", byGit);
  git(byGit, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive");

  expect(workTreeFiles(pack)).toEqual(workTreeFiles(byGit));
  const strip = (s: string) => s.replace(/ \(.*\)$/gm, "");
  expect(strip(status(pack))).toBe(strip(before));
  expect(strip(status(pack))).toBe(strip(status(byGit)));
  expect(git(pack, "status", "--porcelain")).toBe("");
  // Where git keeps a linked worktree's submodules, each a repository of its own.
  const admin = git(pack, "rev-parse", "--absolute-git-dir");
  expect(readFileSync(join(pack, "vendor/lib/.git"), "utf8").trim()).toMatch(/modules\/vendor\/lib$/);
  expect(git(join(pack, "vendor/lib"), "rev-parse", "--absolute-git-dir")).toBe(join(admin, "modules/vendor/lib"));
  expect(git(join(pack, "vendor/lib/deps/inner"), "rev-parse", "--absolute-git-dir")).toBe(join(admin, "modules/vendor/lib/modules/deps/inner"));
  for (const sub of ["vendor/lib", "vendor/lib/deps/inner"]) {
    const dir = join(pack, sub);
    git(dir, "fsck", "--strict");
    // origin is the submodule's own URL (what a later sync fetches from), its branches as the source's clone has them.
    expect(git(dir, "remote", "get-url", "origin")).toBe(git(join(source, sub), "remote", "get-url", "origin"));
    expect(git(dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes")).toBe(git(join(source, sub), "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes"));
    expect(git(dir, "symbolic-ref", "refs/remotes/origin/HEAD")).toBe("refs/remotes/origin/main");
    // Objects hard-linked from the source's submodule: nothing stored twice.
    const objects = resolve(dir, git(dir, "rev-parse", "--git-path", "objects"));
    const stored = readdirSync(objects, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && !e.name.endsWith(".keep"));
    expect(stored.length).toBeGreaterThan(0);
    for (const e of stored) expect(statSync(join(e.parentPath, e.name)).nlink).toBeGreaterThan(1);
  }
  // The source is as it was.
  expect(status(source)).toBe(before);
  expect(git(source, "status", "--porcelain")).toBe("");
});

test("a later sync of the task workspace moves its submodules with new upstream commits, fetched from their URLs", async () => {
  const next = t.commit(upstreams.lib, { "lib.txt": "lib 2\n" }, "lib 2");
  git(upstreams.sup, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--remote", "vendor/lib");
  git(upstreams.sup, "commit", "-q", "-am", "lib 2");
  const pack = join(t.root, "task", "super");
  git(pack, "pull", "-q", "--ff-only", "origin", "main");
  const r = await t.grexAt(join(t.root, "task"), ["sync"], env);
  expect(r.code).toBe(0);
  expect(git(join(pack, "vendor/lib"), "rev-parse", "HEAD")).toBe(next);
  expect(readFileSync(join(pack, "vendor/lib/lib.txt"), "utf8")).toBe("lib 2\n");
  git(join(pack, "vendor/lib"), "fsck", "--strict");
});

test("a sparse source pack gives a sparse task workspace, as git worktree add run in the source does", async () => {
  const up = t.repo("sparse", { "a/one.txt": "1\n", "a/deep/two.txt": "2\n", "b/three.txt": "3\n", "top.txt": "top\n" });
  expect((await t.grexAt(t.ws, ["add", up], env)).code).toBe(0);
  const source = join(t.ws, "sparse");
  git(source, "sparse-checkout", "set", "a");
  const task = join(t.root, "task-sparse");
  mkdirSync(task);
  const r = await t.grexAt(task, ["init", "--from", t.ws, "--branch", "sparse-topic", "--filter", "sparse", "--json"], env);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const pack = join(task, "sparse");
  const byGit = join(t.root, "by-git-sparse");
  git(source, "worktree", "add", "-q", "-b", "by-git-sparse", byGit);

  const adminOf = (dir: string) => git(dir, "rev-parse", "--absolute-git-dir");
  for (const f of ["config.worktree", "info/sparse-checkout"]) expect(readFileSync(join(adminOf(pack), f), "utf8")).toBe(readFileSync(join(adminOf(byGit), f), "utf8"));
  expect(workTreeFiles(pack)).toEqual(workTreeFiles(byGit));
  expect(workTreeFiles(pack)).not.toContain("b/three.txt 3\n");
  // The index marks what is left out skip-worktree (`S`), as git's does.
  expect(git(pack, "ls-files", "-t")).toBe(git(byGit, "ls-files", "-t"));
  expect(git(pack, "status", "--porcelain")).toBe("");
  expect(git(pack, "sparse-checkout", "list")).toBe("a");
  git(pack, "fsck");
  // grex sees it as git does: clean, the files left out not missing.
  const st = await t.grexAt(task, ["status", "--json"], env);
  expect(st.code).toBe(0);
  const packs = st.json.packs as Array<{ id: string; dirty: boolean }>;
  expect(packs.find((p) => p.id === "sparse")?.dirty).toBe(false);
});
