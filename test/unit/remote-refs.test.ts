// planRefs (src/core/git/transport/remote-refs.ts): which refs a fetch writes
// and which tips it must still fetch. A tip present but not whole (a fetch
// killed after a commit, before its tree or blobs) is fetched again, never
// taken as current, whether it comes alone or among many whole ones, which
// are checked in one walk.
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { planRefs, type RemoteRefs } from "../../src/core/git/transport/remote-refs.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-remote-refs-");
afterAll(() => tmp.cleanup());

/** A repository whose main names `base`; commits `whole` (all objects here) and `broken` (one blob deleted) on no ref. */
function repo(): { dir: string; gitdir: string; base: string; whole: string[]; broken: string } {
  const dir = join(tmp.path, `r${Math.random().toString(36).slice(2)}`);
  const base = makeRepo(dir, { "a.txt": "a\n" });
  const whole: string[] = [];
  for (let i = 0; i < 3; i++) whole.push(commit(dir, { [`w${i}.txt`]: `${i}\n` }, `w${i}`));
  git(dir, "checkout", "-q", "--detach", base);
  const broken = commit(dir, { "lost.txt": "lost\n" }, "broken");
  const blob = git(dir, "rev-parse", "HEAD:lost.txt");
  rmSync(join(dir, ".git", "objects", blob.slice(0, 2), blob.slice(2)));
  git(dir, "checkout", "-q", "--detach", base);
  git(dir, "update-ref", "-d", "refs/heads/main");
  git(dir, "update-ref", "refs/heads/main", base);
  return { dir, gitdir: join(dir, ".git"), base, whole, broken };
}

const tagsOf = (oids: string[]): RemoteRefs => ({ branches: new Map(), tags: new Map(oids.map((oid, i) => [`t${i}`, oid])), defaultBranch: null });

test("whole tips that no ref names yet are taken as here: written, nothing to fetch", () => {
  const r = repo();
  const plan = planRefs(r.gitdir, tagsOf(r.whole));
  expect(plan.missing).toEqual([]);
  expect(plan.writes.map(([ref]) => ref).sort()).toEqual(["refs/tags/t0", "refs/tags/t1", "refs/tags/t2"]);
});

test("a tip whose history lacks a blob is fetched again, alone or among whole ones", () => {
  const r = repo();
  expect(planRefs(r.gitdir, tagsOf([r.broken])).missing).toEqual([r.broken]);
  const mixed = planRefs(r.gitdir, tagsOf([...r.whole, r.broken]));
  expect(mixed.missing).toEqual([r.broken]);
  expect(mixed.writes.length).toBe(4);
  // A branch too: its tracking ref is written and its tip fetched.
  const branch = planRefs(r.gitdir, { branches: new Map([["main", r.broken], ["side", r.whole[0] as string]]), tags: new Map(), defaultBranch: "main" });
  expect(branch.missing).toEqual([r.broken]);
});
