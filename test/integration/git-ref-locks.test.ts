// A git command running in a pack holds `refs/heads/main.lock` (a real
// `git update-ref --stdin` transaction, prepared and not yet committed) while
// grex syncs the pack: grex waits briefly as git would, then reports the lock
// in one sentence, never overwrites or removes it, and leaves the repository
// as git expects (work tree untouched, fsck clean); once git is done, the
// next sync moves the pack. The same holds for HEAD.lock and for the config
// manager's config.lock.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { updateThroughLock } from "../../src/core/git/layout/git-lock.ts";
import { GIT_ENV, git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let up: string;
let pack: string;
beforeEach(async () => {
  t = new TestWorkspace("grex-ref-locks-");
  expect((await t.grex("init")).code).toBe(0);
  up = t.repo("tools", { "README.md": "tools\n" });
  expect((await t.grex("add", up)).code).toBe(0);
  pack = join(t.ws, "tools");
});
afterEach(() => t.cleanup());

/** `git update-ref --stdin` holding the lock of `ref` (to be set to `value`) until told to commit or abort. */
async function gitHoldsRef(ref: string, value: string) {
  // --no-deref: HEAD's own lock, not its branch's
  const p = Bun.spawn(["git", "update-ref", "--no-deref", "--stdin"], {
    cwd: pack,
    env: { ...process.env, ...GIT_ENV },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  p.stdin.write(`start\nupdate ${ref} ${value}\nprepare\n`);
  await p.stdin.flush();
  const reader = p.stdout.getReader();
  let seen = "";
  while (!seen.includes("prepare: ok")) {
    const { value: chunk, done } = await reader.read();
    if (done) throw new Error(`git update-ref stopped: ${await new Response(p.stderr).text()}`);
    seen += new TextDecoder().decode(chunk);
  }
  reader.releaseLock();
  return {
    async finish(verb: "commit" | "abort") {
      p.stdin.write(`${verb}\n`);
      await p.stdin.end();
      expect(await p.exited).toBe(0);
    },
  };
}

function assertGitHappy(dir: string): void {
  expect(git(dir, "status", "--porcelain")).toBe("");
  git(dir, "fsck", "--no-progress");
}

test("refs/heads/main.lock held by git: grex reports it in one sentence, changes nothing, and syncs once git is done", async () => {
  const before = git(pack, "rev-parse", "HEAD");
  const next = t.commit(up, { "README.md": "tools v2\n" });
  const held = await gitHoldsRef("refs/heads/main", before);
  const lockPath = join(pack, ".git", "refs", "heads", "main.lock");
  const lockBytes = readFileSync(lockPath, "utf8");

  const r = await t.grex("sync", "--json");
  expect(r.code).toBe(4); // the pack failed; sync goes on with the others and fails at the end
  const text = `${r.stdout}\n${r.stderr}`;
  expect(text).toContain(lockPath);
  const sentence = /'[^']*main\.lock' exists[^\n"]*/.exec(text)?.[0] ?? "";
  expect(sentence).toContain("another git or grex process is working in");
  expect(sentence).toContain(`remove '${lockPath}' if no git or grex process is running`);
  expect(sentence.replace(/\.$/, "").includes(". ")).toBe(false);
  // git's lock is untouched, the branch and the work tree are where they were
  expect(readFileSync(lockPath, "utf8")).toBe(lockBytes);
  expect(git(pack, "rev-parse", "HEAD")).toBe(before);
  expect(readFileSync(join(pack, "README.md"), "utf8")).toBe("tools\n");
  assertGitHappy(pack);

  // git finishes its own transaction: its lock was never overwritten, so its commit works
  await held.finish("commit");
  expect(existsSync(lockPath)).toBe(false);
  const again = await t.grex("sync");
  expect(again.code).toBe(0);
  expect(git(pack, "rev-parse", "HEAD")).toBe(next);
  expect(readFileSync(join(pack, "README.md"), "utf8")).toBe("tools v2\n");
  assertGitHappy(pack);
});

test("HEAD.lock held by git: the same", async () => {
  const before = git(pack, "rev-parse", "HEAD");
  t.commit(up, { "README.md": "tools v2\n" });
  const held = await gitHoldsRef("HEAD", before);
  const r = await t.grex("sync");
  expect(r.code).toBe(4);
  expect(`${r.stdout}${r.stderr}`).toContain(join(pack, ".git", "HEAD.lock"));
  expect(git(pack, "rev-parse", "HEAD")).toBe(before);
  assertGitHappy(pack);
  await held.finish("abort");
  expect((await t.grex("sync")).code).toBe(0);
  assertGitHappy(pack);
});

test("a lock released within the wait is taken: grex waits, as git does", async () => {
  const file = join(t.root, "file");
  writeFileSync(file, "old\n");
  writeFileSync(`${file}.lock`, "someone else's\n");
  // another process removes its lock shortly
  const other = Bun.spawn(["sh", "-c", `sleep 0.05; rm -f '${file}.lock'`]);
  updateThroughLock(file, () => "new\n", { timeoutMs: 10_000 });
  await other.exited;
  expect(readFileSync(file, "utf8")).toBe("new\n");
  expect(existsSync(`${file}.lock`)).toBe(false);
});
