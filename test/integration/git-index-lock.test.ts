// The index is git's file as much as grex's: while a git command in a pack
// holds `index.lock` (here `git commit -a`, waiting on its editor), `grex
// sync` must report the lock in one sentence and change nothing — not the
// lock, not the index, not a file, not HEAD — and once git lets go, the next
// sync moves the pack and leaves it as git expects (`git fsck`, `git status`).
// A lock a killed grex left behind is recognised by its note and removed; one
// without a note (git's) never is.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, snapshot, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-index-lock-");
afterAll(() => t.cleanup());

/** Start `git commit -a` in `dir`, whose editor waits until `release` exists and then leaves the message empty (git aborts). */
async function gitHoldingIndexLock(dir: string, release: string): Promise<{ exited: Promise<number> }> {
  const editor = join(t.root, "editor.sh");
  // The editor says it started (git has written its lock by then), waits, then leaves the message empty.
  writeFileSync(editor, `#!/bin/sh\n: > '${release}.started'\nwhile [ ! -e '${release}' ]; do sleep 0.05; done\n: > "$1"\n`, { mode: 0o755 });
  const p = Bun.spawn(["git", "commit", "-a", "--allow-empty"], {
    cwd: dir,
    env: { ...t.env, GIT_EDITOR: editor },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  for (let i = 0; i < 2000 && !existsSync(`${release}.started`); i++) await Bun.sleep(5);
  expect(existsSync(join(dir, ".git", "index.lock"))).toBe(true);
  return { exited: p.exited };
}

describe("git holds index.lock in a pack while grex syncs", () => {
  const up = t.repo("tools", { "README.md": "one\n", "bin/run.sh": "echo one\n", "old.txt": "goes away\n" });

  test("grex reports the lock, changes nothing, and the next sync after git lets go moves the pack cleanly", async () => {
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", up)).code).toBe(0);
    const dir = join(t.ws, "tools");
    const before = git(dir, "rev-parse", "HEAD");
    git(up, "rm", "-q", "old.txt");
    const target = t.commit(up, { "README.md": "two\n", "new.txt": "arrives\n" }, "two");

    const release = join(t.root, "release");
    const holder = await gitHoldingIndexLock(dir, release);
    const lock = join(dir, ".git", "index.lock");
    const lockBefore = statSync(lock);
    const lockBytes = readFileSync(lock); // git has written the index it will commit into its lock already
    const indexBefore = readFileSync(join(dir, ".git", "index"));
    // The work tree (the fetch may bring objects and move origin's refs: that is not the checkout).
    const workTree = () => Object.fromEntries(Object.entries(snapshot(dir)).filter(([p]) => p !== ".git" && !p.startsWith(".git/")));
    const treeBefore = workTree();

    const r = await t.grex("sync", "--json");
    expect(r.code).toBe(4); // a failed pack
    const row = (r.json.packs as Array<{ id: string; result: string; message: string }>).find((p) => p.id === "tools");
    expect(row?.result).toBe("failed");
    const message = row?.message ?? JSON.stringify(r.json);
    expect(message).toContain(lock);
    expect(message).toContain(`'${lock}' exists: another git or grex process is working in`);
    expect(message).toContain(`remove '${lock}' if no git or grex process is running`);
    expect(message.split(/\.\s/).length).toBe(1); // one sentence
    // Nothing changed: git's lock (same file, same bytes), the index, the work tree, HEAD; no move journaled.
    expect(statSync(lock).ino).toBe(lockBefore.ino);
    expect(readFileSync(lock).equals(lockBytes)).toBe(true);
    expect(readFileSync(join(dir, ".git", "index")).equals(indexBefore)).toBe(true);
    expect(workTree()).toEqual(treeBefore);
    expect(git(dir, "rev-parse", "HEAD")).toBe(before);
    expect(existsSync(join(dir, ".git", "grex-checkout.json"))).toBe(false);

    // git lets go (an empty message: it aborts, as a user closing the editor would).
    writeFileSync(release, "");
    await holder.exited;
    expect(existsSync(lock)).toBe(false);
    expect(git(dir, "status", "--porcelain")).toBe("");

    const again = await t.grex("sync", "--json");
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" });
    expect(git(dir, "rev-parse", "HEAD")).toBe(target);
    expect(git(dir, "status", "--porcelain", "--untracked-files=all")).toBe("");
    git(dir, "fsck", "--no-progress", "--strict");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("two\n");
    expect(existsSync(join(dir, "old.txt"))).toBe(false);
    expect(existsSync(lock)).toBe(false);
    expect(existsSync(`${lock}.grex`)).toBe(false);
  }, 120_000);

  test("a lock a killed grex left (its note names a dead process) is removed; the sync goes on", async () => {
    const dir = join(t.ws, "tools");
    const target = t.commit(up, { "README.md": "three\n" }, "three");
    const lock = join(dir, ".git", "index.lock");
    // What a grex killed while writing the index leaves: the lock and its note naming a process that is gone.
    const dead = Bun.spawnSync(["true"]).pid;
    writeFileSync(lock, "");
    const st = statSync(lock);
    writeFileSync(`${lock}.grex`, JSON.stringify({ pid: dead, start: "1", ino: st.ino, dev: st.dev }));
    const r = await t.grex("sync", "--json");
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(git(dir, "rev-parse", "HEAD")).toBe(target);
    expect(git(dir, "status", "--porcelain")).toBe("");
    expect(existsSync(lock)).toBe(false);
    expect(existsSync(`${lock}.grex`)).toBe(false);
  }, 120_000);

  test("a note that names another file (a stale note beside git's new lock) does not make git's lock grex's", async () => {
    const dir = join(t.ws, "tools");
    t.commit(up, { "README.md": "four\n" }, "four");
    const lock = join(dir, ".git", "index.lock");
    const dead = Bun.spawnSync(["true"]).pid;
    writeFileSync(`${lock}.grex`, JSON.stringify({ pid: dead, start: "1", ino: 1, dev: 1 }));
    writeFileSync(lock, ""); // git's: created after the note, another inode than the note says
    const head = git(dir, "rev-parse", "HEAD");
    const r = await t.grex("sync", "--json");
    expect(r.code).not.toBe(0);
    expect(JSON.stringify(r.json)).toContain("exists: another git or grex process is working in");
    expect(existsSync(lock)).toBe(true);
    expect(git(dir, "rev-parse", "HEAD")).toBe(head);
    // The user removes it, as the sentence says; then the sync goes through.
    Bun.spawnSync(["rm", "-f", lock, `${lock}.grex`]);
    expect((await t.grex("sync", "--json")).code).toBe(0);
    expect(git(dir, "status", "--porcelain")).toBe("");
  }, 120_000);
});
