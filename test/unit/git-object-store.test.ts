// The native object reader agrees with git on every object of a repository:
// loose, packed whole, and packed as offset and ref deltas (a thin pack's
// bases, an aggressive gc's long delta chains).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ObjectStore, writeLooseObjects } from "../../src/core/git/objects/object-store.ts";
import { fastImportStream } from "../../bench/fixtures/repos.ts";
import { git, gitEnv } from "../helpers/git-fixtures.ts";

const root = mkdtempSync(join(tmpdir(), "grex-objstore-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function makeRepo(name: string): string {
  const dir = join(root, name);
  git(root, "init", "-q", "-b", "main", dir);
  const stream = join(root, `${name}.fi`);
  writeFileSync(stream, fastImportStream(3, { commits: 12, files: 20 }));
  const p = Bun.spawnSync(["sh", "-c", `git fast-import --quiet < "${stream}"`], { cwd: dir, env: gitEnv(), stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  git(dir, "reset", "-q", "--hard", "main");
  return dir;
}

function allObjects(dir: string): Array<{ oid: string; type: string }> {
  return git(dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    .split("\n")
    .map((l) => {
      const [oid, type] = l.split(" ");
      return { oid: oid as string, type: type as string };
    });
}

function expectSameAsGit(dir: string): void {
  const store = new ObjectStore(join(dir, ".git"));
  const objects = allObjects(dir);
  expect(objects.length).toBeGreaterThan(50);
  for (const { oid, type } of objects) {
    const got = store.read(oid);
    expect(got?.type).toBe(type as "blob");
    const want = Bun.spawnSync(["git", "cat-file", type, oid], { cwd: dir, env: gitEnv(), stdout: "pipe" }).stdout;
    expect(Buffer.compare(got?.data ?? Buffer.alloc(0), Buffer.from(want))).toBe(0);
  }
  store.close();
}

describe("ObjectStore", () => {
  test("loose objects", () => {
    const dir = makeRepo("loose");
    const packs = git(dir, "rev-parse", "--git-path", "objects/pack");
    for (const f of Bun.spawnSync(["sh", "-c", `ls ${packs}/*.pack`], { cwd: dir }).stdout.toString().trim().split("\n")) {
      Bun.spawnSync(["sh", "-c", `mv "${f}" "${f}.old" && git unpack-objects -q < "${f}.old" && rm "${f}.old" "${f.replace(/\.pack$/, ".idx")}"`], { cwd: dir, env: gitEnv() });
    }
    expect(git(dir, "count-objects")).not.toMatch(/^0 objects/);
    expectSameAsGit(dir);
  });

  test("an aggressively repacked store (long offset-delta chains)", () => {
    const dir = makeRepo("packed");
    git(dir, "repack", "-adf", "--depth=50", "--window=50");
    expect(git(dir, "verify-pack", "-v", ...Bun.spawnSync(["sh", "-c", "ls .git/objects/pack/*.idx"], { cwd: dir }).stdout.toString().trim().split("\n"))).toMatch(/chain length = [2-9]/);
    expectSameAsGit(dir);
  });

  test("ref deltas (git pack-objects without --delta-base-offset)", () => {
    const dir = makeRepo("refdelta");
    const oids = git(dir, "rev-list", "--objects", "--all").split("\n").map((l) => l.split(" ")[0]).join("\n");
    const sh = (cmd: string, stdin?: string) => {
      const p = Bun.spawnSync(["sh", "-c", cmd], { cwd: dir, env: gitEnv(), stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin), stdout: "pipe", stderr: "pipe" });
      if (p.exitCode !== 0) throw new Error(p.stderr.toString());
      return p.stdout.toString();
    };
    sh("mkdir ../refdelta-pack && git pack-objects -q --window=50 --depth=20 ../refdelta-pack/p", `${oids}\n`);
    sh("rm -f .git/objects/pack/* && mv ../refdelta-pack/* .git/objects/pack/");
    expect(sh("git verify-pack -v .git/objects/pack/*.idx")).toMatch(/chain length = 1/);
    expectSameAsGit(dir);
  });

  test("missing objects are null, trees and commits parse", () => {
    const dir = makeRepo("parse");
    const store = new ObjectStore(join(dir, ".git"));
    expect(store.read("0".repeat(40))).toBeNull();
    const head = git(dir, "rev-parse", "HEAD");
    const c = store.readCommit(head);
    expect(c?.tree).toBe(git(dir, "rev-parse", "HEAD^{tree}"));
    expect(c?.parents).toEqual([git(dir, "rev-parse", "HEAD^")]);
    const entries = store.readTree(c?.tree as string);
    expect(entries?.map((e) => `${e.mode} ${e.name} ${e.oid}`).join("\n")).toBe(
      git(dir, "ls-tree", "HEAD").split("\n").map((l) => l.replace(/ (tree|blob) /, " ").replace("\t", " ").replace(/^(\d+) (\S+) (.*)$/, "$1 $3 $2")).join("\n"),
    );
    store.close();
  });

  test("objects written loose are what git reads back (and fsck accepts)", () => {
    const src = makeRepo("loose-src");
    const dest = join(root, "loose-dest");
    git(root, "init", "-q", "--bare", dest);
    const store = new ObjectStore(join(src, ".git"));
    const objects = allObjects(src).map(({ oid }) => ({ oid, ...(store.read(oid) as NonNullable<ReturnType<ObjectStore["read"]>>) }));
    store.close();
    writeLooseObjects(dest, objects);
    writeLooseObjects(dest, objects.slice(0, 3)); // already there: skipped
    for (const { oid, type, data } of objects) {
      expect(git(dest, "cat-file", "-t", oid)).toBe(type);
      expect(Buffer.compare(Buffer.from(Bun.spawnSync(["git", "cat-file", type, oid], { cwd: dest, env: gitEnv(), stdout: "pipe" }).stdout), data)).toBe(0);
    }
    git(dest, "update-ref", "refs/heads/main", git(src, "rev-parse", "HEAD"));
    git(dest, "fsck", "--strict", "--no-dangling");
  });
});
