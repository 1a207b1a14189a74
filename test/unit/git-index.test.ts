// The index reader/writer round-trips what git writes, and git accepts what we write.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { chmodSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type IndexEntry, parseIndex, readIndex, readIndexForStatus, serializeIndex } from "../../src/core/git/objects/index-file.ts";

const FIELDS = ["ctimeSeconds", "ctimeNanoseconds", "mtimeSeconds", "mtimeNanoseconds", "dev", "ino", "mode", "uid", "gid", "size", "oid", "stage", "path"] as const;
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
  const v5 = Buffer.from(buf);
  v5.writeUInt32BE(5, 4); // no such version
  expect(parseIndex(v5)).toBeNull();
  const required = Buffer.concat([buf.subarray(0, buf.length - 20), Buffer.from("abcd\0\0\0\0", "latin1")]);
  expect(parseIndex(Buffer.concat([required, new Bun.CryptoHasher("sha1").update(required).digest()]))).toBeNull(); // an unknown required extension
  git(r, "update-index", "--index-version", "4");
  expect(parseIndex(readFileSync(join(r, ".git", "index")))?.map((e) => e.path)).toEqual(["a.txt"]);
  git(r, "update-index", "--split-index");
  expect(parseIndex(readFileSync(join(r, ".git", "index")))).toBeNull(); // a split index needs its shared file
});

test("the status reader gives the same entries, read lazily, and skips only the checksum", () => {
  const r = join(tmp.path, "r");
  const long = `${"d".repeat(200)}/${"f".repeat(200)}.txt`;
  makeRepo(r, { "a.txt": "a\n", "dir/b.txt": "b\n", "é/ü.txt": "u\n", [long]: "l\n" });
  symlinkSync("a.txt", join(r, "lnk"));
  commit(r, {}, "link");
  const buf = readFileSync(join(r, ".git", "index"));
  const eager = readIndex(buf);
  const lazy = readIndexForStatus(buf);
  const fields = (e: IndexEntry) => Object.fromEntries(FIELDS.map((k) => [k, e[k]]));
  expect(lazy?.rootTree).toBe(eager?.rootTree ?? "missing");
  expect(lazy?.entries.map(fields)).toEqual(eager?.entries.map(fields) ?? []);
  // A wrong checksum: the verifying reader refuses, the status reader reads on (as git's own reads do).
  const bad = Buffer.from(buf);
  bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0xff;
  expect(readIndex(bad)).toBeNull();
  expect(readIndexForStatus(bad)?.entries.map((e) => e.path)).toEqual(eager?.entries.map((e) => e.path) ?? []);
  // Anything else it does not understand, it refuses like readIndex.
  const v9 = Buffer.from(buf);
  v9.writeUInt32BE(9, 4);
  expect(readIndexForStatus(v9)).toBeNull();
});
