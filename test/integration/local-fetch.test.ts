// Fetching many commits from a local repository: the missing objects are read
// natively and stored as one new pack (few become loose objects). Compared
// with `git pull --ff-only` on the same clone, and checked by `git fsck`.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { runBoth } from "../helpers/differential.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";
import { type FastCommit, fastImport } from "../helpers/history.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir("grex-local-fetch-");
});
afterAll(() => tmp.cleanup());

for (const count of [3, 300]) {
  test(`${count} new upstream commits: the same result as git pull --ff-only, and fsck-clean`, async () => {
    const up = join(tmp.path, `up-${count}`);
    makeRepo(up, { "README.md": "r\n", "src/a/one.txt": "1\n", "bin/tool": "#!/bin/sh\n" });
    const clone = join(tmp.path, `clone-${count}`);
    await backendFor(up).clone(up, clone, { ref: null, signal: never() });
    const base = git(up, "rev-parse", "HEAD");
    const commits: FastCommit[] = [];
    for (let i = 0; i < count; i++) {
      commits.push({ branch: "main", from: i === 0 ? base : `:${i}`, date: 1_700_000_000 + i, file: { path: `src/d${i % 7}/f${i % 40}.txt`, content: `${i}\n`.repeat(1 + (i % 50)) } });
    }
    fastImport(up, commits);
    git(up, "reset", "-q", "--hard", "main");
    const work = join(tmp.path, `w-${count}`);
    mkdirSync(work);
    const both = await runBoth(
      clone,
      work,
      async (d) => {
        await backendFor(up).update(d, up, { ref: null, signal: never() });
      },
      (d) => git(d, "pull", "-q", "--ff-only"),
    );
    expect(both.grex).toEqual(both.git);
    expect(both.grex.head).toBe(git(up, "rev-parse", "HEAD"));
    expect(git(join(work, "grex"), "fsck", "--strict", "--no-dangling")).toBe("");
    const packs = readdirSync(join(work, "grex", ".git", "objects", "pack")).filter((f) => f.endsWith(".pack"));
    expect(packs.length).toBe(count > 100 ? 1 : 0); // the clone linked loose objects; a large fetch adds one pack
  });
}
