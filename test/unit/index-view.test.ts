// The index viewed in its own bytes (index-view.ts) holds exactly what git
// says its index holds: every field `git ls-files --stage --debug` shows, for
// v2, v3 (extended flags) and v4 (compressed paths) indexes of odd names, a
// split index, and paths found by binary search.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ASSUME_VALID, INTENT_TO_ADD, readIndex, sharedIndexIn, SKIP_WORKTREE } from "../../src/core/git/objects/index-file.ts";
import { IndexView } from "../../src/core/git/objects/index-view.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
beforeEach(() => {
  tmp = tempDir("grex-index-view-");
});
afterEach(() => tmp.cleanup());

const FILES: Record<string, string> = {
  "a.txt": "a\n",
  "a-b": "ab\n",
  "a/b.txt": "b\n",
  "a.b/c": "c\n",
  "Übersicht_長い名前/données.txt": "d\n",
  "z z/sp ace": "s\n",
};

/** `git ls-files --stage --debug`, as the view's fields would print it. */
function lsFilesOf(v: IndexView): string {
  const out: string[] = [];
  for (const e of v.entries()) {
    out.push(`${e.mode.toString(8)} ${e.oid} ${e.stage}\t${e.path}`);
    out.push(`  ctime: ${e.ctimeSeconds}:${e.ctimeNanoseconds}`, `  mtime: ${e.mtimeSeconds}:${e.mtimeNanoseconds}`);
    out.push(`  dev: ${e.dev}\tino: ${e.ino}`, `  uid: ${e.uid}\tgid: ${e.gid}`);
    const f = e.flags ?? 0;
    // git prints the on-disk flags word (stage and name length left out here, as below).
    out.push(`  size: ${e.size}\tflags: ${(f & ASSUME_VALID ? 0x8000 : 0) | (f & (SKIP_WORKTREE | INTENT_TO_ADD) ? 0x4000 : 0)}`);
  }
  return out.join("\n");
}

/** git's own listing with each flags word reduced to the bits lsFilesOf prints. */
function gitListing(r: string): string {
  return git(r, "-c", "core.quotepath=off", "ls-files", "--stage", "--debug")
    .split("\n")
    .map((l) => l.replace(/flags: ([0-9a-f]+)$/, (_, h: string) => `flags: ${Number.parseInt(h, 16) & 0xc000}`))
    .join("\n");
}

/** A repository of FILES plus an entry whose path is longer than 0xfff bytes (no file: git adds it by id). */
function repoWithLongPath(r: string): void {
  makeRepo(r, FILES);
  const blob = git(r, "hash-object", "-w", "a.txt");
  const long = Array.from({ length: 24 }, (_, i) => `${i}${"d".repeat(199)}`).join("/");
  git(r, "update-index", "--add", "--cacheinfo", `100644,${blob},${long}`);
}

function view(r: string): IndexView {
  const v = IndexView.of(readFileSync(join(r, ".git", "index")), sharedIndexIn(join(r, ".git")), true);
  if (!v) throw new Error("the view refused git's index");
  return v;
}

for (const version of [2, 3, 4]) {
  test(`a v${version} index with odd names and extended flags reads as git lists it`, () => {
    const r = join(tmp.path, `r${version}`);
    repoWithLongPath(r);
    writeFileSync(join(r, "intent.txt"), "i\n");
    git(r, "add", "-N", "intent.txt");
    git(r, "update-index", "--assume-unchanged", "a.txt");
    if (version >= 3) git(r, "update-index", "--skip-worktree", "a/b.txt");
    git(r, "update-index", `--index-version=${version}`);
    const v = view(r);
    expect(v.version).toBe(version === 2 ? 3 : version); // intent-to-add makes git write v3 at least
    expect(lsFilesOf(v)).toBe(gitListing(r));
    // The same as the entry reader's answer, field for field.
    const read = readIndex(readFileSync(join(r, ".git", "index")));
    expect([...v.entries()].map((e) => [e.path, e.oid, e.flags, e.size])).toEqual((read?.entries ?? []).map((e) => [e.path, e.oid, e.flags ?? 0, e.size]));
    for (const p of git(r, "-c", "core.quotepath=off", "ls-files").split("\n")) expect(v.has(p)).toBe(true);
    for (const p of ["a", "a/", "a.tx", "a/b", "z z", "Übersicht_長い名前", "zz"]) expect(v.has(p)).toBe(false);
    // Base names compared as bytes: "b.txt" is a/b.txt's, not "a/b" nor "txt".
    const named = (n: string) => [...v.entries()].map((e, i) => [e.path, i] as const).filter(([, i]) => v.hasBaseName(i, Buffer.from(n))).map(([p]) => p);
    expect(named("b.txt")).toEqual(["a/b.txt"]);
    expect(named("données.txt")).toEqual(["Übersicht_長い名前/données.txt"]);
    expect(named("a.txt")).toEqual(["a.txt"]);
    expect(named("txt")).toEqual([]);
  });
}

test("a split index reads as the whole index; its cache-tree root is HEAD's tree", () => {
  const r = join(tmp.path, "split");
  makeRepo(r, FILES);
  git(r, "update-index", "--split-index");
  commit(r, { "later.txt": "l\n" }, "later");
  const v = view(r);
  expect(lsFilesOf(v)).toBe(gitListing(r));
  expect(v.has("later.txt")).toBe(true);
  const plain = join(tmp.path, "plain");
  makeRepo(plain, FILES);
  expect(view(plain).rootTree).toBe(git(plain, "rev-parse", "HEAD^{tree}"));
});

test("refuses a damaged index when asked to verify it", () => {
  const r = join(tmp.path, "r");
  makeRepo(r, FILES);
  const buf = Buffer.from(readFileSync(join(r, ".git", "index")));
  (buf[20] as number) ^= 1;
  expect(IndexView.of(buf, undefined, true)).toBeNull();
  expect(IndexView.of(buf.subarray(0, 30))).toBeNull();
});

test("an edited index writes what git reads: untouched entries byte for byte, edits in their place", async () => {
  const { EditedIndex } = await import("../../src/core/git/objects/index-view.ts");
  const { entryFor, serializeIndex } = await import("../../src/core/git/objects/index-file.ts");
  const r = join(tmp.path, "edit");
  repoWithLongPath(r);
  const before = gitListing(r);
  const index = new EditedIndex(view(r));
  const blob = git(r, "hash-object", "-w", "--stdin");
  // Replace one, remove one, add one that sorts between two untouched ones.
  const was = index.get("a.b/c");
  expect(was?.mode).toBe(0o100644);
  index.set("a.b/c", entryFor("a.b/c", 0o100755, blob, null));
  index.delete("z z/sp ace");
  index.set("a.b/b", entryFor("a.b/b", 0o100644, blob, null));
  expect(index.get("z z/sp ace")).toBeUndefined();
  expect(index.get("a.b/b")?.oid).toBe(blob);
  writeFileSync(join(r, ".git", "index"), serializeIndex(index.entries()));
  const stage = git(r, "-c", "core.quotepath=off", "ls-files", "--stage").split("\n");
  expect(stage).toContain(`100755 ${blob} 0\ta.b/c`);
  expect(stage).toContain(`100644 ${blob} 0\ta.b/b`);
  expect(stage.some((l) => l.endsWith("\tz z/sp ace"))).toBe(false);
  // Every untouched entry is as git listed it before, stat data and all.
  const keep = (listing: string) => listing.split(/\n(?=\d{6} )/).filter((b) => !/\t(a\.b\/[bc]|z z\/sp ace)\n/.test(`${b}\n`));
  expect(keep(gitListing(r))).toEqual(keep(before));
  expect(git(r, "fsck", "--no-dangling")).toBe("");
});
