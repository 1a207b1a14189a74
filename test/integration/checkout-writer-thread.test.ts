// A first checkout of a large tree hands its file writes to a second thread
// (worktree/file-writer.ts) while the main thread reads the next blobs. What
// it leaves must be what git's checkout leaves: the same files, modes and
// links, and an index whose stat data matches each file (git diff-files,
// which compares without refreshing, finds nothing), from source and from the
// compiled binary (which embeds the thread's module as an entry point of its
// own). A write the thread cannot make fails the checkout with the fs error.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { grexBuildCommand } from "../../scripts/compile.ts";
import { FileWriter, WRITER_THREAD_MIN_FILES, holdWriterThread, writesThroughThread } from "../../src/core/git/worktree/file-writer.ts";
import { KIND_FILE } from "../../src/core/git/worktree/write-now.ts";
import { GIT_ENV, TestWorkspace, git, snapshot } from "../helpers/workspace.ts";

const DIRS = 26;
const PER_DIR = 100; // 2,600 files: over the thread's threshold
let t: TestWorkspace;
let upstream = "";
let bin = "";

/** The upstream: many small files in directories, an executable, a symlink, and a file line-ending conversion rewrites. */
function bigRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  const lines: string[] = ["commit refs/heads/main", "committer T <t@example.com> 1700000000 +0000", "data 4", "big", ""];
  const blob = (path: string, mode: string, body: string) => {
    lines.push(`M ${mode} inline ${path}`, `data ${Buffer.byteLength(body)}`, body);
  };
  for (let d = 0; d < DIRS; d++) for (let f = 0; f < PER_DIR; f++) blob(`d${d}/f${f}.txt`, "100644", `file ${d}/${f}\n${"x".repeat((d * 7 + f) % 300)}\n`);
  blob("bin/run.sh", "100755", "#!/bin/sh\necho run\n");
  blob("link", "120000", "d0/f0.txt");
  blob(".gitattributes", "100644", "*.crlf text eol=crlf\n");
  blob("notes.crlf", "100644", "one\ntwo\n");
  const r = Bun.spawnSync(["git", "fast-import", "--quiet"], { cwd: dir, stdin: Buffer.from(`${lines.join("\n")}\n`), env: { ...process.env, ...GIT_ENV } });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  git(dir, "reset", "-q", "--hard", "main");
  return dir;
}

beforeAll(() => {
  t = new TestWorkspace("grex-writer-thread-");
  upstream = bigRepo(join(t.upstream, "big"));
  bin = join(t.root, "grex");
  const build = Bun.spawnSync(grexBuildCommand(bin), { stdout: "pipe", stderr: "pipe" });
  if (build.exitCode !== 0) throw new Error(`bun build failed: ${build.stderr.toString()}`);
}, 120_000);
afterAll(() => t.cleanup());

/** The work tree's paths, kinds and contents, without `.git`. */
const workTree = (dir: string) => Object.fromEntries(Object.entries(snapshot(dir)).filter(([p]) => p !== ".git" && !p.startsWith(".git/")));

/** The clone as git's checkout leaves it: files, modes, links, index, status. */
function expectAsGit(clone: string, reference: string): void {
  expect(workTree(clone)).toEqual(workTree(reference));
  expect(git(clone, "ls-files", "-s")).toBe(git(reference, "ls-files", "-s"));
  expect(git(clone, "diff-files")).toBe(""); // the index as grex wrote it: each file's own stat data
  expect(git(clone, "status", "--porcelain")).toBe("");
  expect(lstatSync(join(clone, "bin/run.sh")).mode & 0o111).not.toBe(0);
  expect(readlinkSync(join(clone, "link"))).toBe("d0/f0.txt");
  expect(readFileSync(join(clone, "notes.crlf"), "utf8")).toBe("one\r\ntwo\r\n");
}

describe("a first checkout through the file-writer thread", () => {
  test("the tree is over the thread's threshold", () => {
    expect(DIRS * PER_DIR).toBeGreaterThanOrEqual(WRITER_THREAD_MIN_FILES);
  });

  test("from source (in process): the clone equals git's", async () => {
    const reference = join(t.root, "git-clone");
    git(t.root, "clone", "-q", upstream, reference);
    expect((await t.grex("init")).code).toBe(0);
    const r = await t.grex("add", upstream, "big");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expectAsGit(join(t.ws, "big"), reference);
  });

  test("the compiled binary: the clone equals git's", () => {
    const ws = join(t.root, "ws-bin");
    mkdirSync(ws);
    const env = { ...t.env };
    for (const argv of [["init"], ["add", upstream, "big"]]) {
      const r = Bun.spawnSync([bin, ...argv], { cwd: ws, env, stdout: "pipe", stderr: "pipe" });
      expect(r.stderr.toString()).toBe("");
      expect(r.exitCode).toBe(0);
    }
    expectAsGit(join(ws, "big"), join(t.root, "git-clone"));
  });

  test("a write the thread cannot make fails the checkout with the fs error, naming the file", async () => {
    const writer = new FileWriter(join(t.root, "no-such-dir"));
    try {
      for (let i = 0; i < 300; i++) await writer.add(`f${i}`, KIND_FILE, Buffer.from(`${i}\n`), () => {});
      const failed = await writer.finish().then(
        () => null,
        (err: NodeJS.ErrnoException) => err,
      );
      expect(failed?.code).toBe("ENOENT");
      expect(failed?.path).toBe(join(t.root, "no-such-dir", "f0"));
    } finally {
      await writer.close();
    }
  });

  test("a directory the thread cannot make fails the checkout with the fs error, naming the directory; no file after it is written", async () => {
    const root = join(t.root, "dirs-fail");
    mkdirSync(root);
    writeFileSync(join(root, "taken"), "a file where a directory goes\n");
    const writer = new FileWriter(root);
    try {
      writer.makeDirs(["ok", "taken", "taken/below"]);
      writer.add("ok/a.txt", KIND_FILE, Buffer.from("a\n"), () => {});
      const failed = await writer.finish().then(
        () => null,
        (err: NodeJS.ErrnoException) => err,
      );
      expect(failed?.code).toBe("EEXIST");
      expect(failed?.path).toBe(join(root, "taken"));
      expect(existsSync(join(root, "ok"))).toBe(true);
      expect(existsSync(join(root, "ok", "a.txt"))).toBe(false);
    } finally {
      await writer.close();
    }
  });

  test("held for a run of many checkouts, the thread takes small ones too, and ends with the last release", async () => {
    expect(writesThroughThread(50)).toBe(false);
    const release = holdWriterThread();
    try {
      expect(writesThroughThread(50)).toBe(true);
      const ws = join(t.root, "ws-held");
      mkdirSync(ws);
      const small = t.repo("small", { "a.txt": "a\n", "dir/b.sh": "#!/bin/sh\n" });
      expect((await t.grexAt(ws, ["init"])).code).toBe(0);
      const r = await t.grexAt(ws, ["add", small, "small"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const reference = join(t.root, "git-small");
      git(t.root, "clone", "-q", small, reference);
      expect(workTree(join(ws, "small"))).toEqual(workTree(reference));
      expect(git(join(ws, "small"), "diff-files")).toBe("");
    } finally {
      release();
      release(); // a second call does nothing
    }
    expect(writesThroughThread(50)).toBe(false);
  });
});
