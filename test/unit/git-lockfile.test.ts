// git's lock files (src/core/git/layout/lockfile.ts) and the index manager
// on top of them (src/core/git/objects/index-manager.ts): exclusive creation,
// a holder waited for and then reported, never overwritten; the write lands
// whole through a rename; and the index is replaced only when it is still the
// one read.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { updateThroughLock } from "../../src/core/git/layout/git-lock.ts";
import { endNoteless, LockFile, startNoteless } from "../../src/core/git/layout/lockfile.ts";
import { commitIndex, indexChecksum, readIndexBytes, readIndexLocked } from "../../src/core/git/objects/index-manager.ts";
import { entryFor, readIndex } from "../../src/core/git/objects/index-file.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-lockfile-");
afterAll(() => tmp.cleanup());
let n = 0;
const fresh = () => {
  const d = join(tmp.path, `d${n++}`);
  mkdirSync(d, { recursive: true });
  return d;
};

describe("LockFile", () => {
  test("created exclusively: a second taker gets nothing, and the first one's lock is untouched", () => {
    const file = join(fresh(), "config");
    writeFileSync(file, "old\n");
    const a = LockFile.tryAcquire(file) as LockFile;
    expect(a).not.toBeNull();
    a.write(Buffer.from("new\n"));
    expect(LockFile.tryAcquire(file)).toBeNull();
    expect(readFileSync(`${file}.lock`, "utf8")).toBe("new\n");
    expect(readFileSync(file, "utf8")).toBe("old\n"); // not visible before commit
    a.commit();
    expect(readFileSync(file, "utf8")).toBe("new\n");
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(existsSync(`${file}.lock.grex`)).toBe(false);
  });

  test("in a directory being made (startNoteless), a lock is created exclusively with no note or start name beside it; elsewhere, and after endNoteless, with its note", () => {
    const dir = fresh();
    const file = join(dir, "index");
    startNoteless(dir);
    try {
      const a = LockFile.tryAcquire(file) as LockFile;
      expect(a).not.toBeNull();
      expect(readdirSync(dir)).toEqual(["index.lock"]); // nothing beside it
      expect(LockFile.tryAcquire(file)).toBeNull(); // still exclusive
      a.write(Buffer.from("new\n"), false);
      a.commit();
      expect(readdirSync(dir)).toEqual(["index"]);
      const b = LockFile.tryAcquire(file) as LockFile;
      b.rollback();
      expect(readdirSync(dir)).toEqual(["index"]);
      const other = join(fresh(), "index");
      const c = LockFile.tryAcquire(other) as LockFile;
      expect(existsSync(`${other}.lock.grex`)).toBe(true); // outside the directory: noted as ever
      c.rollback();
    } finally {
      endNoteless(dir);
    }
    const d = LockFile.tryAcquire(file) as LockFile;
    expect(existsSync(`${file}.lock.grex`)).toBe(true);
    d.rollback();
    expect(readdirSync(dir)).toEqual(["index"]);
  });

  test("rollback leaves the file as it was and frees the lock", () => {
    const file = join(fresh(), "index");
    writeFileSync(file, "old");
    const a = LockFile.tryAcquire(file) as LockFile;
    a.write(Buffer.from("half"));
    a.rollback();
    expect(readFileSync(file, "utf8")).toBe("old");
    expect(existsSync(`${file}.lock`)).toBe(false);
    const b = LockFile.tryAcquire(file) as LockFile;
    expect(b).not.toBeNull();
    b.rollback();
  });

  test("a lock someone else holds is waited for, and taken when they let go", async () => {
    const file = join(fresh(), "index");
    writeFileSync(`${file}.lock`, ""); // as git creates it
    setTimeout(() => rmSync(`${file}.lock`), 150);
    const lock = await LockFile.acquire(file, "the index of x", { timeoutMs: 5000 });
    lock.write(Buffer.from("mine"));
    lock.commit();
    expect(readFileSync(file, "utf8")).toBe("mine");
  });

  test("a lock held past the wait is reported in one sentence, and left where it is", async () => {
    const file = join(fresh(), "index");
    writeFileSync(`${file}.lock`, "git's bytes");
    const err = await LockFile.acquire(file, "the index of pack 'tools'", { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GrexError);
    const g = err as GrexError;
    expect(g.kind).toBe("lock");
    expect(g.message).toContain(`${file}.lock`);
    expect(g.message).toContain("the index of pack 'tools'");
    expect(g.message.trim().split(/\.\s/).length).toBe(1);
    expect(readFileSync(`${file}.lock`, "utf8")).toBe("git's bytes");
  });

  test("every family of git lock is reported in the same words: which lock, where, what to do", async () => {
    const gitdir = join(fresh(), ".git");
    mkdirSync(join(gitdir, "refs", "heads"), { recursive: true });
    const ref = join(gitdir, "refs", "heads", "main");
    writeFileSync(`${ref}.lock`, "");
    let refErr: unknown = null;
    try {
      updateThroughLock(ref, () => "0000000000000000000000000000000000000001\n", { timeoutMs: 0, where: gitdir });
    } catch (err) {
      refErr = err;
    }
    const index = join(gitdir, "index");
    writeFileSync(`${index}.lock`, "");
    const indexErr = await LockFile.acquire(index, "the index of pack 'tools'", { timeoutMs: 0 }).catch((e: unknown) => e);
    const sentence = (lock: string, what: string) =>
      `'${lock}' exists: another git or grex process is working in '${gitdir}' on ${what}; wait for it to finish, or remove '${lock}' if no git or grex process is running, then run grex again.`;
    expect((refErr as GrexError).kind).toBe("lock");
    expect((refErr as GrexError).message).toBe(sentence(`${ref}.lock`, "refs/heads/main"));
    expect((indexErr as GrexError).kind).toBe("lock");
    expect((indexErr as GrexError).message).toBe(sentence(`${index}.lock`, "the index of pack 'tools'"));
  });

  test("a lock a dead grex left is removed by its note; a live holder's never", () => {
    const file = join(fresh(), "index");
    writeFileSync(`${file}.lock`, "");
    const st = statSync(`${file}.lock`);
    const dead = Bun.spawnSync(["true"]).pid;
    writeFileSync(`${file}.lock.grex`, JSON.stringify({ pid: dead, start: "1", ino: st.ino, dev: st.dev }));
    const a = LockFile.tryAcquire(file) as LockFile;
    expect(a).not.toBeNull();
    a.rollback();
    // This process is alive: its note keeps its lock.
    const b = LockFile.tryAcquire(file) as LockFile;
    const note = JSON.parse(readFileSync(`${file}.lock.grex`, "utf8"));
    expect(note.pid).toBe(process.pid);
    expect(LockFile.tryAcquire(file)).toBeNull();
    b.rollback();
  });

  test("start names a killed grex left are removed by the next process that locks in their directory; a live one's stay", () => {
    const dir = join(fresh(), "refs", "tags");
    mkdirSync(dir, { recursive: true });
    const dead = Bun.spawnSync(["true"]).pid;
    const leftovers = [`v1.lock.grex-start-${dead}.lock`, `v2.lock.grex-start-${dead}.lock`];
    const live = `v3.lock.grex-start-${process.pid}.lock`;
    for (const n of [...leftovers, live]) writeFileSync(join(dir, n), "");
    const lockfile = join(import.meta.dir, "../../src/core/git/layout/lockfile.ts");
    const child = Bun.spawnSync([process.execPath, "-e", `const { LockFile } = await import(${JSON.stringify(lockfile)}); LockFile.tryAcquire(${JSON.stringify(join(dir, "v9"))}).rollback();`]);
    expect(child.stderr.toString()).toBe("");
    expect(child.exitCode).toBe(0);
    for (const n of leftovers) expect(existsSync(join(dir, n))).toBe(false);
    expect(existsSync(join(dir, live))).toBe(true);
  });
});

describe("the index manager", () => {
  test("commitIndex writes a whole index git reads; refuses when the index changed since it was read", async () => {
    const dir = join(tmp.path, "repo");
    makeRepo(dir, { "a.txt": "a\n", "b.txt": "b\n" });
    const gitdir = join(dir, ".git");
    const read = await readIndexLocked(gitdir, dir);
    const entries = (readIndex(read as Buffer) as { entries: ReturnType<typeof entryFor>[] }).entries.filter((e) => e.path !== "b.txt");
    // git changes the index in between: grex keeps git's.
    git(dir, "update-index", "--chmod=+x", "a.txt");
    const gits = readIndexBytes(gitdir) as Buffer;
    const err = await commitIndex(gitdir, dir, indexChecksum(read), entries).catch((e: unknown) => e);
    expect((err as GrexError).kind).toBe("lock");
    expect((readIndexBytes(gitdir) as Buffer).equals(gits)).toBe(true);
    expect(existsSync(join(gitdir, "index.lock"))).toBe(false);
    // Read again, written: git sees b.txt removed from the index, and its own chmod of a.txt kept.
    const now = await readIndexLocked(gitdir, dir);
    const kept = (readIndex(now as Buffer) as { entries: ReturnType<typeof entryFor>[] }).entries.filter((e) => e.path !== "b.txt");
    await commitIndex(gitdir, dir, indexChecksum(now), kept);
    expect(git(dir, "status", "--porcelain")).toBe("MM a.txt\nD  b.txt\n?? b.txt");
    git(dir, "fsck", "--no-progress");
  });
});
