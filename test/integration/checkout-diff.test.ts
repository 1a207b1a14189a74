// Updates rewrite only what changed between HEAD and the new commit, leave the
// repository exactly as git would (git status clean), and refuse — touching
// nothing — when a changed path has local changes.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inProcess } from "../../src/core/git/in-process.ts";
import { readJournal } from "../../src/core/git/worktree/checkout-journal.ts";
import { readIndex } from "../../src/core/git/objects/index-file.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-checkout-diff-");
afterAll(() => t.cleanup());
const signal = new AbortController().signal;

function manyFiles(n: number, tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`d${i % 7}/f${i}.txt`] = `${tag} ${i}\n`;
  return out;
}

describe("checkout of an update", () => {
  test("only changed files are rewritten; adds, deletes, mode changes, file↔directory; git agrees it is clean", async () => {
    const up = t.repo("diff-a", { ...manyFiles(60, "v1"), "gone.txt": "bye\n", "dir-to-file/x.txt": "x\n", "file-to-dir": "f\n", "tool.sh": "echo\n" });
    const dir = join(t.ws, "diff-a");
    await inProcess.clone(up, dir, { ref: null, signal });
    const inodeOf = (rel: string) => statSync(join(dir, rel)).ino;
    const untouchedBefore = inodeOf("d3/f10.txt");
    expect(git(dir, "write-tree")).toBe(git(dir, "rev-parse", "HEAD^{tree}")); // the clone's cache-tree too
    writeFileSync(join(dir, "notes.local"), "mine\n"); // untracked, outside the diff

    rmSync(join(up, "gone.txt"));
    rmSync(join(up, "dir-to-file"), { recursive: true });
    writeFileSync(join(up, "dir-to-file"), "now a file\n");
    rmSync(join(up, "file-to-dir"));
    mkdirSync(join(up, "file-to-dir"));
    writeFileSync(join(up, "file-to-dir", "inner.txt"), "inner\n");
    chmodSync(join(up, "tool.sh"), 0o755);
    symlinkSync("d0/f0.txt", join(up, "link"));
    const next = t.commit(up, { "d1/f1.txt": "v2 1\n", "new/deep/added.txt": "added\n" });
    const changedBefore = inodeOf("d1/f1.txt");

    const { after } = await inProcess.update(dir, up, { ref: null, signal });
    expect(after.sha).toBe(next);
    expect(git(dir, "status", "--porcelain", "--untracked-files=all")).toBe("?? notes.local");
    expect(git(dir, "diff", "--cached", "--name-only")).toBe("");
    // The cache-tree grex wrote is right: git builds the tree from it without looking further.
    expect(git(dir, "write-tree")).toBe(git(dir, "rev-parse", "HEAD^{tree}"));
    expect(readIndex(readFileSync(join(dir, ".git", "index")))?.rootTree).toBe(git(dir, "rev-parse", "HEAD^{tree}"));
    expect(inodeOf("d3/f10.txt")).toBe(untouchedBefore); // not rewritten
    expect(inodeOf("d1/f1.txt")).not.toBe(changedBefore);
    expect(readFileSync(join(dir, "d1/f1.txt"), "utf8")).toBe("v2 1\n");
    expect(existsSync(join(dir, "gone.txt"))).toBe(false);
    expect(readFileSync(join(dir, "dir-to-file"), "utf8")).toBe("now a file\n");
    expect(readFileSync(join(dir, "file-to-dir", "inner.txt"), "utf8")).toBe("inner\n");
    expect(statSync(join(dir, "tool.sh")).mode & 0o111).not.toBe(0);
    expect(readFileSync(join(dir, "link"), "utf8")).toBe("v1 0\n");
    expect(readFileSync(join(dir, "notes.local"), "utf8")).toBe("mine\n");
    expect(readJournal(join(dir, ".git"))).toBeNull();
    expect(await inProcess.isDirty(dir)).toBe(true); // notes.local is untracked
    rmSync(join(dir, "notes.local"));
    expect(await inProcess.isDirty(dir)).toBe(false);
  });

  test("a local change to a changed file: refused, nothing touched, no journal left", async () => {
    const up = t.repo("diff-b", manyFiles(10, "v1"));
    const dir = join(t.ws, "diff-b");
    await inProcess.clone(up, dir, { ref: null, signal });
    const head = git(dir, "rev-parse", "HEAD");
    writeFileSync(join(dir, "d2/f2.txt"), "local edit\n");
    t.commit(up, { "d2/f2.txt": "v2 2\n", "d3/f3.txt": "v2 3\n" });
    await expect(inProcess.update(dir, up, { ref: null, signal })).rejects.toThrow(/would overwrite local changes \(d2\/f2.txt\)/);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    expect(readFileSync(join(dir, "d2/f2.txt"), "utf8")).toBe("local edit\n");
    expect(readFileSync(join(dir, "d3/f3.txt"), "utf8")).toBe("v1 3\n");
    expect(readJournal(join(dir, ".git"))).toBeNull();
  });

  test("an untracked file where the update adds one: refused unless identical", async () => {
    const up = t.repo("diff-c", manyFiles(5, "v1"));
    const dir = join(t.ws, "diff-c");
    await inProcess.clone(up, dir, { ref: null, signal });
    writeFileSync(join(dir, "incoming.txt"), "mine\n");
    t.commit(up, { "incoming.txt": "theirs\n" });
    await expect(inProcess.update(dir, up, { ref: null, signal })).rejects.toThrow(/incoming\.txt/);
    expect(readFileSync(join(dir, "incoming.txt"), "utf8")).toBe("mine\n");
    writeFileSync(join(dir, "incoming.txt"), "theirs\n");
    await inProcess.update(dir, up, { ref: null, signal });
    expect(git(dir, "status", "--porcelain")).toBe("");
  });

  test("a staged change to a changed path is refused", async () => {
    const up = t.repo("diff-d", manyFiles(5, "v1"));
    const dir = join(t.ws, "diff-d");
    await inProcess.clone(up, dir, { ref: null, signal });
    writeFileSync(join(dir, "d1/f1.txt"), "staged\n");
    git(dir, "add", "d1/f1.txt");
    writeFileSync(join(dir, "d1/f1.txt"), "v1 1\n"); // work tree back to HEAD, index still differs
    t.commit(up, { "d1/f1.txt": "v2 1\n" });
    await expect(inProcess.update(dir, up, { ref: null, signal })).rejects.toThrow(/would overwrite local changes/);
  });

  test("the cache-tree: git's own is read (and dropped when git invalidates it); a staged change under a valid one is dirty", async () => {
    const up = t.repo("diff-e", manyFiles(8, "v1"));
    const dir = join(t.ws, "diff-e");
    await inProcess.clone(up, dir, { ref: null, signal });
    writeFileSync(join(dir, "d1/f1.txt"), "committed locally\n");
    git(dir, "commit", "-q", "-am", "local"); // git writes its own cache-tree
    const index = () => readIndex(readFileSync(join(dir, ".git", "index")));
    expect(index()?.rootTree).toBe(git(dir, "rev-parse", "HEAD^{tree}"));
    expect(await inProcess.isDirty(dir)).toBe(false);
    writeFileSync(join(dir, "d2/f2.txt"), "staged\n");
    git(dir, "add", "d2/f2.txt");
    expect(index()?.rootTree).toBeNull(); // invalidated by git
    writeFileSync(join(dir, "d2/f2.txt"), "v1 2\n");
    git(dir, "add", "d2/f2.txt"); // back to HEAD's content: nothing staged, cache-tree still invalid
    expect(await inProcess.isDirty(dir)).toBe(false);
    writeFileSync(join(dir, "d2/f2.txt"), "staged again\n");
    git(dir, "add", "d2/f2.txt");
    writeFileSync(join(dir, "d2/f2.txt"), "v1 2\n"); // work tree = HEAD, index differs
    expect(await inProcess.isDirty(dir)).toBe(true);
  });
});
