// What a new linked worktree takes from the worktree it is made from
// (src/core/git/worktree/worktree-inherit.ts), as `git worktree add` copies
// it: config.worktree without core.bare and core.worktree (comments and the
// rest of the text as they were), and the sparse-checkout patterns of a
// sparse checkout; nothing from a worktree that has neither.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inheritWorktreeState } from "../../src/core/git/worktree/worktree-inherit.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-inherit-");
afterAll(() => tmp.cleanup());

test("config.worktree is copied without core.bare and core.worktree; the patterns of a sparse checkout too", () => {
  const dir = join(tmp.path, "sparse");
  makeRepo(dir, { "a/x": "1\n", "b/y": "2\n" });
  git(dir, "sparse-checkout", "set", "a");
  const gitdir = join(dir, ".git");
  const own = readFileSync(join(gitdir, "config.worktree"), "utf8");
  writeFileSync(join(gitdir, "config.worktree"), `# mine\n${own}[core]\n\tworktree = /elsewhere\n\tbare = true\n[user]\n\tname = Someone ; kept\n`);
  const admin = join(tmp.path, "admin1");
  mkdirSync(admin);
  inheritWorktreeState(gitdir, admin);
  expect(readFileSync(join(admin, "config.worktree"), "utf8")).toBe(`# mine\n${own}[core]\n[user]\n\tname = Someone ; kept\n`);
  expect(readFileSync(join(admin, "info", "sparse-checkout"), "utf8")).toBe(readFileSync(join(gitdir, "info", "sparse-checkout"), "utf8"));
});

test("a plain worktree hands nothing on", () => {
  const dir = join(tmp.path, "plain");
  makeRepo(dir, { "a/x": "1\n" });
  const admin = join(tmp.path, "admin2");
  mkdirSync(admin);
  inheritWorktreeState(join(dir, ".git"), admin);
  expect(existsSync(join(admin, "config.worktree"))).toBe(false);
  expect(existsSync(join(admin, "info"))).toBe(false);
});
