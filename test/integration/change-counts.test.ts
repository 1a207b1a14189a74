// The staged / unstaged / untracked counts `status` shows, against git: the
// same work tree read by countChanges and by `git status --porcelain -uall`
// (renames off: grex counts paths, as git does without rename detection).
import { afterEach, beforeEach, expect, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { countChanges } from "../../src/core/git/worktree/change-counts.ts";
import { GIT_ENV, git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let dir: string;
beforeEach(() => {
  t = new TestWorkspace("grex-counts-");
  dir = t.repo("r", { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d/e.txt": "e\n", "x.sh": "echo\n", "gone.txt": "g\n", ".gitignore": "*.log\nbuild/\n" });
});
afterEach(() => t.cleanup());

/** What git says, by the porcelain's two columns. */
function gitCounts(): { staged: number; unstaged: number; untracked: number } {
  // Not the trimming helper: the first line's leading space is the X column.
  const out = Bun.spawnSync(["git", "-c", "status.renames=false", "status", "--porcelain", "-uall"], { cwd: dir, env: { ...process.env, ...GIT_ENV } }).stdout.toString();
  const counts = { staged: 0, unstaged: 0, untracked: 0 };
  for (const line of out.split("\n").filter(Boolean)) {
    const xy = line.slice(0, 2);
    if (xy === "??") counts.untracked++;
    else if (/^(DD|AU|UD|UA|DU|AA|UU)$/.test(xy)) counts.unstaged++;
    else {
      if (xy[0] !== " ") counts.staged++;
      if (xy[1] !== " ") counts.unstaged++;
    }
  }
  return counts;
}

const ours = () => countChanges(dir, join(dir, ".git"));

test("a clean tree is 0/0/0, like git", async () => {
  expect(await ours()).toEqual({ staged: 0, unstaged: 0, untracked: 0 });
  expect(gitCounts()).toEqual({ staged: 0, unstaged: 0, untracked: 0 });
});

test("every kind of change at once: counts equal git's", async () => {
  writeFileSync(join(dir, "a.txt"), "a changed\n"); // unstaged
  writeFileSync(join(dir, "b.txt"), "b staged\n");
  git(dir, "add", "b.txt"); // staged
  writeFileSync(join(dir, "b.txt"), "b staged, then changed\n"); // and unstaged (MM)
  writeFileSync(join(dir, "new.txt"), "n\n");
  git(dir, "add", "new.txt"); // staged addition
  rmSync(join(dir, "c.txt")); // unstaged deletion
  git(dir, "rm", "-q", "gone.txt"); // staged deletion
  chmodSync(join(dir, "x.sh"), 0o755); // mode change
  writeFileSync(join(dir, "later.txt"), "l\n");
  git(dir, "add", "-N", "later.txt"); // intent to add
  writeFileSync(join(dir, "u1.txt"), "u\n"); // untracked
  mkdirSync(join(dir, "newdir", "deep"), { recursive: true });
  writeFileSync(join(dir, "newdir", "one.txt"), "1\n");
  writeFileSync(join(dir, "newdir", "deep", "two.txt"), "2\n");
  writeFileSync(join(dir, "debug.log"), "ignored\n");
  mkdirSync(join(dir, "build"));
  writeFileSync(join(dir, "build", "out.o"), "ignored\n");
  mkdirSync(join(dir, "d", "sub"));
  writeFileSync(join(dir, "d", "sub", "also.log"), "ignored, in a dir of nothing else\n");
  const want = gitCounts();
  expect(want).toEqual({ staged: 3, unstaged: 5, untracked: 3 });
  expect(await ours()).toEqual(want);
});

test("an untracked repository inside counts once, as git lists it", async () => {
  const inner = join(dir, "inner");
  mkdirSync(inner);
  git(inner, "init", "-q");
  writeFileSync(join(inner, "f.txt"), "f\n");
  expect(await ours()).toEqual(gitCounts());
  expect((await ours())?.untracked).toBe(1);
});

test("a gitlink whose empty directory is deleted counts as unstaged, like git (` D path`)", async () => {
  git(dir, "update-index", "--add", "--cacheinfo", `160000,${git(dir, "rev-parse", "HEAD")},sha1collisiondetection`);
  git(dir, "commit", "-q", "-m", "an uninitialised submodule");
  mkdirSync(join(dir, "sha1collisiondetection"));
  expect(await ours()).toEqual(gitCounts());
  expect((await ours())?.unstaged).toBe(0);
  rmSync(join(dir, "sha1collisiondetection"), { recursive: true });
  expect(await ours()).toEqual(gitCounts());
  expect((await ours())?.unstaged).toBe(1);
});
