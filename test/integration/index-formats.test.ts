// Indexes in every form git writes them (v2, v3 with extended flags, v4,
// split, with an untracked cache, sparse), written by the git CLI itself:
// grex's status must say what `git status --porcelain` says, and an update
// must leave the index as `git pull --ff-only` does.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { INTENT_TO_ADD, readIndex, SKIP_WORKTREE, serializeIndex, sharedIndexIn } from "../../src/core/git/objects/index-file.ts";
import { agreeing, dirtyVerdicts, repoState, runBoth } from "../helpers/differential.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let upstream: string;
let n = 0;
const never = () => new AbortController().signal;

beforeAll(() => {
  tmp = tempDir("grex-index-formats-");
  upstream = join(tmp.path, "up");
  const files: Record<string, string> = { "README.md": "readme\n", "é/ü.txt": "u\n" };
  for (let d = 0; d < 6; d++) for (let f = 0; f < 8; f++) files[`dir${d}/sub/file${f}.txt`] = `${d}-${f}\n`;
  makeRepo(upstream, files);
}, 60_000);
afterAll(() => tmp.cleanup());

function cloneOf(): string {
  const d = join(tmp.path, `c${n++}`);
  git(tmp.path, "clone", "--quiet", upstream, d);
  return d;
}

/** Each form: git commands that leave the index in that form (on a clean clone). */
const forms: Record<string, (d: string) => void> = {
  "v2": () => {},
  "v4 (prefix-compressed paths)": (d) => git(d, "update-index", "--index-version", "4"),
  "v3 via skip-worktree": (d) => git(d, "update-index", "--skip-worktree", "dir1/sub/file1.txt"),
  "assume-unchanged": (d) => git(d, "update-index", "--assume-unchanged", "dir2/sub/file2.txt"),
  "split index": (d) => {
    git(d, "update-index", "--split-index");
    writeFileSync(join(d, "dir3", "sub", "file3.txt"), "3-3\n"); // same content, new stat: an entry in the split part
    git(d, "update-index", "--really-refresh");
  },
  "split index with replaced and removed entries": (d) => {
    git(d, "update-index", "--split-index");
    git(d, "rm", "--quiet", "--cached", "dir4/sub/file4.txt");
    git(d, "commit", "--quiet", "-m", "drop one");
    rmSync(join(d, "dir4", "sub", "file4.txt"));
    writeFileSync(join(d, "dir0", "sub", "file0.txt"), "changed\n");
    git(d, "commit", "--quiet", "-am", "change one");
  },
  "untracked cache": (d) => {
    git(d, "config", "core.untrackedCache", "true");
    git(d, "update-index", "--untracked-cache");
    git(d, "status", "--porcelain");
  },
  "v4 with everything": (d) => {
    git(d, "update-index", "--index-version", "4");
    git(d, "update-index", "--skip-worktree", "dir1/sub/file1.txt");
    git(d, "update-index", "--assume-unchanged", "dir2/sub/file2.txt");
    git(d, "config", "core.untrackedCache", "true");
    git(d, "update-index", "--untracked-cache");
    git(d, "update-index", "--split-index");
  },
  "sparse checkout (cone)": (d) => git(d, "sparse-checkout", "set", "--cone", "dir0", "dir5"),
  "sparse index": (d) => git(d, "sparse-checkout", "set", "--cone", "--sparse-index", "dir0"),
};

/** Changes on top of each form; git decides whether the result is dirty. */
const changes: Record<string, (d: string) => void> = {
  "nothing": () => {},
  "an edit": (d) => writeFileSync(join(d, "README.md"), "edited\n"),
  "an untracked file": (d) => writeFileSync(join(d, "dir0", "new.txt"), "n"),
  "a skip-worktree file edited or deleted": (d) => {
    const p = join(d, "dir1", "sub", "file1.txt");
    if (existsSync(p)) writeFileSync(p, "local\n");
  },
  "an assume-unchanged file edited": (d) => {
    const p = join(d, "dir2", "sub", "file2.txt");
    if (existsSync(p)) writeFileSync(p, "local change, git is told not to look\n");
  },
  "intent to add": (d) => {
    writeFileSync(join(d, "later.txt"), "later\n");
    git(d, "add", "-N", "later.txt");
  },
  "a staged edit": (d) => {
    writeFileSync(join(d, "dir0", "sub", "file7.txt"), "staged\n");
    git(d, "add", "dir0/sub/file7.txt");
  },
};

for (const [form, make] of Object.entries(forms)) {
  describe(form, () => {
    for (const [change, apply] of Object.entries(changes)) {
      test(change, async () => {
        const d = cloneOf();
        make(d);
        apply(d);
        const v = await dirtyVerdicts(d, `${d}.status-cache.json`);
        expect(v).toEqual(agreeing(v));
      });
    }
  });
}

describe("the reader against git's own listing", () => {
  for (const [form, make] of Object.entries(forms)) {
    test(form, () => {
      const d = cloneOf();
      make(d);
      const read = readIndex(readFileSync(join(d, ".git", "index")), sharedIndexIn(join(d, ".git")));
      expect(read).not.toBeNull();
      const ours = (read?.entries ?? []).map((e) => `${e.mode.toString(8).padStart(6, "0")} ${e.oid} ${e.stage}\t${e.path}`).join("\n");
      // A sparse index keeps directory entries as such (040000, "dir/"); git lists them with --sparse.
      expect(ours).toBe(git(d, "-c", "core.quotepath=off", "ls-files", "--stage", "--sparse"));
    });
  }
});

describe("the writer", () => {
  test("resolves a split index into one whole index", () => {
    const d = cloneOf();
    forms["split index with replaced and removed entries"]?.(d);
    const gitdir = join(d, ".git");
    const before = git(d, "ls-files", "--stage");
    const entries = readIndex(readFileSync(join(gitdir, "index")), sharedIndexIn(gitdir))?.entries ?? [];
    writeFileSync(join(gitdir, "index"), serializeIndex(entries));
    expect(git(d, "ls-files", "--stage")).toBe(before);
    expect(git(d, "status", "--porcelain")).toBe("");
  });

  test("round-trips v3 flags and v4 paths: git lists the same entries, flags and stat data", () => {
    const d = cloneOf();
    git(d, "update-index", "--index-version", "4");
    git(d, "update-index", "--skip-worktree", "dir1/sub/file1.txt");
    git(d, "update-index", "--assume-unchanged", "dir2/sub/file2.txt");
    writeFileSync(join(d, "later.txt"), "later\n");
    git(d, "add", "-N", "later.txt");
    const gitdir = join(d, ".git");
    const before = git(d, "ls-files", "--stage", "--debug");
    const tags = git(d, "ls-files", "-v");
    const read = readIndex(readFileSync(join(gitdir, "index")), sharedIndexIn(gitdir));
    const entries = read?.entries ?? [];
    expect(entries.find((e) => e.path === "dir1/sub/file1.txt")?.flags).toBe(SKIP_WORKTREE);
    expect(entries.find((e) => e.path === "later.txt")?.flags).toBe(INTENT_TO_ADD);
    for (const version of [4, 3]) {
      const buf = serializeIndex([...entries].reverse(), undefined, version);
      expect(buf.readUInt32BE(4)).toBe(version === 4 ? 4 : 3); // extended flags need v3
      writeFileSync(join(gitdir, "index"), buf);
      expect(git(d, "ls-files", "--stage", "--debug")).toBe(before);
      expect(git(d, "ls-files", "-v")).toBe(tags);
      expect(readIndex(buf)?.entries.map((e) => [e.path, e.flags])).toEqual(entries.map((e) => [e.path, e.flags]));
    }
    // Without extended flags the writer chooses v2, as git does.
    expect(serializeIndex(entries.filter((e) => !e.flags)).readUInt32BE(4)).toBe(2);
  });
});

describe("an update keeps the index as git pull --ff-only does", () => {
  for (const form of ["v4 (prefix-compressed paths)", "split index", "v3 via skip-worktree", "untracked cache", "sparse checkout (cone)"]) {
    test(form, async () => {
      const up = join(tmp.path, `up${n++}`);
      git(tmp.path, "clone", "--quiet", upstream, up);
      const d = join(tmp.path, `src${n++}`);
      git(tmp.path, "clone", "--quiet", up, d);
      forms[form]?.(d);
      commit(up, { "dir0/sub/file0.txt": "new upstream\n", "added/x.txt": "x\n", "dir5/sub/file5.txt": null, "dir3/sub/file6.txt": "changed outside the cone\n" }, "upstream moves");
      const work = join(tmp.path, `w${n++}`);
      mkdirSync(work);
      const both = await runBoth(
        d,
        work,
        async (dir) => {
          await backendFor(up).update(dir, up, { ref: null, signal: never() });
        },
        (dir) => git(dir, "pull", "--quiet", "--ff-only"),
      );
      // Stat data differs by nature; stage, mode, id, path and flags must not.
      expect(both.grex).toEqual(both.git);
      expect(repoState(join(work, "grex")).status).toBe("");
      expect(readdirSync(join(work, "grex", ".git")).filter((f) => f.startsWith("index."))).toEqual([]);
    });
  }
});
