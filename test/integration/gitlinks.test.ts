// Gitlink index entries as git writes them: git's checkout records the stat
// data of the submodule's (empty) directory (size 4096 on ext4, its uid, gid,
// dev and inode), not zeros. Differential: `git ls-files --debug` of git's
// clone against grex's, after a fresh clone and after an update that adds and
// moves gitlinks. ctime, mtime, dev and inode name each clone's own directory,
// so they are compared with that directory's lstat instead.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
let sup: string;

interface Debug {
  ctime: number;
  mtime: number;
  dev: number;
  ino: number;
  uid: number;
  gid: number;
  size: number;
  flags: string;
}

/** `git ls-files --debug <path>` read into numbers (seconds of ctime and mtime). */
function debugOf(dir: string, path: string): Debug {
  const out = git(dir, "ls-files", "--debug", "--", path);
  const num = (re: RegExp) => Number((out.match(re) as RegExpMatchArray)[1]);
  return {
    ctime: num(/ctime: (\d+):/),
    mtime: num(/mtime: (\d+):/),
    dev: num(/dev: (\d+)/),
    ino: num(/ino: (\d+)/),
    uid: num(/uid: (\d+)/),
    gid: num(/gid: (\d+)/),
    size: num(/size: (\d+)/),
    flags: (out.match(/flags: (\S+)/) as RegExpMatchArray)[1] as string,
  };
}

/** What git would record for the directory at `abs`, as `git ls-files --debug` prints it (32-bit fields). */
function expectedFor(abs: string): Omit<Debug, "flags"> {
  const st = lstatSync(abs);
  return {
    ctime: Math.floor(st.ctimeMs / 1000),
    mtime: Math.floor(st.mtimeMs / 1000),
    dev: st.dev % 2 ** 32,
    ino: st.ino % 2 ** 32,
    uid: st.uid,
    gid: st.gid,
    size: st.size % 2 ** 32,
  };
}

/** The size, owner and flags git compares, plus this clone's own times and inode checked against its directory. */
function expectLikeGit(grexDir: string, gitDir: string, path: string): void {
  const ours = debugOf(grexDir, path);
  const theirs = debugOf(gitDir, path);
  if (theirs.size === 0) {
    // git recorded no stat data (a moved gitlink whose directory was already there): neither may we.
    expect(ours).toEqual(theirs);
    return;
  }
  expect({ size: ours.size, uid: ours.uid, gid: ours.gid, flags: ours.flags }).toEqual({ size: theirs.size, uid: theirs.uid, gid: theirs.gid, flags: theirs.flags });
  const { flags: _f, ...stat } = ours;
  expect(stat).toEqual(expectedFor(join(grexDir, path)));
  expect(git(grexDir, "ls-files", "-s", "--", path)).toBe(git(gitDir, "ls-files", "-s", "--", path));
  expect(git(grexDir, "status", "--porcelain")).toBe("");
}

beforeAll(() => {
  tmp = tempDir("grex-gitlinks-");
  const lib = join(tmp.path, "lib");
  makeRepo(lib, { "lib.txt": "lib\n" });
  commit(lib, { "lib.txt": "lib 2\n" }, "two");
  sup = join(tmp.path, "sup");
  makeRepo(sup, { "README.md": "sup\n" });
  git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "vendor/lib");
  git(sup, "commit", "-q", "-m", "one submodule");
  git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "second");
  git(join(sup, "vendor", "lib"), "checkout", "-q", "HEAD~1");
  git(sup, "add", "vendor/lib");
  git(sup, "commit", "-q", "-m", "a second submodule, the first moved");
});
afterAll(() => tmp.cleanup());

describe("gitlink index entries", () => {
  test("a fresh clone records each gitlink's directory as git clone does", async () => {
    const byGit = join(tmp.path, "by-git");
    git(tmp.path, "clone", "-q", sup, byGit);
    const ours = join(tmp.path, "by-grex");
    await backendFor(sup).clone(sup, ours, { ref: null, signal: never() });
    expect(debugOf(byGit, "vendor/lib").size).toBeGreaterThan(0); // git records the directory's size (4096 on ext4)
    expectLikeGit(ours, byGit, "vendor/lib");
    expectLikeGit(ours, byGit, "second");
  });

  test("an update that adds and moves gitlinks records them as git checkout does", async () => {
    const older = git(sup, "rev-parse", "HEAD~1");
    const byGit = join(tmp.path, "by-git-update");
    git(tmp.path, "clone", "-q", "--no-checkout", sup, byGit);
    git(byGit, "checkout", "-q", older);
    git(byGit, "checkout", "-q", "-");
    const ours = join(tmp.path, "by-grex-update");
    await backendFor(sup).clone(sup, ours, { ref: older, signal: never() });
    await backendFor(sup).update(ours, sup, { ref: null, signal: never() });
    expect(git(ours, "rev-parse", "HEAD")).toBe(git(sup, "rev-parse", "HEAD"));
    expect(debugOf(byGit, "second").size).toBeGreaterThan(0); // a directory git made: its size (4096 on ext4)
    expect(debugOf(byGit, "vendor/lib").size).toBe(0); // moved, its directory already there: no stat data
    expectLikeGit(ours, byGit, "vendor/lib");
    expectLikeGit(ours, byGit, "second");
  });
});
