// The cheap synchronous readers (no isomorphic-git): URL classification,
// HEAD and refs from the files, origin's URL, object presence.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isGitRepo, localPath, originUrlSync, readHeadSync, transportOf } from "../../src/core/git/backend.ts";
import { ObjectPresence } from "../../src/core/git/objects/objects.ts";
import { deleteRefSync, gitdirOf, listRefsSync, resolveRefSync, writeRefSync } from "../../src/core/git/refs/refs.ts";
import { commit, git, headSha, makeRepo, tag, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
beforeEach(() => {
  tmp = tempDir("grex-git-refs-");
});
afterEach(() => tmp.cleanup());

describe("transportOf", () => {
  test.each([
    ["https://github.com/a/b.git", "http"],
    ["HTTP://host/x", "http"],
    ["ssh://git@host/a/b.git", "ssh"],
    ["git@github.com:a/b.git", "ssh"],
    ["github.com:a/b.git", "ssh"],
    ["myhost:repo", "ssh"],
    ["git://host/x.git", "ssh"],
    ["git+ssh://host/x.git", "ssh"],
    ["dir/with:colon", "local"],
    ["file:///srv/repos/a", "local"],
    ["/srv/repos/a", "local"],
    ["../sibling", "local"],
    ["C:\\repos\\a", "local"],
  ])("%s → %s", (url, kind) => {
    expect(transportOf(url)).toBe(kind as ReturnType<typeof transportOf>);
  });

  test("localPath decodes file:// URLs and resolves relative paths", () => {
    expect(localPath("file:///srv/my%20repo")).toBe("/srv/my repo");
    expect(localPath("/abs/x")).toBe("/abs/x");
    expect(localPath("rel/x")).toBe(join(process.cwd(), "rel/x"));
  });
});

describe("readHeadSync", () => {
  test("agrees with git on a branch, detached, and with packed refs only", () => {
    const r = join(tmp.path, "r");
    const first = makeRepo(r, { a: "1" }, { branch: "trunk" });
    const second = commit(r, { a: "2" }, "two");
    expect(readHeadSync(r)).toEqual({ sha: second, branch: "trunk" });
    git(r, "checkout", "--quiet", "--detach", first);
    expect(readHeadSync(r)).toEqual({ sha: first, branch: null });
    git(r, "checkout", "--quiet", "trunk");
    git(r, "pack-refs", "--all", "--prune");
    expect(readHeadSync(r)).toEqual({ sha: second, branch: "trunk" });
    expect(isGitRepo(r)).toBe(true);
  });

  test("a packed ref is found by its own line only: names that end or begin like it, peeled lines, no final newline", () => {
    const r = join(tmp.path, "r");
    makeRepo(r, { a: "1" });
    tag(r, "v1", "annotated");
    const two = commit(r, { a: "2" }, "two");
    for (const t of ["xv1", "v1.0", "a/v1"]) git(r, "tag", t);
    git(r, "update-ref", "refs/heads/v1", two);
    git(r, "pack-refs", "--all", "--prune");
    const gd = join(r, ".git");
    const names = ["refs/tags/v1", "refs/tags/xv1", "refs/tags/v1.0", "refs/tags/a/v1", "refs/heads/v1", "refs/heads/main"];
    const byGit = names.map((n) => git(r, "rev-parse", n));
    expect(names.map((n) => resolveRefSync(gd, n))).toEqual(byGit);
    expect(resolveRefSync(gd, "refs/tags/v")).toBeNull();
    expect(resolveRefSync(gd, "refs/tags/v1.")).toBeNull();
    // Read as the whole-file parser reads it (git itself refuses such a file as corrupt).
    const file = join(gd, "packed-refs");
    writeFileSync(file, readFileSync(file, "utf8").replace(/\n$/, ""));
    expect(names.map((n) => resolveRefSync(gd, n))).toEqual(byGit);
  });

  test("null for an unborn branch or a non-repository", () => {
    const r = join(tmp.path, "r");
    mkdirSync(r);
    git(r, "init", "--quiet", "-b", "main");
    expect(readHeadSync(r)).toBeNull();
    expect(readHeadSync(join(tmp.path, "nothing"))).toBeNull();
    expect(isGitRepo(join(tmp.path, "nothing"))).toBe(false);
  });

  test("follows a .git file (submodule / separate git dir)", () => {
    const r = join(tmp.path, "r");
    const sha = makeRepo(r, { a: "1" });
    const wt = join(tmp.path, "wt");
    mkdirSync(wt);
    writeFileSync(join(wt, ".git"), `gitdir: ${join(r, ".git")}\n`);
    expect(isGitRepo(wt)).toBe(true);
    expect(gitdirOf(wt)).toBe(join(r, ".git"));
    expect(readHeadSync(wt)).toEqual({ sha, branch: "main" });
  });

  test("linked worktrees read refs from the common dir", () => {
    const r = join(tmp.path, "r");
    makeRepo(r, { a: "1" });
    const side = commit(r, { a: "2" }, "two");
    git(r, "branch", "side");
    git(r, "reset", "--quiet", "--hard", "HEAD~1");
    git(r, "worktree", "add", "--quiet", join(tmp.path, "linked"), "side");
    expect(readHeadSync(join(tmp.path, "linked"))).toEqual({ sha: side, branch: "side" });
  });
});

describe("refs", () => {
  test("list, write and delete loose and packed refs", () => {
    const r = join(tmp.path, "r");
    const sha = makeRepo(r, { a: "1" });
    tag(r, "v1", "one");
    git(r, "branch", "b1");
    git(r, "pack-refs", "--all", "--prune");
    git(r, "branch", "b2");
    const gd = join(r, ".git");
    expect([...listRefsSync(gd, "refs/heads/").keys()].sort()).toEqual(["refs/heads/b1", "refs/heads/b2", "refs/heads/main"]);
    expect(listRefsSync(gd, "refs/tags/").get("refs/tags/v1")).toBe(git(r, "rev-parse", "v1"));
    deleteRefSync(gd, "refs/heads/b1"); // packed
    deleteRefSync(gd, "refs/tags/v1"); // packed, with a peeled line
    expect(git(r, "branch", "--format=%(refname:short)").split("\n").sort()).toEqual(["b2", "main"]);
    expect(git(r, "tag")).toBe("");
    writeRefSync(gd, "refs/remotes/origin/x", sha);
    expect(git(r, "rev-parse", "origin/x")).toBe(sha);
    expect(resolveRefSync(gd, "refs/remotes/origin/x")).toBe(sha);
    expect(() => writeRefSync(gd, "refs/../../evil", sha)).toThrow();
    expect(git(r, "fsck", "--no-dangling")).toBe("");
  });
});

describe("originUrlSync", () => {
  test("reads remote.origin.url through quoting, case and comments", () => {
    const r = join(tmp.path, "r");
    makeRepo(r, { a: "1" });
    git(r, "remote", "add", "origin", "https://example.com/a b.git");
    expect(originUrlSync(r)).toBe("https://example.com/a b.git");
    writeFileSync(
      join(r, ".git", "config"),
      '[core]\n\tbare = false\n[remote "upstream"]\n\turl = /nope\n[Remote "origin"]\n\tURL = "/srv/x y" ; a comment\n',
    );
    expect(originUrlSync(r)).toBe("/srv/x y");
    writeFileSync(join(r, ".git", "config"), "[core]\n\tbare = false\n");
    expect(originUrlSync(r)).toBeNull();
  });
});

describe("ObjectPresence", () => {
  test("agrees with git for loose and packed objects", () => {
    const r = join(tmp.path, "r");
    makeRepo(r, { a: "1", "d/b": "2" });
    commit(r, { a: "3" }, "two");
    const all = git(r, "rev-list", "--objects", "--all")
      .split("\n")
      .map((l) => l.slice(0, 40));
    const missing = ["0".repeat(40), "f".repeat(40), `${all[0]?.slice(0, 39)}0`];
    const check = () => {
      const p = new ObjectPresence(join(r, ".git"));
      for (const o of all) expect(p.has(o)).toBe(true);
      for (const o of missing) if (!all.includes(o)) expect(p.has(o)).toBe(false);
    };
    check(); // loose
    git(r, "gc", "--quiet");
    check(); // packed (idx v2)
    expect(new ObjectPresence(join(r, ".git")).isEmpty()).toBe(false);
    expect(headSha(r)).toBe(all[0] as string);
  });
});
