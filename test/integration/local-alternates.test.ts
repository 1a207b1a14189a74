// A clone by local path of a repository whose objects live in alternates
// (`git clone --shared` / `--reference`): grex reads alternates as git does
// (absolute and relative lines, alternates of alternates) and borrows them as
// `git clone` does, instead of reading every object into memory to copy it.
// The result is checked with git itself (fsck, status, HEAD) and the clone's
// peak memory by the child process that made it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { alternateDirs } from "../../src/core/git/layout/layout.ts";
import { ObjectPresence } from "../../src/core/git/objects/objects.ts";
import { backendPeakGrowth } from "../helpers/backend-memory.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let base: string;
let mid: string;
let src: string;
const BIG = 16; // 4 MiB blobs in the history, gone from HEAD: 64 MiB nobody needs in memory

beforeAll(() => {
  tmp = tempDir("grex-alternates-");
  base = join(tmp.path, "base");
  makeRepo(base, { "README.md": "base\n" });
  for (let i = 0; i < BIG; i++) writeFileSync(join(base, `big${i}.bin`), randomBytes(4 << 20));
  git(base, "add", ".");
  git(base, "commit", "-q", "-m", "big files");
  git(base, "rm", "-q", "big*.bin");
  git(base, "commit", "-q", "-m", "big files gone");
  // mid borrows from base (absolute path), src from mid (rewritten relative below): a chain.
  git(tmp.path, "clone", "-q", "--shared", base, "mid");
  mid = join(tmp.path, "mid");
  writeFileSync(join(mid, "mid.txt"), "mid\n");
  git(mid, "add", "mid.txt");
  git(mid, "commit", "-q", "-m", "mid");
  git(tmp.path, "clone", "-q", "--shared", mid, "src");
  src = join(tmp.path, "src");
  const srcObjects = join(src, ".git", "objects");
  writeFileSync(join(srcObjects, "info", "alternates"), `# borrowed\n${relative(srcObjects, join(mid, ".git", "objects"))}\n`);
  writeFileSync(join(src, "src.txt"), "src\n");
  git(src, "add", "src.txt");
  git(src, "commit", "-q", "-m", "src");
}, 60_000);
afterAll(() => tmp.cleanup());

describe("clone by path from a repository with alternates", () => {
  test("alternates are read as git reads them: relative lines, comments, chains", () => {
    const srcObjects = join(src, ".git", "objects");
    expect(alternateDirs(srcObjects)).toEqual([join(mid, ".git", "objects"), join(base, ".git", "objects")]);
    // Every object git sees from src, grex sees too.
    const all = git(src, "rev-list", "--objects", "--all").split("\n").map((l) => l.slice(0, 40));
    const presence = new ObjectPresence(join(src, ".git"));
    expect(all.filter((o) => !presence.has(o))).toEqual([]);
  });

  test("grex's clone is what git checks complete, borrows as git clone does, and stays within a memory bound", () => {
    const dest = join(tmp.path, "dest");
    mkdirSync(tmp.path, { recursive: true });
    const growth = backendPeakGrowth(tmp.path, "clone", src, `clone(${JSON.stringify(src)}, ${JSON.stringify(dest)}, { ref: null, signal })`);
    // Loose: the 64 MiB of history read into memory (as before) would exceed it; a borrowed store never reads them.
    expect(growth).toBeLessThan(40 * 1024 * 1024);

    expect(git(dest, "rev-parse", "HEAD")).toBe(git(src, "rev-parse", "HEAD"));
    git(dest, "fsck", "--full", "--no-dangling");
    expect(git(dest, "status", "--porcelain")).toBe("");
    expect(git(dest, "rev-list", "--count", "--all")).toBe(git(src, "rev-list", "--count", "--all"));
    // As git clone's copy_alternates: the source's alternates, made absolute.
    const borrowed = readFileSync(join(dest, ".git", "objects", "info", "alternates"), "utf8");
    expect(borrowed).toBe(`${join(mid, ".git", "objects")}\n`);
    // Nothing of base's history was copied: its big blobs are not in dest's own store.
    const bigBlob = git(base, "rev-parse", "HEAD~1:big0.bin");
    expect(existsSync(join(dest, ".git", "objects", bigBlob.slice(0, 2), bigBlob.slice(2)))).toBe(false);
    expect(git(dest, "cat-file", "-t", bigBlob)).toBe("blob");
  }, 60_000);
});
