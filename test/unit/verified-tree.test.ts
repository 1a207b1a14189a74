// verifiedFlatTree (src/core/git/objects/tree-read.ts) walks a commit's trees
// without a pause when every tree is in the repository's own object files, and
// the same checks apply there: two entries of one name, a malformed tree, a
// missing subtree named by its directory; loose and packed objects alike.
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { MissingObjectError, UnsafeTreeError, verifiedFlatTree } from "../../src/core/git/objects/tree-read.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-verified-tree-");
afterAll(() => tmp.cleanup());
let n = 0;

/** A tree object written as is (git hash-object --literally), from [mode, name, oid] entries. */
function rawTree(repo: string, entries: Array<[string, string, string]>): string {
  const bytes = Buffer.concat(entries.map(([mode, name, oid]) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(oid, "hex")])));
  const file = join(repo, `.tree-${n++}`);
  Bun.spawnSync(["sh", "-c", `cat > "${file}"`], { stdin: bytes });
  const oid = git(repo, "hash-object", "-t", "tree", "--literally", "-w", file).trim();
  rmSync(file);
  return oid;
}

function commitOf(repo: string, tree: string): string {
  return git(repo, "commit-tree", tree, "-m", "c").trim();
}

describe("verifiedFlatTree", () => {
  test("the same paths, modes and ids as git ls-tree -r, loose and packed", async () => {
    const repo = join(tmp.path, "plain");
    makeRepo(repo, { "a.txt": "a\n", "d/b.txt": "b\n", "d/e/c.txt": "c\n", "z.sh": "#!/bin/sh\n" });
    const head = git(repo, "rev-parse", "HEAD").trim();
    const want = new Map(
      git(repo, "ls-tree", "-r", head)
        .trim()
        .split("\n")
        .map((l) => {
          const [meta, path] = l.split("\t") as [string, string];
          const [mode, , oid] = meta.split(" ") as [string, string, string];
          return [path, `${Number.parseInt(mode, 8)} ${oid}`] as const;
        }),
    );
    expect(await verifiedFlatTree(join(repo, ".git"), head)).toEqual(want);
    git(repo, "gc", "-q");
    expect(await verifiedFlatTree(join(repo, ".git"), head)).toEqual(want);
  });

  test("two entries of one name in a subtree are refused, naming the path", async () => {
    const repo = join(tmp.path, "dupe");
    makeRepo(repo, { "a.txt": "a\n" });
    const blob = git(repo, "rev-parse", "HEAD:a.txt").trim();
    const sub = rawTree(repo, [["100644", "x", blob], ["100644", "x", blob]]);
    const top = rawTree(repo, [["100644", "a.txt", blob], ["40000", "d", sub]]);
    const err = await verifiedFlatTree(join(repo, ".git"), commitOf(repo, top)).catch((e) => e);
    expect(err).toBeInstanceOf(UnsafeTreeError);
    expect(String(err.message)).toContain("d/x");
  });

  test("a malformed subtree is refused", async () => {
    const repo = join(tmp.path, "bad");
    makeRepo(repo, { "a.txt": "a\n" });
    const blob = git(repo, "rev-parse", "HEAD:a.txt").trim();
    const file = join(repo, ".bad");
    Bun.spawnSync(["sh", "-c", `printf '100644 cut' > "${file}"`]);
    const bad = git(repo, "hash-object", "-t", "tree", "--literally", "-w", file).trim();
    rmSync(file);
    const top = rawTree(repo, [["100644", "a.txt", blob], ["40000", "d", bad]]);
    await expect(verifiedFlatTree(join(repo, ".git"), commitOf(repo, top))).rejects.toBeInstanceOf(UnsafeTreeError);
  });

  test("a missing subtree is named by its directory", async () => {
    const repo = join(tmp.path, "missing");
    makeRepo(repo, { "a.txt": "a\n" });
    const blob = git(repo, "rev-parse", "HEAD:a.txt").trim();
    const top = rawTree(repo, [["100644", "a.txt", blob], ["40000", "gone", "1".repeat(40)]]);
    const err = await verifiedFlatTree(join(repo, ".git"), commitOf(repo, top)).catch((e) => e);
    expect(err).toBeInstanceOf(MissingObjectError);
    expect(String(err.message)).toContain("'gone'");
  });
});
