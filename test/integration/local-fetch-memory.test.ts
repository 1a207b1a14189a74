// A later fetch by path into a repository that already has objects brings the
// missing ones over without gathering them in memory: a few are copied loose
// one at a time, many are streamed into one pack as it is written. The peak
// memory of the fetching child process is bounded well under the size of
// what it copies (before, every object was held, then the whole pack built
// from them: twice the data), and git checks the result.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendPeakGrowth } from "../helpers/backend-memory.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let up: string;
let clone: string;
const MiB = 1024 * 1024;

/** Fetch `up` into `clone` in a child process; its memory growth (peak over start), in bytes. */
function fetchInChild(name: string): number {
  return backendPeakGrowth(tmp.path, name, up, `fetch(${JSON.stringify(clone)}, ${JSON.stringify(up)}, { signal })`);
}

/** Commit `count` random (incompressible) files of `size` bytes each in `up`, left as loose objects. */
function commitBlobs(prefix: string, count: number, size: number): void {
  for (let i = 0; i < count; i++) writeFileSync(join(up, `${prefix}${i}.bin`), randomBytes(size));
  git(up, "add", ".");
  git(up, "commit", "-q", "-m", `${count} blobs`);
}

const packsOf = (dir: string) => readdirSync(join(dir, ".git", "objects", "pack")).filter((f) => f.endsWith(".pack")).sort();

beforeAll(async () => {
  tmp = tempDir("grex-local-fetch-mem-");
  up = join(tmp.path, "up");
  makeRepo(up, { "README.md": "up\n" });
  clone = join(tmp.path, "clone");
  const { backendFor } = await import("../../src/core/git/backend.ts");
  await backendFor(up).clone(up, clone, { ref: null, signal: new AbortController().signal });
}, 60_000);
afterAll(() => tmp.cleanup());

describe("fetch by path into an existing store, within a memory bound", () => {
  test("many blobs (141 MiB in 300 files) are streamed into one new pack", () => {
    commitBlobs("many", 300, 480 * 1024);
    const before = packsOf(clone);
    const grown = fetchInChild("many");
    // Holding the objects and then the pack built from them took over twice the data.
    expect(grown).toBeLessThan(64 * MiB);
    expect(git(clone, "rev-parse", "origin/main")).toBe(git(up, "rev-parse", "HEAD"));
    expect(packsOf(clone).length).toBe(before.length + 1);
    expect(git(clone, "fsck", "--strict", "--no-dangling")).toBe("");
  }, 120_000);

  test("a few large blobs (144 MiB in 24 files) are copied loose one at a time", () => {
    commitBlobs("few", 24, 6 * MiB);
    const before = packsOf(clone);
    const grown = fetchInChild("few");
    expect(grown).toBeLessThan(64 * MiB);
    expect(git(clone, "rev-parse", "origin/main")).toBe(git(up, "rev-parse", "HEAD"));
    expect(packsOf(clone)).toEqual(before);
    const blob = git(up, "rev-parse", "HEAD:few0.bin");
    expect(git(clone, "cat-file", "-t", blob)).toBe("blob");
    expect(git(clone, "fsck", "--strict", "--no-dangling")).toBe("");
  }, 120_000);
});
