// The git backend against real repositories over both in-process transports:
// a local path and the loopback smart-HTTP server.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CancelledError, GrexError } from "../../src/core/base/errors.ts";
import { backendFor, type GitBackend, readHeadSync } from "../../src/core/git/backend.ts";
import { bareCopy, commit, countObjects, currentBranch, git, headSha, makeRepo, pushAll, tag, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";

const never = () => new AbortController().signal;

/** Files of the upstream's first commit. */
const FILES = { "README.md": "hello\n", "src/a.txt": "a1\n", "src/b.txt": "b1\n" };

interface Upstream {
  /** Work tree where the test makes upstream commits. */
  work: string;
  url: string;
  /** Make the work tree's branches and tags visible at `url`. */
  publish(): void;
}

type Transport = "local" | "http";

let server: GitHttpServer;
let serveRoot: { path: string; cleanup: () => void };

beforeAll(async () => {
  serveRoot = tempDir("grex-git-serve-");
  server = await startGitHttpServer(serveRoot.path);
});

afterAll(async () => {
  await server.stop();
  serveRoot.cleanup();
});

let tmp: { path: string; cleanup: () => void };
let n = 0;

beforeEach(() => {
  tmp = tempDir("grex-git-backend-");
});

afterEach(() => {
  tmp.cleanup();
});

function makeUpstream(transport: Transport): Upstream {
  const work = join(tmp.path, "upstream");
  makeRepo(work, FILES);
  commit(work, { "src/a.txt": "a2\n" }, "second");
  tag(work, "v1", "release 1"); // annotated
  commit(work, { "src/c.txt": "c1\n" }, "third");
  tag(work, "light"); // lightweight
  git(work, "branch", "feature", "HEAD~1");
  if (transport === "local") return { work, url: work, publish: () => {} };
  const name = `repo-${process.pid}-${n++}.git`;
  const bare = join(serveRoot.path, name);
  bareCopy(work, bare);
  return { work, url: `${server.url}/${name}`, publish: () => pushAll(work, bare) };
}

function expectPackOp(err: unknown, pattern: RegExp): void {
  expect(err).toBeInstanceOf(GrexError);
  expect((err as GrexError).kind).toBe("pack_op");
  expect((err as GrexError).message).toMatch(pattern);
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the operation to fail");
}

/** Entries of `dir` other than `keep` (to spot leftover temp directories). */
const leftovers = (dir: string, keep: string[] = []) => readdirSync(dir).filter((e) => !keep.includes(e));

for (const transport of ["local", "http"] as const) {
  describe(`${transport} transport`, () => {
    let up: Upstream;
    let backend: GitBackend;
    let dest: string;

    beforeEach(() => {
      up = makeUpstream(transport);
      backend = backendFor(up.url);
      dest = join(tmp.path, "ws", "pack");
    });

    test("clones the default branch, tracking it", async () => {
      const h = await backend.clone(up.url, dest, { ref: null, signal: never() });
      expect(h).toEqual({ sha: headSha(up.work), branch: "main" });
      expect(await backend.head(dest)).toEqual(h);
      expect(readHeadSync(dest)).toEqual(h);
      expect(readFileSync(join(dest, "src", "c.txt"), "utf8")).toBe("c1\n");
      expect(await backend.isDirty(dest)).toBe(false);
      expect(await backend.remoteUrl(dest)).toBe(up.url);
      expect(git(dest, "config", "branch.main.remote")).toBe("origin");
      expect(git(dest, "config", "branch.main.merge")).toBe("refs/heads/main");
      expect(git(dest, "rev-parse", "origin/feature")).toBe(git(up.work, "rev-parse", "feature"));
      expect(git(dest, "symbolic-ref", "refs/remotes/origin/HEAD")).toBe("refs/remotes/origin/main");
      expect(git(dest, "status", "--porcelain")).toBe("");
      expect(leftovers(join(tmp.path, "ws"))).toEqual(["pack"]);
    });

    test("clones another branch by name", async () => {
      const h = await backend.clone(up.url, dest, { ref: "feature", signal: never() });
      expect(h).toEqual({ sha: git(up.work, "rev-parse", "feature"), branch: "feature" });
      expect(existsSync(join(dest, "src", "c.txt"))).toBe(false);
      expect(currentBranch(dest)).toBe("feature");
    });

    test("clones an annotated tag as a detached HEAD at the tagged commit", async () => {
      const h = await backend.clone(up.url, dest, { ref: "v1", signal: never() });
      expect(h).toEqual({ sha: git(up.work, "rev-parse", "v1^{commit}"), branch: null });
      expect(readHeadSync(dest)).toEqual(h);
      expect(currentBranch(dest)).toBeNull();
      expect(readFileSync(join(dest, "src", "a.txt"), "utf8")).toBe("a2\n");
      expect(existsSync(join(dest, "src", "c.txt"))).toBe(false);
      expect(await backend.isDirty(dest)).toBe(false);
    });

    test("clones a lightweight tag", async () => {
      const h = await backend.clone(up.url, dest, { ref: "light", signal: never() });
      expect(h).toEqual({ sha: headSha(up.work), branch: null });
    });

    test("clones a full or abbreviated sha as a detached HEAD", async () => {
      const first = git(up.work, "rev-parse", "HEAD~2");
      const h = await backend.clone(up.url, dest, { ref: first, signal: never() });
      expect(h).toEqual({ sha: first, branch: null });
      expect(readFileSync(join(dest, "src", "a.txt"), "utf8")).toBe("a1\n");
      const dest2 = join(tmp.path, "ws", "pack2");
      const h2 = await backend.clone(up.url, dest2, { ref: first.slice(0, 8), signal: never() });
      expect(h2).toEqual({ sha: first, branch: null });
    });

    test("update fast-forwards the branch to new upstream commits", async () => {
      const before = await backend.clone(up.url, dest, { ref: null, signal: never() });
      const old = headSha(up.work);
      const next = commit(up.work, { "src/a.txt": "a3\n", "src/b.txt": null, "src/deep/d.txt": "d\n" }, "fourth");
      tag(up.work, "v2");
      up.publish();
      const objectsBefore = countObjects(dest);
      const r = await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(r).toEqual({ before, after: { sha: next, branch: "main" } });
      expect(readHeadSync(dest)).toEqual(r.after);
      expect(readFileSync(join(dest, "src", "a.txt"), "utf8")).toBe("a3\n");
      expect(existsSync(join(dest, "src", "b.txt"))).toBe(false);
      expect(readFileSync(join(dest, "src", "deep", "d.txt"), "utf8")).toBe("d\n");
      expect(await backend.isDirty(dest)).toBe(false);
      expect(git(dest, "status", "--porcelain")).toBe("");
      expect(git(dest, "rev-parse", "v2")).toBe(next);
      if (transport === "local") {
        // Exactly the new objects were copied: commit, trees and blobs of `old..next`.
        const expected = git(up.work, "rev-list", "--objects", `${old}..${next}`).split("\n").length;
        expect(countObjects(dest) - objectsBefore).toBe(expected);
      }
    });

    test("an update bringing hundreds of objects stores them as one pack git accepts", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      const packsBefore = readdirSync(join(dest, ".git", "objects", "pack")).filter((f) => f.endsWith(".pack")).length;
      const many: Record<string, string> = {};
      for (let i = 0; i < 300; i++) many[`many/f${i}.txt`] = `file ${i}\n`;
      const sha = commit(up.work, many, "many files");
      up.publish();
      const r = await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(r.after.sha).toBe(sha);
      expect(readdirSync(join(dest, ".git", "objects", "pack")).filter((f) => f.endsWith(".pack")).length).toBe(packsBefore + 1);
      expect(readFileSync(join(dest, "many", "f299.txt"), "utf8")).toBe("file 299\n");
      git(dest, "fsck", "--full", "--no-dangling");
      expect(git(dest, "status", "--porcelain")).toBe("");
    });

    test("a no-op update changes nothing and does no object work", async () => {
      const h = await backend.clone(up.url, dest, { ref: null, signal: never() });
      const packs = readdirSync(join(dest, ".git", "objects", "pack")).sort();
      const objects = countObjects(dest);
      const requests = server.requests;
      const r = await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(r).toEqual({ before: h, after: h });
      expect(readdirSync(join(dest, ".git", "objects", "pack")).sort()).toEqual(packs);
      expect(countObjects(dest)).toBe(objects);
      // Over HTTP: one ref listing, no upload-pack negotiation.
      if (transport === "http") expect(server.requests - requests).toBe(1);
    });

    test("a diverged branch is an error and leaves HEAD and the work tree alone", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      const mine = commit(dest, { "src/a.txt": "mine\n" }, "local change");
      commit(up.work, { "src/a.txt": "theirs\n" }, "upstream change");
      up.publish();
      const err = await failure(backend.update(dest, up.url, { ref: null, signal: never() }));
      expectPackOp(err, /diverged/);
      expect(readHeadSync(dest)).toEqual({ sha: mine, branch: "main" });
      expect(readFileSync(join(dest, "src", "a.txt"), "utf8")).toBe("mine\n");
      expect(git(dest, "status", "--porcelain")).toBe("");
    });

    test("a branch ahead of upstream is kept as is", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      const mine = commit(dest, { "mine.txt": "x\n" }, "local only");
      const r = await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(r.after).toEqual({ sha: mine, branch: "main" });
    });

    test("update moves between a tag, a sha and the default branch", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      const v1 = git(up.work, "rev-parse", "v1^{commit}");
      let r = await backend.update(dest, up.url, { ref: "v1", signal: never() });
      expect(r.after).toEqual({ sha: v1, branch: null });
      expect(existsSync(join(dest, "src", "c.txt"))).toBe(false);
      const first = git(up.work, "rev-parse", "HEAD~2");
      r = await backend.update(dest, up.url, { ref: first.slice(0, 10), signal: never() });
      expect(r.after).toEqual({ sha: first, branch: null });
      r = await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(r.after).toEqual({ sha: headSha(up.work), branch: "main" });
      expect(readFileSync(join(dest, "src", "c.txt"), "utf8")).toBe("c1\n");
      expect(git(dest, "status", "--porcelain")).toBe("");
    });

    test("update to a missing ref fails and leaves HEAD alone", async () => {
      const h = await backend.clone(up.url, dest, { ref: null, signal: never() });
      const err = await failure(backend.update(dest, up.url, { ref: "v9", signal: never() }));
      expectPackOp(err, /^ref 'v9' not found in .+; check the tag or branch name\.$/);
      expect(readHeadSync(dest)).toEqual(h);
    });

    test("branches deleted upstream are pruned from origin/*", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      git(up.work, "branch", "-D", "feature");
      if (transport === "http") git(join(serveRoot.path, up.url.split("/").pop() as string), "branch", "-D", "feature");
      await backend.update(dest, up.url, { ref: null, signal: never() });
      expect(() => git(dest, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/feature")).toThrow();
    });

    test("isDirty sees modified, staged, deleted and untracked files but not ignored ones", async () => {
      await backend.clone(up.url, dest, { ref: null, signal: never() });
      const a = join(dest, "src", "a.txt");
      writeFileSync(a, "changed\n");
      expect(await backend.isDirty(dest)).toBe(true);
      writeFileSync(a, "a2\n");
      expect(await backend.isDirty(dest)).toBe(false);
      writeFileSync(join(dest, "new.txt"), "untracked\n");
      expect(await backend.isDirty(dest)).toBe(true);
      rmSync(join(dest, "new.txt"));
      rmSync(join(dest, "src", "b.txt"));
      expect(await backend.isDirty(dest)).toBe(true);
      git(dest, "checkout", "--", "src/b.txt");
      expect(await backend.isDirty(dest)).toBe(false);
      writeFileSync(join(dest, "staged.txt"), "s\n");
      git(dest, "add", "staged.txt");
      expect(await backend.isDirty(dest)).toBe(true);
      git(dest, "rm", "--cached", "--quiet", "staged.txt");
      rmSync(join(dest, "staged.txt"));
      // Ignored files do not count (the .gitignore itself is committed here).
      commit(dest, { ".gitignore": "*.log\nbuild/\n" }, "ignore logs");
      writeFileSync(join(dest, "debug.log"), "x\n");
      mkdirSync(join(dest, "build"));
      writeFileSync(join(dest, "build", "out.bin"), "x\n");
      expect(await backend.isDirty(dest)).toBe(false);
    });

    test("a clone of a missing ref leaves no directory", async () => {
      const err = await failure(backend.clone(up.url, dest, { ref: "v9", signal: never() }));
      expectPackOp(err, /^ref 'v9' not found in .+; check the tag or branch name\.$/);
      expect(existsSync(dest)).toBe(false);
      expect(existsSync(join(tmp.path, "ws"))).toBe(false); // the parent it created is gone too
    });

    test("a clone of a bad URL leaves no directory", async () => {
      const bad = transport === "local" ? join(tmp.path, "no-such-repo") : `${server.url}/no-such-repo.git`;
      mkdirSync(join(tmp.path, "ws"));
      const err = await failure(backend.clone(bad, dest, { ref: null, signal: never() }));
      expectPackOp(err, /no-such-repo/);
      expect(leftovers(join(tmp.path, "ws"))).toEqual([]);
    });

    test("a cancelled clone leaves nothing", async () => {
      const ac = new AbortController();
      ac.abort();
      const err = await failure(backend.clone(up.url, dest, { ref: null, signal: ac.signal }));
      expect(err).toBeInstanceOf(CancelledError);
      expect(existsSync(join(tmp.path, "ws"))).toBe(false);
    });

    test("clone refuses a non-empty target and accepts an empty one", async () => {
      mkdirSync(dest, { recursive: true });
      writeFileSync(join(dest, "keep.txt"), "mine\n");
      expectPackOp(await failure(backend.clone(up.url, dest, { ref: null, signal: never() })), /already exists/);
      expect(readdirSync(dest)).toEqual(["keep.txt"]);
      rmSync(join(dest, "keep.txt"));
      const h = await backend.clone(up.url, dest, { ref: null, signal: never() });
      expect(h.sha).toBe(headSha(up.work));
    });
  });
}

describe("local transport specifics", () => {
  test("file:// URLs work like paths", async () => {
    const work = join(tmp.path, "up");
    const sha = makeRepo(work, FILES);
    const url = `file://${work}`;
    const dest = join(tmp.path, "dest");
    expect(await backendFor(url).clone(url, dest, { ref: null, signal: never() })).toEqual({ sha, branch: "main" });
  });

  test("a bare source works, and an update after `git gc` upstream still copies only new objects", async () => {
    const work = join(tmp.path, "up");
    makeRepo(work, FILES);
    const bare = join(tmp.path, "up.git");
    bareCopy(work, bare);
    const dest = join(tmp.path, "dest");
    const b = backendFor(bare);
    await b.clone(bare, dest, { ref: null, signal: never() });
    const old = headSha(work);
    const next = commit(work, { "src/a.txt": "again\n" }, "again");
    pushAll(work, bare);
    git(bare, "gc", "--quiet");
    const before = countObjects(dest);
    const r = await b.update(dest, bare, { ref: null, signal: never() });
    expect(r.after.sha).toBe(next);
    // commit, root tree, src tree and blob: read out of the source's fresh pack
    expect(countObjects(dest) - before).toBe(git(work, "rev-list", "--objects", `${old}..${next}`).split("\n").length);
  });
});

describe("http transport specifics", () => {
  test("cancelling mid-clone leaves nothing", async () => {
    const work = join(tmp.path, "up");
    makeRepo(work, FILES);
    const root = tempDir("grex-git-serve-cancel-");
    bareCopy(work, join(root.path, "r.git"));
    const ac = new AbortController();
    // Abort as soon as the client asks for objects (the second request).
    const srv = await startGitHttpServer(root.path, { onRequest: (req) => req.method === "POST" && ac.abort() });
    try {
      const dest = join(tmp.path, "ws", "pack");
      const url = `${srv.url}/r.git`;
      const err = await failure(backendFor(url).clone(url, dest, { ref: null, signal: ac.signal }));
      expect(err).toBeInstanceOf(CancelledError);
      expect(existsSync(join(tmp.path, "ws"))).toBe(false);
    } finally {
      await srv.stop();
      root.cleanup();
    }
  });

  test("an unreachable server is a one-sentence pack_op error", async () => {
    const srv = await startGitHttpServer(tmp.path);
    const url = `${srv.url}/r.git`;
    await srv.stop(); // nothing listens on that port any more
    const err = await failure(backendFor(url).clone(url, join(tmp.path, "d"), { ref: null, signal: never() }));
    expectPackOp(err, /could not reach http:\/\/127\.0\.0\.1:\d+\/r\.git/);
    expect(existsSync(join(tmp.path, "d"))).toBe(false);
  });
});
