// A pack's `files/` is hashed for its actions hash without ever leaving the
// pack: a `files` that is a link (to /usr, to HOME) is hashed as a link, and
// links inside it are never followed.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { treeEntries } from "../../src/core/hash.ts";
import { declarativeType } from "../../src/core/packtypes/declarative.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-files-");
afterAll(() => t.cleanup());

test("a files/ that links out of the pack is one link entry, whatever lies behind it", () => {
  const outside = join(t.home, "secret");
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, "key"), "one\n");
  const pack = join(t.ws, "p");
  mkdirSync(pack, { recursive: true });
  symlinkSync(outside, join(pack, "files"));
  expect(treeEntries(join(pack, "files"))).toEqual([["", Buffer.from(`link:${outside}`)]]);
  const before = declarativeType.hash(pack, null, []);
  writeFileSync(join(outside, "key"), "two\n"); // not read, so not part of the hash
  writeFileSync(join(outside, "more"), "three\n");
  expect(declarativeType.hash(pack, null, [])).toBe(before);
});

test("links inside files/ are hashed by their target text, not followed", () => {
  const pack = join(t.ws, "q");
  mkdirSync(join(pack, "files", "sub"), { recursive: true });
  writeFileSync(join(pack, "files", "a.txt"), "a\n");
  symlinkSync("/usr", join(pack, "files", "sub", "usr"));
  expect(treeEntries(join(pack, "files")).map(([p, b]) => [p, Buffer.from(b).toString()])).toEqual([
    ["a.txt", "a\n"],
    ["sub/usr", "link:/usr"],
  ]);
});
