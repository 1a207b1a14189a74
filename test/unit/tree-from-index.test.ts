// flatTreeFromIndex (src/core/git/objects/tree-from-index.ts): a commit's
// flat tree and cache-tree read from an index that holds exactly that commit's
// tree equal what the walk of the commit's trees gives (verifiedFlatTree,
// cacheTreeOf), git's tree order included; any index that is not exactly that
// tree (a staged change, a conflict, another commit, no cache-tree) answers
// null, so the caller reads the trees instead.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { flatTreeFromIndex } from "../../src/core/git/objects/tree-from-index.ts";
import { cacheTreeOf, verifiedFlatTree } from "../../src/core/git/objects/tree-read.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-tree-from-index-");
afterAll(() => tmp.cleanup());

// Names whose order differs between a plain sort and git's (a directory sorts as "name/"): "a-b", "a.c", "a/x", "a0".
const FILES = { "a-b": "1\n", "a.c": "2\n", "a/x": "3\n", "a/y/z.txt": "4\n", a0: "5\n", "b.sh": "#!/bin/sh\n", "deep/er/still/f.md": "6\n" };

function repoWith(name: string): { repo: string; index: string; head: string; tree: string } {
  const repo = join(tmp.path, name);
  makeRepo(repo, FILES);
  git(repo, "update-index", "--chmod=+x", "b.sh");
  Bun.spawnSync(["ln", "-s", "a/x", join(repo, "link")]);
  git(repo, "add", "link");
  // A gitlink, as a submodule leaves it in the index.
  git(repo, "update-index", "--add", "--cacheinfo", `160000,${git(repo, "rev-parse", "HEAD").trim()},sub`);
  git(repo, "commit", "-q", "-m", "modes");
  git(repo, "status", "--porcelain"); // git primes the cache-tree as it writes the index
  const head = git(repo, "rev-parse", "HEAD").trim();
  return { repo, index: join(repo, ".git", "index"), head, tree: git(repo, "rev-parse", "HEAD^{tree}").trim() };
}

describe("flatTreeFromIndex", () => {
  test("the index of the commit's own checkout gives the walk's flat tree, in its order, and its cache-tree", async () => {
    const { repo, index, head, tree } = repoWith("same");
    git(repo, "write-tree"); // a valid cache-tree, as after a commit or a checkout
    const got = flatTreeFromIndex(index, tree);
    expect(got).not.toBeNull();
    const store = new ObjectStore(join(repo, ".git"));
    try {
      const walked = await verifiedFlatTree(join(repo, ".git"), head, store);
      expect([...(got?.tree ?? [])]).toEqual([...walked]);
      expect(got?.cacheTree).toEqual(cacheTreeOf(store, head) ?? undefined);
    } finally {
      store.close();
    }
  });

  test("a work tree change alone (nothing staged) still holds the commit's tree", () => {
    const { repo, index, tree } = repoWith("worktree-change");
    git(repo, "write-tree");
    Bun.write(join(repo, "a-b"), "changed\n");
    expect(flatTreeFromIndex(index, tree)).not.toBeNull();
  });

  test("null for a staged change, another commit, a conflict, no cache-tree, no index", () => {
    const staged = repoWith("staged");
    Bun.spawnSync(["sh", "-c", `echo changed > "${join(staged.repo, "a0")}"`]);
    git(staged.repo, "add", "a0");
    git(staged.repo, "write-tree"); // the cache-tree now names the staged tree, not HEAD's
    expect(flatTreeFromIndex(staged.index, staged.tree)).toBeNull();

    const older = repoWith("older");
    const before = older.tree;
    commit(older.repo, { "new.txt": "n\n" }, "one more");
    git(older.repo, "write-tree");
    expect(flatTreeFromIndex(older.index, before)).toBeNull();

    const conflicted = repoWith("conflict");
    git(conflicted.repo, "switch", "-q", "-c", "other");
    commit(conflicted.repo, { a0: "other\n" }, "other side");
    git(conflicted.repo, "switch", "-q", "main");
    commit(conflicted.repo, { a0: "main side\n" }, "main side");
    const tip = git(conflicted.repo, "rev-parse", "HEAD^{tree}").trim();
    Bun.spawnSync(["git", "merge", "-q", "other"], { cwd: conflicted.repo });
    expect(git(conflicted.repo, "ls-files", "-u")).not.toBe("");
    expect(flatTreeFromIndex(conflicted.index, tip)).toBeNull();

    const bare = repoWith("no-cache-tree");
    git(bare.repo, "update-index", "--add", "--cacheinfo", `100644,${git(bare.repo, "hash-object", "-w", "--stdin")},added`); // invalidates the root
    git(bare.repo, "rm", "-q", "--cached", "added");
    expect(flatTreeFromIndex(bare.index, bare.tree)).toBeNull();

    expect(flatTreeFromIndex(join(tmp.path, "nowhere", "index"), bare.tree)).toBeNull();
  });
});
