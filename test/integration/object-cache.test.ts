// The shared object cache (GREX_OBJECT_CACHE): a pack cloned through it
// borrows the cache entry's objects as `git clone --reference <entry>` does,
// compared with that clone by git itself (fsck, status, log, the alternates
// file, count-objects: no object stored twice), over smart HTTP and by path;
// a second workspace transfers only what the cache lacks (no upload-pack
// request at all when the cache is current).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { cacheEntryDir, cacheKey, entryName } from "../../src/core/git/object-cache.ts";
import { bareCopy, commit, git, gitAsync, makeRepo, pushAll, tag, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { TestWorkspace } from "../helpers/workspace.ts";
import { peakGrowth } from "../helpers/backend-memory.ts";
import { xorshift32 } from "../helpers/prng.ts";

let server: GitHttpServer;
let tmp: { path: string; cleanup: () => void };
const seen: string[] = [];
let work: string;
let served: string;

class CacheWorkspace extends TestWorkspace {
  constructor(readonly cache: string | null) {
    super("grex-cache-");
  }
  override get env(): Record<string, string | undefined> {
    return { ...super.env, GREX_OBJECT_CACHE: this.cache ?? undefined };
  }
}
const open: CacheWorkspace[] = [];

beforeAll(async () => {
  tmp = tempDir("grex-object-cache-");
  work = join(tmp.path, "work");
  makeRepo(work, { "README.md": "hello\n", "src/a.txt": "a\n" });
  commit(work, { "src/b.txt": "b\n" }, "second");
  tag(work, "v1", "release one");
  git(work, "branch", "side");
  commit(work, { "src/c.txt": "c\n" }, "third");
  served = join(tmp.path, "served", "upstream.git");
  mkdirSync(join(tmp.path, "served"));
  bareCopy(work, served);
  server = await startGitHttpServer(join(tmp.path, "served"), { onRequest: (req) => seen.push(`${req.method} ${new URL(req.url).pathname}`) });
}, 60_000);
afterAll(async () => {
  await server.stop();
  for (const w of open) w.cleanup();
  tmp.cleanup();
});

async function workspace(cache: string | null): Promise<CacheWorkspace> {
  const w = new CacheWorkspace(cache);
  open.push(w);
  expect((await w.grex("init")).code).toBe(0);
  return w;
}

const field = (out: string, k: string) => Number(new RegExp(`^${k}: (\\d+)$`, "m").exec(out)?.[1]);

describe("cache keys", () => {
  test("URLs are normalised: scheme and host case, credentials, trailing .git and /", () => {
    expect(cacheKey("HTTPS://User:pw@Example.COM/Org/Repo.git/")).toBe("https://example.com/Org/Repo");
    expect(cacheKey("https://example.com:443/org/repo")).toBe("https://example.com/org/repo");
    expect(cacheKey("git@GitHub.com:org/repo.git")).toBe("ssh://github.com/org/repo");
    expect(entryName(cacheKey("https://example.com/org/repo.git"))).toBe(entryName(cacheKey("https://a:b@EXAMPLE.com/org/repo/")));
    const name = entryName("https://example.com/../../etc/passwd");
    expect(name.startsWith(".")).toBe(false);
    expect(name).not.toContain("/");
    expect(name).not.toContain("..");
    expect(name).toMatch(/^example\.com-\.?etc-passwd-[0-9a-f]{16}\.git$|^[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{16}\.git$/);
  });
});

for (const transport of ["http", "path"] as const) {
  describe(`a clone that borrows from the cache (${transport})`, () => {
    test("is what git clone --reference <entry> makes, and a second workspace transfers nothing new", async () => {
      const cache = join(tmp.path, `cache-${transport}`);
      const url = transport === "http" ? `${server.url}/upstream.git` : served;
      const w1 = await workspace(cache);
      seen.length = 0;
      const add = await w1.grex("add", url, "up");
      expect(add.stderr).toBe("");
      expect(add.code).toBe(0);
      const entry = cacheEntryDir(cache, url);
      expect(existsSync(join(entry, "objects"))).toBe(true);
      const pack = join(w1.ws, "up");

      const ref = join(tmp.path, `ref-${transport}`);
      // By path, git would hard-link the source's objects instead of borrowing (a local clone): --no-local makes it fetch.
      await gitAsync(tmp.path, "clone", "--quiet", "--no-local", "--reference", entry, url, ref);

      for (const dir of [pack, ref]) git(dir, "fsck", "--full", "--strict");
      expect(git(pack, "status", "--porcelain")).toBe(git(ref, "status", "--porcelain"));
      expect(git(pack, "status", "--porcelain")).toBe("");
      const log = (d: string) => git(d, "log", "-1", "--format=%H %T %P %s");
      expect(log(pack)).toBe(log(ref));
      expect(git(pack, "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes", "refs/tags")).toBe(
        git(ref, "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes", "refs/tags"),
      );
      // The alternates file: one absolute line naming the entry's objects, as git writes it.
      const alt = (d: string) => readFileSync(join(d, ".git", "objects", "info", "alternates"), "utf8");
      for (const text of [alt(pack), alt(ref)]) {
        const lines = text.split("\n");
        expect(lines.length).toBe(2);
        expect(lines[1]).toBe("");
        expect(isAbsolute(lines[0] as string)).toBe(true);
        expect(realpathSync(lines[0] as string)).toBe(realpathSync(join(entry, "objects")));
      }
      expect(alt(pack)).toBe(alt(ref));
      // No object stored twice: both clones hold none of their own.
      const counts = (d: string) => git(d, "count-objects", "-v");
      for (const d of [pack, ref]) {
        expect(field(counts(d), "count")).toBe(0);
        expect(field(counts(d), "in-pack")).toBe(0);
      }
      // The entry itself is a whole repository git is happy with, its HEAD on the upstream's default branch.
      git(entry, "fsck", "--full", "--strict");
      expect(git(entry, "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "main"));
      expect(git(entry, "config", "gc.auto")).toBe("0");

      // A second workspace: the cache is current, so nothing but the ref listing goes over the wire.
      const w2 = await workspace(cache);
      seen.length = 0;
      expect((await w2.grex("add", url, "up")).code).toBe(0);
      if (transport === "http") expect(seen.filter((s) => s.startsWith("POST"))).toEqual([]);
      git(join(w2.ws, "up"), "fsck", "--full", "--strict");
      expect(log(join(w2.ws, "up"))).toBe(log(ref));

      // New upstream work: the first sync brings it into the cache, the other workspace's sync borrows it.
      const next = commit(work, { "src/d.txt": "d\n" }, "fourth");
      pushAll(work, served);
      seen.length = 0;
      const s2 = await w2.grex("sync");
      expect(s2.code).toBe(0);
      expect(git(join(w2.ws, "up"), "rev-parse", "HEAD")).toBe(next);
      if (transport === "http") expect(seen.filter((s) => s.startsWith("POST")).length).toBe(1);
      seen.length = 0;
      expect((await w1.grex("sync")).code).toBe(0);
      expect(git(pack, "rev-parse", "HEAD")).toBe(next);
      if (transport === "http") expect(seen.filter((s) => s.startsWith("POST"))).toEqual([]);
      for (const d of [pack, join(w2.ws, "up")]) {
        git(d, "fsck", "--full", "--strict");
        expect(field(counts(d), "count") + field(counts(d), "in-pack")).toBe(0);
        expect(git(d, "status", "--porcelain")).toBe("");
      }
      await gitAsync(ref, "pull", "--quiet", "--ff-only");
      expect(log(pack)).toBe(log(ref));
    }, 120_000);
  });
}

describe("doctor and update --dissociate", () => {
  test("doctor names a pack whose cache entry is gone; --dissociate copies the objects in as git repack -a -d does", async () => {
    const cache = join(tmp.path, "cache-dissociate");
    const url = `${server.url}/upstream.git`;
    const w = await workspace(cache);
    expect((await w.grex("add", url, "up")).code).toBe(0);
    expect((await w.grex("add", served, "local")).code).toBe(0);
    const ref = join(tmp.path, "ref-dissociate");
    const entry = cacheEntryDir(cache, url);
    await gitAsync(tmp.path, "clone", "--quiet", "--reference", entry, url, ref);

    const doctor = async () => ((await w.grex("doctor", "--json")).json.findings as Array<{ check: string; severity: string; pack: string | null; detail: string; auto_fixable: boolean }>).filter((f) => f.check === "alternates");
    expect(await doctor()).toEqual([{ check: "alternates", severity: "ok", pack: null, detail: "ok", auto_fixable: false }]);
    renameSync(cache, `${cache}-away`);
    const broken = await doctor();
    expect(broken.map((f) => `${f.pack} ${f.severity}`).sort()).toEqual(["local error", "up error"]);
    expect(broken[0]?.detail).toContain("does not exist");
    // Without the entry there is nothing to copy from: one sentence, nothing changed.
    const failed = await w.grex("update", "--dissociate");
    expect(failed.code).not.toBe(0);
    expect(existsSync(join(w.ws, "up", ".git", "objects", "info", "alternates"))).toBe(true);
    renameSync(`${cache}-away`, cache);

    const r = await w.grex("update", "--dissociate", "--json");
    expect(r.code).toBe(0);
    expect((r.json.dissociated as Array<{ id: string }>).map((d) => d.id).sort()).toEqual(["local", "up"]);
    // git's own way on the reference clone, for comparison.
    git(ref, "repack", "-a", "-d", "-q");
    rmSync(join(ref, ".git", "objects", "info", "alternates"));
    renameSync(cache, `${cache}-gone`);
    try {
      for (const d of [join(w.ws, "up"), join(w.ws, "local"), ref]) {
        expect(existsSync(join(d, ".git", "objects", "info", "alternates"))).toBe(false);
        git(d, "fsck", "--full", "--strict");
        expect(git(d, "status", "--porcelain")).toBe("");
      }
      const inPack = (d: string) => field(git(d, "count-objects", "-v"), "in-pack");
      expect(inPack(join(w.ws, "up"))).toBe(inPack(ref));
      expect(git(join(w.ws, "up"), "log", "-1", "--format=%H")).toBe(git(ref, "log", "-1", "--format=%H"));
      expect(await doctor()).toEqual([{ check: "alternates", severity: "ok", pack: null, detail: "ok", auto_fixable: false }]);
      // A second run has nothing left to do.
      expect(((await w.grex("update", "--dissociate", "--json")).json.dissociated as unknown[]).length).toBe(0);
    } finally {
      renameSync(`${cache}-gone`, cache);
    }
  }, 120_000);
});

describe("dissociate's memory", () => {
  test("the borrowed objects are packed as they are read: the peak stays well below what is copied in (all of it was held, several times over)", () => {
    // 24 incompressible 4 MiB files (96 MiB) in a repository another borrows from (git clone --shared).
    const lender = join(tmp.path, "lender");
    mkdirSync(lender);
    git(lender, "init", "-q", "-b", "main");
    const next = xorshift32(7);
    const words = new Uint32Array(1 << 20);
    for (let i = 0; i < 24; i++) {
      for (let k = 0; k < words.length; k++) words[k] = next();
      writeFileSync(join(lender, `blob${i}.bin`), words);
    }
    git(lender, "add", "-A");
    git(lender, "commit", "-q", "-m", "big");
    const borrower = join(tmp.path, "borrower");
    git(tmp.path, "clone", "-q", "--shared", lender, borrower);
    const growth = peakGrowth(tmp.path, "dissociate-peak", "core/git/dissociate.ts", "dissociate", `dissociate(${JSON.stringify(borrower)}, signal)`);
    expect(existsSync(join(borrower, ".git", "objects", "info", "alternates"))).toBe(false);
    expect(git(borrower, "fsck", "--strict")).toBe("");
    expect(git(borrower, "count-objects", "-v")).toContain("in-pack: 26"); // a commit, a tree, 24 blobs, copied in
    expect(growth).toBeLessThan(72 << 20);
  }, 120_000);
});

describe("through the system git (the backend of ssh URLs)", () => {
  test("a clone and a later update borrow from the cache entry the same way", async () => {
    const { systemGit } = await import("../../src/core/git/system-git.ts");
    const { withObjectCache } = await import("../../src/core/git/object-cache-setting.ts");
    const cache = join(tmp.path, "cache-system-git");
    const dir = join(tmp.path, "system-git-clone");
    const signal = new AbortController().signal;
    await withObjectCache(cache, () => systemGit.clone(served, dir, { ref: null, signal }));
    const entry = cacheEntryDir(cache, served);
    git(dir, "fsck", "--full", "--strict");
    git(entry, "fsck", "--full", "--strict");
    expect(git(dir, "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "main"));
    expect(realpathSync(readFileSync(join(dir, ".git", "objects", "info", "alternates"), "utf8").trim())).toBe(realpathSync(join(entry, "objects")));
    const own = () => git(dir, "count-objects", "-v");
    expect(field(own(), "count") + field(own(), "in-pack")).toBe(0);
    const next = commit(work, { "src/sys.txt": "sys\n" }, "by the system git");
    pushAll(work, served);
    const moved = await withObjectCache(cache, () => systemGit.update(dir, served, { ref: null, signal }));
    expect(moved.after.sha).toBe(next);
    expect(git(entry, "rev-parse", "refs/remotes/origin/main")).toBe(next);
    expect(field(own(), "count") + field(own(), "in-pack")).toBe(0);
    git(dir, "fsck", "--full", "--strict");
  }, 60_000);
});

describe("the workspace setting", () => {
  test(".grex/object-cache names the cache when GREX_OBJECT_CACHE is unset", async () => {
    const w = await workspace(null);
    mkdirSync(join(w.ws, ".grex"), { recursive: true });
    writeFileSync(join(w.ws, ".grex", "object-cache"), "# shared objects\n../shared-cache\n");
    const r = await w.grex("add", served, "up");
    expect(r.code).toBe(0);
    const entry = cacheEntryDir(join(w.root, "shared-cache"), served);
    expect(existsSync(entry)).toBe(true);
    expect(realpathSync(readFileSync(join(w.ws, "up", ".git", "objects", "info", "alternates"), "utf8").trim())).toBe(realpathSync(join(entry, "objects")));
    // status --fetch (a verb that takes no workspace lock) goes through the same entry.
    const next = commit(work, { "src/e.txt": "e\n" }, "fifth");
    pushAll(work, served);
    expect((await w.grex("status", "--fetch")).code).not.toBe(2);
    expect(git(entry, "rev-parse", "refs/remotes/origin/main")).toBe(next);
    expect(git(join(w.ws, "up"), "rev-parse", "refs/remotes/origin/main")).toBe(next);
    expect(field(git(join(w.ws, "up"), "count-objects", "-v"), "count")).toBe(0);
  }, 60_000);

  test("without a cache, nothing borrows", async () => {
    const w = await workspace(null);
    expect((await w.grex("add", served, "up")).code).toBe(0);
    expect(existsSync(join(w.ws, "up", ".git", "objects", "info", "alternates"))).toBe(false);
  }, 60_000);
});
