// A pack's `files/` is hashed for its actions hash without ever leaving the
// pack: a `files` that is a link (to /usr, to HOME) is hashed as a link, and
// links inside it are never followed.
import { afterAll, expect, test } from "bun:test";
import { closeSync, ftruncateSync, mkdirSync, openSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { treeEntries } from "../../src/core/base/hash.ts";
import { declarativeType } from "../../src/core/packtypes/declarative.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

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

test("grex add of a pack whose committed files/ links to a directory outside (holding a 4 GiB sparse file) hashes the link only", async () => {
  const outside = join(t.home, "big");
  mkdirSync(outside, { recursive: true });
  const fd = openSync(join(outside, "huge.bin"), "w");
  ftruncateSync(fd, 4 * 1024 ** 3); // sparse: costs no disk, but reading it would need 4 GiB
  closeSync(fd);
  const up = join(t.upstream, "linked");
  mkdirSync(up, { recursive: true });
  writeFileSync(join(up, "pack.yaml"), "name: linked\ntype: declarative\nactions: []\n");
  symlinkSync(outside, join(up, "files"));
  git(up, "init", "-q", "-b", "main");
  git(up, "add", "-A");
  git(up, "commit", "-q", "-m", "files links out");
  expect((await t.grex("init")).code).toBe(0);
  const r = await t.grex("add", up, "linked");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  // The setup hash sync computes for it: the link's text, not 4 GiB read from outside the pack.
  expect(treeEntries(join(t.ws, "linked", "files"))).toEqual([["", Buffer.from(`link:${outside}`)]]);
  expect(declarativeType.hash(join(t.ws, "linked"), null, [])).toMatch(/^sha256:/);
});
