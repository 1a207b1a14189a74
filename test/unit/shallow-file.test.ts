// `.git/shallow` as git writes it (layout/shallow-file.ts) and where the local
// transport cuts history (transport/shallow-refs.ts shallowBoundary), checked
// against git: the file `git clone --depth n file://` writes, and the lock git
// takes (`shallow.lock`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readShallow } from "../../src/core/git/layout/layout.ts";
import { shallowText, updateShallow, writeShallow } from "../../src/core/git/layout/shallow-file.ts";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { shallowBoundary } from "../../src/core/git/transport/shallow-refs.ts";
import { git } from "../helpers/workspace.ts";

let root: string;
let src: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "grex-shallow-file-"));
  src = join(root, "src");
  git(root, "init", "-q", "-b", "main", src);
  const commit = (m: string) => {
    writeFileSync(join(src, `${m}.txt`), m);
    git(src, "add", "-A");
    git(src, "commit", "-q", "-m", m);
  };
  for (const m of ["a", "b", "c", "d"]) commit(m);
  git(src, "checkout", "-q", "-b", "side", "HEAD~3");
  commit("s1");
  commit("s2");
  git(src, "checkout", "-q", "main");
  git(src, "merge", "-q", "--no-ff", "side", "-m", "merge");
  git(src, "tag", "-a", "-m", "t", "v1", "HEAD~1");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the file", () => {
  test("sorted ids, one per line, a newline after each; none for an empty boundary", () => {
    expect(shallowText(["b".repeat(40), "a".repeat(40), "b".repeat(40)])).toBe(`${"a".repeat(40)}\n${"b".repeat(40)}\n`);
    expect(shallowText([])).toBe("");
  });

  test("written through shallow.lock, removed when the boundary empties; a held lock fails and changes nothing", () => {
    const repo = join(root, "w");
    git(root, "init", "-q", repo);
    const gitdir = join(repo, ".git");
    const a = "a".repeat(40);
    const b = "b".repeat(40);
    writeShallow(gitdir, [b, a]);
    expect(readFileSync(join(gitdir, "shallow"), "latin1")).toBe(`${a}\n${b}\n`);
    updateShallow(gitdir, [], [a]);
    expect([...readShallow(gitdir)]).toEqual([b]);
    writeFileSync(join(gitdir, "shallow.lock"), "");
    expect(() => writeShallow(gitdir, [a])).toThrow(/shallow\.lock/);
    expect([...readShallow(gitdir)]).toEqual([b]);
    rmSync(join(gitdir, "shallow.lock"));
    writeShallow(gitdir, []);
    expect(existsSync(join(gitdir, "shallow"))).toBe(false);
  });
});

describe("where history is cut", () => {
  for (const depth of [1, 2, 3, 4, 5, 6, 7]) {
    test(`depth ${depth}: the boundary git clone --depth ${depth} writes (a merge in the history)`, () => {
      const theirs = join(root, `git-${depth}`);
      git(root, "clone", "-q", "--no-tags", "--depth", String(depth), `file://${src}`, theirs);
      const want = readShallow(join(theirs, ".git"));
      const store = new ObjectStore(join(src, ".git"));
      try {
        const tip = git(src, "rev-parse", "main");
        expect(shallowBoundary(store, [tip], depth, new Set()).boundary).toEqual(want);
      } finally {
        store.close();
      }
    });
  }

  test("a tag is peeled to its commit; a commit the source has no parents for ends history too", () => {
    const store = new ObjectStore(join(src, ".git"));
    try {
      const tag = git(src, "rev-parse", "v1");
      const commit = git(src, "rev-parse", "v1^{commit}");
      expect(shallowBoundary(store, [tag], 1, new Set()).boundary).toEqual(new Set([commit]));
      const parent = git(src, "rev-parse", "v1~1");
      expect(shallowBoundary(store, [tag], 10, new Set([parent])).boundary).toEqual(new Set([parent]));
    } finally {
      store.close();
    }
  });
});
