// Racy git (git's Documentation/technical/racy-git.txt): an index entry whose
// stat data matches its file proves nothing when the file may have changed in
// the same timestamp window the index was written in, so git re-hashes every
// entry whose mtime is not older than the index file (read-cache.c
// is_racy_timestamp, ie_match_stat). git as built for Linux compares whole
// seconds there (no USE_NSEC), so "the same window" is the index's second.
//
// The entries below are made deterministic by writing the index and setting
// the timestamps directly: an entry whose stat data is exactly its file's
// while its id is another content's (what a same-size edit within one clock
// tick leaves), against an index file written later in the same second, in a
// later second, or at the same instant. grex's dirty verdict must be git's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor, workTreeGitdir } from "../../src/core/git/backend.ts";
import { indexVersionOf, parseIndex, serializeIndex } from "../../src/core/git/objects/index-file.ts";
import { commit, git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let repos = 0;
beforeAll(() => {
  tmp = tempDir("grex-racy-");
});
afterAll(() => tmp.cleanup());

/** `git status --porcelain` that leaves the index alone (no opportunistic refresh written back). */
function gitStatus(dir: string, indexFile?: string): string {
  const env: Record<string, string> = { ...gitEnv(), GIT_OPTIONAL_LOCKS: "0" };
  if (indexFile) env.GIT_INDEX_FILE = indexFile;
  const p = Bun.spawnSync(["git", "status", "--porcelain"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  return p.stdout.toString().trim();
}

/**
 * What git says when it may trust no stat data: the same index, its file's
 * mtime set to 1 s after the epoch, so every entry is racy and re-hashed.
 * The content verdict, whatever the clock did.
 */
function gitContentStatus(dir: string): string {
  const copy = join(tmp.path, `index-copy-${repos++}`);
  copyFileSync(join(dir, ".git", "index"), copy);
  utimesSync(copy, 1, 1);
  return gitStatus(dir, copy);
}

const grexDirty = (dir: string): Promise<boolean> => backendFor(dir).isDirty(dir, { gitdir: workTreeGitdir(dir) as string });

/** Second `s`, fraction `ns` (nanoseconds), as the seconds utimes takes (exact to the microsecond). */
const at = (s: number, ns: number): number => s + ns / 1e9;

/**
 * A clean clone whose `f.txt` (committed as "aaaa") is rewritten to `now`
 * (same size) while its index entry keeps the committed id and takes the
 * file's exact stat data, mtime `s`.100 ms; the index file's mtime is then
 * `indexAt`.
 */
function racyRepo(now: string, indexAt: (s: number) => number): { dir: string; s: number } {
  const dir = join(tmp.path, `r${repos++}`);
  makeRepo(dir, { "f.txt": "aaaa\n", "g.txt": "g\n" });
  return { dir, s: makeRacy(dir, now, indexAt) };
}

/** `racyRepo`'s entry made in the work tree `dir`; returns the entry's second. */
function makeRacy(dir: string, now: string, indexAt: (s: number) => number): number {
  const s = Math.floor(Date.now() / 1000) - 100; // a second well in the past: nothing the clock does now can touch it
  writeFileSync(join(dir, "f.txt"), now);
  utimesSync(join(dir, "f.txt"), at(s, 100_000_000), at(s, 100_000_000));
  const st = statSync(join(dir, "f.txt"), { bigint: true });
  const indexFile = join(dir, ".git", "index");
  const entries = parseIndex(readFileSync(indexFile)) ?? [];
  const e = entries.find((x) => x.path === "f.txt");
  if (!e) throw new Error("no entry for f.txt");
  Object.assign(e, {
    size: Number(st.size),
    mtimeSeconds: Number(st.mtimeNs / 1_000_000_000n),
    mtimeNanoseconds: Number(st.mtimeNs % 1_000_000_000n),
    ctimeSeconds: Number(st.ctimeNs / 1_000_000_000n),
    ctimeNanoseconds: Number(st.ctimeNs % 1_000_000_000n),
    ino: Number(st.ino % 2n ** 32n),
    dev: Number(st.dev % 2n ** 32n),
  });
  writeFileSync(indexFile, serializeIndex(entries, undefined, indexVersionOf(indexFile)));
  utimesSync(indexFile, indexAt(s), indexAt(s));
  return s;
}

describe("racy entries: grex's dirty verdict is git's", () => {
  test("the index written later in the entry's second: git re-hashes the entry and sees the edit", async () => {
    const { dir } = racyRepo("bbbb\n", (s) => at(s, 600_000_000));
    expect(gitStatus(dir)).toBe("M f.txt");
    expect(await grexDirty(dir)).toBe(true);
  });

  test("the same, the content unchanged: clean for both", async () => {
    const { dir } = racyRepo("aaaa\n", (s) => at(s, 600_000_000));
    expect(gitStatus(dir)).toBe("");
    expect(await grexDirty(dir)).toBe(false);
  });

  test("the index written at the entry's very instant: racy for both", async () => {
    const { dir } = racyRepo("bbbb\n", (s) => at(s, 100_000_000));
    expect(gitStatus(dir)).toBe("M f.txt");
    expect(await grexDirty(dir)).toBe(true);
  });

  test("the index written in a later second: the stat data is trusted, by both", async () => {
    const { dir } = racyRepo("bbbb\n", (s) => at(s + 1, 0));
    expect(gitStatus(dir)).toBe("");
    expect(await grexDirty(dir)).toBe(false);
    expect(gitContentStatus(dir)).toBe("M f.txt"); // what the content says: the stat data lies, as built
  });
});

describe("an index grex rewrites keeps a racy entry suspect", () => {
  test("a checkout carrying a racily clean entry over smudges it (size 0), as git's write_index does", async () => {
    // Once the new index is written in a later second, the entry would no longer be racy, and an
    // edit its stat data hides would be clean to git and grex for good; git zeroes the size of such
    // an entry when it writes an index, so it is hashed again.
    const up = join(tmp.path, `up${repos++}`);
    makeRepo(up, { "f.txt": "aaaa\n", "g.txt": "g\n" });
    const dir = join(tmp.path, `r${repos++}`);
    await backendFor(up).clone(up, dir, { ref: null, signal: new AbortController().signal });
    makeRacy(dir, "bbbb\n", (s) => at(s, 600_000_000));
    expect(gitStatus(dir)).toBe("M f.txt");
    commit(up, { "g.txt": "g2\n" }, "g2");
    await backendFor(up).update(dir, up, { ref: null, signal: new AbortController().signal });
    expect(readFileSync(join(dir, "g.txt"), "utf8")).toBe("g2\n");
    const e = (parseIndex(readFileSync(join(dir, ".git", "index"))) ?? []).find((x) => x.path === "f.txt");
    expect(e?.size).toBe(0);
    expect(gitStatus(dir)).toBe("M f.txt");
    expect(await grexDirty(dir)).toBe(true);
  });
});

describe("an edit git's stat check misses: grex goes by the content", () => {
  test("a same-size edit with the mtime put back, in the second of the entry's ctime", async () => {
    // git compares whole seconds of ctime (no USE_NSEC): an edit in the second the entry's ctime
    // was taken in, with the mtime put back, keeps every field git compares. grex compares the
    // nanoseconds too and hashes the file; the content git reads when it trusts no stat data agrees.
    for (let attempt = 0; ; attempt++) {
      const dir = join(tmp.path, `r${repos++}`);
      makeRepo(dir, { "f.txt": "aaaa\n", "g.txt": "g\n" });
      const s = Math.floor(Date.now() / 1000) - 100;
      const path = join(dir, "f.txt");
      await Bun.sleep(1000 - (Date.now() % 1000) + 5); // the start of a second: the steps below fit in it
      utimesSync(path, s, s); // mtime well in the past, ctime now
      // The entry takes that stat data (ctime: this second) in an index written after it: not racy (its mtime is s).
      git(dir, "update-index", "--refresh");
      const before = statSync(path, { bigint: true });
      writeFileSync(path, "bbbb\n");
      utimesSync(path, s, s);
      const after = statSync(path, { bigint: true });
      if (before.ctimeNs / 1_000_000_000n !== after.ctimeNs / 1_000_000_000n) {
        if (attempt < 9) continue; // crossed a second boundary: git would see the ctime change; try again
        throw new Error("could not edit within one second ten times running");
      }
      const plain = gitStatus(dir);
      expect(["", "M f.txt"]).toContain(plain); // "" on git built without USE_NSEC (Linux's default)
      expect(gitContentStatus(dir)).toBe("M f.txt");
      expect(await grexDirty(dir)).toBe(true);
      break;
    }
  });
});
