// The index reader/writer round-trips what git writes, and git accepts what we write.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { chmodSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseIndex, serializeIndex } from "../../src/core/git/index-file.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
beforeEach(() => {
  tmp = tempDir("grex-git-index-");
});
afterEach(() => tmp.cleanup());

test("parses git's index and writes one git reads back identically", () => {
  const r = join(tmp.path, "r");
  const long = `${"d".repeat(200)}/${"f".repeat(200)}.txt`;
  makeRepo(r, { "a.txt": "a\n", "dir/b.txt": "b\n", "é/ü.txt": "u\n", [long]: "l\n", "z": "z\n" });
  chmodSync(join(r, "a.txt"), 0o755);
  symlinkSync("a.txt", join(r, "lnk"));
  commit(r, {}, "mode and link");
  const before = git(r, "ls-files", "--stage", "--debug");
  const entries = parseIndex(readFileSync(join(r, ".git", "index")));
  expect(entries).not.toBeNull();
  expect(entries?.map((e) => e.path)).toEqual(git(r, "-c", "core.quotepath=off", "ls-files").split("\n"));
  expect(entries?.find((e) => e.path === "a.txt")?.mode).toBe(0o100755);
  expect(entries?.find((e) => e.path === "lnk")?.mode).toBe(0o120000);
  // Reversed order in, sorted order out; the stat data survives unchanged.
  writeFileSync(join(r, ".git", "index"), serializeIndex([...(entries ?? [])].reverse()));
  expect(git(r, "ls-files", "--stage", "--debug")).toBe(before);
  expect(git(r, "status", "--porcelain")).toBe("");
  expect(git(r, "fsck", "--no-dangling")).toBe("");
});

test("refuses what it does not understand", () => {
  const r = join(tmp.path, "r");
  makeRepo(r, { "a.txt": "a\n" });
  const buf = readFileSync(join(r, ".git", "index"));
  const corrupt = Buffer.from(buf);
  corrupt[20] = (corrupt[20] as number) ^ 0xff; // checksum no longer matches
  expect(parseIndex(corrupt)).toBeNull();
  git(r, "update-index", "--index-version", "4");
  expect(parseIndex(readFileSync(join(r, ".git", "index")))).toBeNull();
  git(r, "update-index", "--index-version", "2");
  expect(parseIndex(readFileSync(join(r, ".git", "index")))).not.toBeNull();
});
