// A repository repacked while grex reads it (`git gc`, auto-gc, `git repack
// -a -d` in the source of a sync by path): the packs and loose objects grex
// listed are deleted and the same objects appear in a new pack. git answers
// a lookup that misses by scanning the pack directory again
// (reprepare_packed_git); grex's object readers must do the same instead of
// failing with ENOENT or calling the source broken.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { ObjectPresence } from "../../src/core/git/objects/objects.ts";
import { commit, git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir("grex-source-repack-");
});
afterAll(() => tmp.cleanup());

/** A source with one pack (the first commits) and loose objects on top (the later ones). */
function packedAndLoose(name: string): { dir: string; packed: string[]; loose: string[] } {
  const dir = join(tmp.path, name);
  makeRepo(dir, { "a.txt": "a\n", "d/b.txt": "b\n" });
  for (let i = 0; i < 3; i++) commit(dir, { [`d/p${i}.txt`]: `packed ${i}\n` }, `p${i}`);
  git(dir, "repack", "-q", "-a", "-d");
  const packed = all(dir);
  for (let i = 0; i < 3; i++) commit(dir, { [`d/l${i}.txt`]: `loose ${i}\n` }, `l${i}`);
  const loose = all(dir).filter((o) => !packed.includes(o));
  expect(loose.length).toBeGreaterThan(5);
  return { dir, packed, loose };
}

function all(dir: string): string[] {
  return git(dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split("\n");
}

function packNames(dir: string): string[] {
  return readdirSync(join(dir, ".git", "objects", "pack")).filter((n) => n.endsWith(".pack"));
}

describe("the object store after a repack it did not see", () => {
  test("ObjectStore: objects of a deleted pack (listed, not yet mapped) and pruned loose objects are found in the new pack", () => {
    const { dir, packed, loose } = packedAndLoose("store");
    const store = new ObjectStore(join(dir, ".git"));
    try {
      // The first read lists the packs (and reads their indexes); the pack itself is mapped only when an entry is read.
      expect(store.read(loose[0] as string)).not.toBeNull();
      const before = packNames(dir);
      git(dir, "repack", "-q", "-a", "-d");
      expect(packNames(dir)).not.toEqual(before);
      expect(existsSync(join(dir, ".git", "objects", (loose[1] as string).slice(0, 2), (loose[1] as string).slice(2)))).toBe(false);
      for (const oid of [...packed, ...loose]) expect(store.read(oid)?.type).toBeDefined();
    } finally {
      store.close();
    }
  });

  test("ObjectPresence: objects that moved from loose files into a new pack are still present", () => {
    const { dir, packed, loose } = packedAndLoose("presence");
    const presence = new ObjectPresence(join(dir, ".git"));
    git(dir, "repack", "-q", "-a", "-d");
    for (const oid of [...packed, ...loose]) expect(presence.has(oid)).toBe(true);
    expect(presence.has("0123456789012345678901234567890123456789")).toBe(false);
  });
});

describe("a sync by path while the source repacks", () => {
  test("clones and fetches succeed while `git repack -a -d` runs in a loop in the source", async () => {
    const up = join(tmp.path, "up");
    makeRepo(up, { "a.txt": "a\n" });
    for (let i = 0; i < 20; i++) commit(up, { [`d${i % 4}/f${i}.txt`]: `${i}\n`.repeat(i + 1) }, `c${i}`);
    // The repacking side: a real git process deleting old packs and loose objects as fast as it can.
    // Each round commits 100 new files (loose objects for grex to list) and packs them away again.
    const round = "i=$((i+1)); for j in $(seq 1 100); do echo $i $j > g$j; done; git add -A; git commit -q -m r$i; git repack -q -a -d";
    const loop = Bun.spawn(["sh", "-c", `i=0; while [ ! -e ../stop-repacking ]; do ${round}; done >/dev/null 2>&1`], {
      cwd: up,
      env: gitEnv(),
      stdout: "ignore",
      stderr: "ignore",
    });
    const failures: string[] = [];
    try {
      mkdirSync(join(tmp.path, "clones"));
      for (let i = 0; i < 40; i++) {
        const dest = join(tmp.path, "clones", `c${i}`);
        try {
          await backendFor(up).clone(up, dest, { ref: null, signal: never() });
          await backendFor(up).update(dest, up, { ref: null, signal: never() });
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    } finally {
      writeFileSync(join(tmp.path, "stop-repacking"), ""); // the loop ends after its round: no git left running in the source
      await loop.exited;
    }
    expect(failures).toEqual([]);
    for (let i = 0; i < 40; i += 13) expect(git(join(tmp.path, "clones", `c${i}`), "fsck", "--no-dangling")).toBe("");
  }, 240_000);
});
