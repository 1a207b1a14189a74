// In-process linked worktrees against `git worktree add/list/remove/prune`:
// the files under .git/worktrees/<name>/, the `.git` file, `git status
// --porcelain` in both work trees, `git worktree list --porcelain`, a commit
// made by git in the linked worktree seen by grex, `git fsck`.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commit, git, makeRepo } from "../helpers/git-fixtures.ts";
import { TmpDirs } from "../helpers/tmp.ts";
import { addWorktree, checkedOutAt, listWorktrees, pruneWorktrees, removeWorktree } from "../../src/core/git/worktree/linked-worktrees.ts";
import { dotGitOf } from "../../src/core/git/layout/layout.ts";
import { holdWriterThread } from "../../src/core/git/worktree/file-writer.ts";
import { readHeadSync } from "../../src/core/git/refs/refs.ts";
import { isDirtyFast } from "../../src/core/git/worktree/worktree.ts";
import { branchNameProblem } from "../../src/core/base/branch-name.ts";

const tmp = new TmpDirs();
afterAll(() => tmp.cleanup());

/** Two identical repositories (same commits, same ids) in a fresh directory. */
function twin(): { root: string; a: string; b: string } {
  const root = realpathSync(tmp.make("grex-wt-"));
  const files = { "README.md": "hello\n", "src/main.ts": "export {};\n", "bin/run.sh": "#!/bin/sh\necho hi\n" };
  const a = join(root, "a", "repo");
  const b = join(root, "b", "repo");
  makeRepo(a, files);
  makeRepo(b, files);
  for (const r of [a, b]) {
    chmodSync(join(r, "bin/run.sh"), 0o755);
    git(r, "update-index", "--chmod=+x", "bin/run.sh");
    git(r, "commit", "-q", "-m", "executable");
  }
  return { root, a, b };
}

const adminFiles = (repo: string, name: string) => readdirSync(join(repo, ".git", "worktrees", name)).filter((f) => f !== "ORIG_HEAD").sort();
const porcelainList = (repo: string, root: string, side: string) =>
  git(repo, "worktree", "list", "--porcelain").split("\n\n").map((block) => block.replaceAll(join(root, side), "<root>")).sort();

describe("linked worktrees, grex vs git", () => {
  // Alone, and as a task workspace makes many (the writer thread held: the registration's files are created there too).
  for (const held of [false, true]) {
    test(`add on a new branch${held ? ", the writer thread held" : ""}: the same files in .git/worktrees/<name>/ (and modes), the same .git file, status and list`, async () => {
      const { root, a, b } = twin();
      const start = git(a, "rev-parse", "HEAD");
      git(a, "worktree", "add", "-q", "-b", "topic", join(root, "a", "task"), start);
      const release = held ? holdWriterThread() : null;
      let added: Awaited<ReturnType<typeof addWorktree>>;
      try {
        added = await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "task"), branch: "topic", start });
      } finally {
        release?.();
      }
      expect(added).toMatchObject({ name: "task", createdBranch: true, head: start });
      expect(adminFiles(b, "task")).toEqual(adminFiles(a, "task"));
      const modes = (repo: string, side: string) => [...adminFiles(repo, "task").map((f) => join(repo, ".git/worktrees/task", f)), join(root, side, "task", ".git"), join(repo, ".git/worktrees/task/logs/HEAD")].map((f) => statSync(f).mode.toString(8));
      expect(modes(b, "b")).toEqual(modes(a, "a"));
      for (const f of ["HEAD", "commondir"]) {
        expect(readFileSync(join(b, ".git/worktrees/task", f), "utf8")).toBe(readFileSync(join(a, ".git/worktrees/task", f), "utf8"));
      }
      expect(readFileSync(join(b, ".git/worktrees/task/gitdir"), "utf8")).toBe(`${join(root, "b", "task", ".git")}\n`);
      expect(readFileSync(join(root, "b", "task", ".git"), "utf8")).toBe(`gitdir: ${join(b, ".git", "worktrees", "task")}\n`);
      expect(readFileSync(join(root, "a", "task", ".git"), "utf8")).toBe(`gitdir: ${join(a, ".git", "worktrees", "task")}\n`);
      expect(git(join(root, "b", "task"), "status", "--porcelain")).toBe("");
      expect(git(b, "status", "--porcelain")).toBe("");
      expect(git(join(root, "b", "task"), "ls-files", "-s")).toBe(git(join(root, "a", "task"), "ls-files", "-s"));
      // The index's cache-tree (read from the source's own index, hashed again): git's write-tree takes it as it is.
      expect(git(join(root, "b", "task"), "write-tree")).toBe(git(b, "rev-parse", "HEAD^{tree}"));
      expect(git(join(root, "b", "task"), "rev-parse", "--abbrev-ref", "HEAD")).toBe("topic");
      expect(porcelainList(b, root, "b")).toEqual(porcelainList(a, root, "a"));
      expect(git(join(root, "b", "task"), "reflog", "-1", "--format=%H")).toBe(start);
      git(b, "fsck", "--strict");
      // grex's own reads through the linked worktree.
      expect(readHeadSync(join(root, "b", "task"))).toEqual({ sha: start, branch: "topic" });
      expect(await isDirtyFast(join(root, "b", "task"), dotGitOf(join(root, "b", "task")) as string)).toBe(false);
      const listed = listWorktrees(join(b, ".git")).map((w) => [w.path, w.branch, w.name]);
      expect(listed).toEqual([
        [b, "main", null],
        [join(root, "b", "task"), "topic", "task"],
      ]);
    });
  }

  test("the index holds each written file's own stat data: git diff-files, which compares it without refreshing, finds nothing", async () => {
    const { root, b } = twin();
    const start = git(b, "rev-parse", "HEAD");
    const wt = join(root, "b", "stat");
    await addWorktree({ repoGitdir: join(b, ".git"), path: wt, branch: "stat", start });
    // Before anything refreshes the index (git status would rewrite it).
    expect(git(wt, "diff-files")).toBe("");
    const index = readFileSync(join(b, ".git", "worktrees", "stat", "index"));
    expect(git(wt, "diff-files")).toBe(""); // read only: the index is as grex wrote it
    expect(readFileSync(join(b, ".git", "worktrees", "stat", "index")).equals(index)).toBe(true);
    expect(git(wt, "ls-files", "-s")).toBe(git(b, "ls-files", "-s"));
  });

  test("a taken name gets git's counter; an existing branch is checked out; one checked out elsewhere is refused", async () => {
    const { root, a, b } = twin();
    git(a, "branch", "feature");
    git(b, "branch", "feature");
    git(a, "worktree", "add", "-q", join(root, "a", "x", "wt"), "feature");
    git(a, "worktree", "add", "-q", "-b", "second", join(root, "a", "y", "wt"));
    await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "x", "wt"), branch: "feature", start: null });
    const second = await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "y", "wt"), branch: "second", start: git(b, "rev-parse", "HEAD") });
    expect(second.name).toBe("wt1");
    expect(readdirSync(join(b, ".git", "worktrees")).sort()).toEqual(readdirSync(join(a, ".git", "worktrees")).sort());
    expect(porcelainList(b, root, "b")).toEqual(porcelainList(a, root, "a"));
    // git refuses the same; so does grex, in one sentence, touching nothing.
    expect(() => git(a, "worktree", "add", join(root, "a", "z"), "feature")).toThrow(/already checked out/);
    const refused = addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "z"), branch: "feature", start: null });
    await expect(refused).rejects.toThrow(`branch 'feature' is already checked out at '${join(root, "b", "x", "wt")}'`);
    await expect(addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "z"), branch: "main", start: null })).rejects.toThrow(`checked out at '${b}'`);
    expect(existsSync(join(root, "b", "z"))).toBe(false);
    expect(readdirSync(join(b, ".git", "worktrees")).sort()).toEqual(["wt", "wt1"]);
    expect(checkedOutAt(join(b, ".git"), "second")?.path).toBe(join(root, "b", "y", "wt"));
  });

  test("a commit made by git in the linked worktree is grex's to see, and the source's branch list has it", async () => {
    const { root, b } = twin();
    const wt = join(root, "b", "task");
    await addWorktree({ repoGitdir: join(b, ".git"), path: wt, branch: "topic", start: git(b, "rev-parse", "HEAD") });
    const sha = commit(wt, { "NEW.md": "new\n" }, "work in the worktree");
    expect(readHeadSync(wt)).toEqual({ sha, branch: "topic" });
    expect(git(b, "rev-parse", "refs/heads/topic")).toBe(sha);
    expect(readHeadSync(b)?.branch).toBe("main");
    expect(await isDirtyFast(wt, dotGitOf(wt) as string)).toBe(false);
    writeFileSync(join(wt, "README.md"), "changed\n");
    expect(await isDirtyFast(wt, dotGitOf(wt) as string)).toBe(true);
    git(b, "fsck", "--strict");
  });

  test("remove refuses changes unless forced, keeps the branch; matches git worktree remove", async () => {
    const { root, a, b } = twin();
    const start = git(a, "rev-parse", "HEAD");
    git(a, "worktree", "add", "-q", "-b", "topic", join(root, "a", "task"), start);
    await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "task"), branch: "topic", start });
    for (const side of ["a", "b"]) writeFileSync(join(root, side, "task", "untracked.txt"), "x\n");
    expect(() => git(a, "worktree", "remove", join(root, "a", "task"))).toThrow(/contains modified or untracked files/);
    await expect(removeWorktree(join(root, "b", "task"))).rejects.toThrow("contains modified or untracked files");
    expect(existsSync(join(root, "b", "task", "untracked.txt"))).toBe(true);
    for (const side of ["a", "b"]) rmSync(join(root, side, "task", "untracked.txt"));
    git(a, "worktree", "remove", join(root, "a", "task"));
    await removeWorktree(join(root, "b", "task"));
    expect(existsSync(join(root, "b", "task"))).toBe(false);
    expect(existsSync(join(b, ".git", "worktrees"))).toBe(existsSync(join(a, ".git", "worktrees")));
    expect(git(b, "branch", "--list")).toBe(git(a, "branch", "--list"));
    expect(porcelainList(b, root, "b")).toEqual(porcelainList(a, root, "a"));
    // --force deletes the changes as git's does.
    await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "task2"), branch: "topic", start: null });
    writeFileSync(join(root, "b", "task2", "README.md"), "dirty\n");
    await removeWorktree(join(root, "b", "task2"), { force: true });
    expect(existsSync(join(root, "b", "task2"))).toBe(false);
    git(b, "fsck", "--strict");
  });

  test("prune removes registrations whose directory is gone, as git worktree prune; git prunes grex's too", async () => {
    const { root, a, b } = twin();
    git(a, "worktree", "add", "-q", "-b", "gone", join(root, "a", "gone"));
    git(a, "worktree", "add", "-q", "-b", "kept", join(root, "a", "kept"));
    const start = git(b, "rev-parse", "HEAD");
    await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "gone"), branch: "gone", start });
    await addWorktree({ repoGitdir: join(b, ".git"), path: join(root, "b", "kept"), branch: "kept", start });
    for (const side of ["a", "b"]) rmSync(join(root, side, "gone"), { recursive: true });
    const stale = listWorktrees(join(b, ".git")).find((w) => w.name === "gone");
    expect(stale?.prunable).toBe("gitdir file points to non-existent location");
    expect(git(b, "worktree", "list", "--porcelain")).toContain("prunable gitdir file points to non-existent location");
    expect(pruneWorktrees(join(b, ".git"), { dryRun: true }).map((p) => p.name)).toEqual(["gone"]);
    git(a, "worktree", "prune");
    expect(pruneWorktrees(join(b, ".git"))).toEqual([{ name: "gone", path: join(root, "b", "gone"), reason: "gitdir file points to non-existent location" }]);
    expect(readdirSync(join(b, ".git", "worktrees"))).toEqual(readdirSync(join(a, ".git", "worktrees")));
    expect(porcelainList(b, root, "b")).toEqual(porcelainList(a, root, "a"));
    expect(git(b, "rev-parse", "--verify", "refs/heads/gone")).toBe(start);
    // git's prune over grex's registrations: the same result.
    rmSync(join(root, "b", "kept"), { recursive: true });
    git(b, "worktree", "prune");
    expect(existsSync(join(b, ".git", "worktrees"))).toBe(false);
    git(b, "fsck", "--strict");
  });

  test("branch names: git check-ref-format --branch decides", () => {
    for (const name of ["topic", "feat/x", "a.b", "x-1", "-bad", "a..b", "a b", "a~1", "x.lock", "a/.b", "a//b", "end.", "a@{1}", "HEAD", "tab\tx", "q?", "/lead", "trail/"]) {
      const p = Bun.spawnSync(["git", "check-ref-format", "--branch", name], { stdout: "ignore", stderr: "ignore" });
      expect([name, branchNameProblem(name) === null]).toEqual([name, p.exitCode === 0]);
    }
  });
});
