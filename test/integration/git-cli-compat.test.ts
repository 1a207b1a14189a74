// Repositories written by our in-process transports are ordinary git
// repositories: the git CLI reads, verifies and keeps working with them.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { bareCopy, commit, git, gitAsync, headSha, makeRepo, tag, tempDir } from "../helpers/git-fixtures.ts";
import { startGitHttpServer } from "../helpers/git-http-server.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };

beforeEach(() => {
  tmp = tempDir("grex-git-compat-");
});
afterEach(() => tmp.cleanup());

/** `git fsck` must find nothing to complain about, and `git status` must run cleanly. */
function expectHealthy(dir: string): void {
  expect(git(dir, "fsck", "--full", "--no-dangling")).toBe("");
  expect(git(dir, "status", "--porcelain")).toBe("");
}

/** Some history with nested directories, renames and deletions. */
function churn(work: string, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    commit(
      work,
      {
        [`dir${i % 3}/sub${i % 2}/file${i}.txt`]: `content ${i}\n`,
        [`dir${(i + 1) % 3}/shared.txt`]: `shared ${i}\n`,
        [`dir${i % 3}/sub${i % 2}/file${i - 2}.txt`]: i % 4 === 0 ? null : `rewritten ${i}\n`,
      },
      `commit ${i}`,
    );
  }
}

test("git accepts a repository cloned and incrementally updated by the local transport", async () => {
  const work = join(tmp.path, "up");
  makeRepo(work, { "README.md": "hello\n" });
  churn(work, 0, 5);
  const dest = join(tmp.path, "dest");
  const b = backendFor(work);
  await b.clone(work, dest, { ref: null, signal: never() });
  expectHealthy(dest);
  expect(git(dest, "rev-parse", "HEAD^{tree}")).toBe(git(work, "rev-parse", "HEAD^{tree}"));

  for (let round = 1; round <= 3; round++) {
    churn(work, round * 10, 10);
    tag(work, `r${round}`, `round ${round}`);
    git(work, "branch", "-f", `side${round}`, "HEAD~3");
    const r = await b.update(dest, work, { ref: null, signal: never() });
    expect(r.after.sha).toBe(headSha(work));
    expectHealthy(dest);
    expect(git(dest, "rev-parse", "HEAD^{tree}")).toBe(git(work, "rev-parse", "HEAD^{tree}"));
    expect(git(dest, "rev-parse", `r${round}`)).toBe(git(work, "rev-parse", `r${round}`));
  }
  // git itself can keep fetching into it.
  commit(work, { "after.txt": "x\n" }, "after");
  git(dest, "pull", "--quiet", "--ff-only");
  expect(headSha(dest)).toBe(headSha(work));
  expectHealthy(dest);
});

test("git accepts a repository cloned and updated over HTTP, and our server serves the git CLI", async () => {
  const work = join(tmp.path, "up");
  makeRepo(work, { "README.md": "hello\n" });
  churn(work, 0, 5);
  const root = join(tmp.path, "srv");
  mkdirSync(root);
  bareCopy(work, join(root, "r.git"));
  const srv = await startGitHttpServer(root);
  try {
    const url = `${srv.url}/r.git`;
    const dest = join(tmp.path, "dest");
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
    expectHealthy(dest);
    churn(work, 10, 10);
    git(work, "push", "--quiet", join(root, "r.git"), "main");
    const r = await backendFor(url).update(dest, url, { ref: null, signal: never() });
    expect(r.after.sha).toBe(headSha(work));
    expectHealthy(dest);

    // The git CLI clones and fetches from the same server.
    await gitAsync(tmp.path, "clone", "--quiet", url, "cli");
    expect(headSha(join(tmp.path, "cli"))).toBe(headSha(work));
    commit(work, { "more.txt": "m\n" }, "more");
    git(work, "push", "--quiet", join(root, "r.git"), "main");
    await gitAsync(join(tmp.path, "cli"), "pull", "--quiet", "--ff-only");
    expect(headSha(join(tmp.path, "cli"))).toBe(headSha(work));
  } finally {
    await srv.stop();
  }
});
