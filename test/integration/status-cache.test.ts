// The status cache (src/core/git/worktree/status-cache.ts) may only make `status`
// faster. Whatever it holds — primed on a settled tree, written a moment ago,
// damaged, copied from another clone, or missing — every change must still
// read as dirty, and an unchanged tree as clean.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { fileStampOf, readStatusCache, SETTLED_MS, statusCacheFile } from "../../src/core/git/worktree/status-cache.ts";
import { isDirtyFast } from "../../src/core/git/worktree/worktree.ts";
import { makeRepo, git, tempDir } from "../helpers/git-fixtures.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
let upstream: string;
let n = 0;

beforeAll(() => {
  tmp = tempDir("grex-status-cache-");
  upstream = join(tmp.path, "up");
  makeRepo(upstream, {
    ".gitignore": "*.log\n",
    "README.md": "readme\n",
    "src/a.txt": "aaaa\n",
    "src/deep/b.txt": "bbbb\n",
  });
});
afterAll(() => tmp.cleanup());

async function clone(): Promise<string> {
  const d = join(tmp.path, `c${n++}`);
  await backendFor(upstream).clone(upstream, d, { ref: null, signal: never() });
  return d;
}

// Each clone's cache beside it (status keeps them under the workspace's .grex/.state).
const cachePath = (d: string) => `${d}.status-cache.json`;
const check = (d: string) => backendFor(upstream).isDirty(d, { statusCache: cachePath(d) });
const cached = (d: string) => readStatusCache(cachePath(d));
const ALL_DIRS = ["", "src", "src/deep"];

/** Give `rel` an mtime an hour back, its content unchanged: its stat data no longer matches the index, so it must be hashed. */
function touchBack(d: string, rel: string): void {
  const hourAgo = Date.now() / 1000 - 3600;
  utimesSync(join(d, rel), hourAgo, hourAgo);
}

describe("on a settled tree, with every directory remembered", () => {
  const copies: string[] = [];
  /** Settled clones whose src/a.txt was touched (same content, other mtime) before they settled. */
  const touched: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 13; i++) copies.push(await clone());
    for (let i = 0; i < 3; i++) {
      const d = await clone();
      touchBack(d, "src/a.txt");
      touched.push(d);
    }
    await Bun.sleep(SETTLED_MS + 200);
  }, 60_000);
  let next = 0;
  /** A settled clone whose cache was just primed (clean, every directory remembered). */
  async function primed(): Promise<string> {
    const d = copies[next++] as string;
    expect(await isDirtyFast(d, join(d, ".git"), { statusCache: cachePath(d) })).toBe(false);
    const cache = cached(d);
    expect(Object.keys(cache?.dirs ?? {}).sort()).toEqual(ALL_DIRS);
    expect(cache?.complete).toBe(true);
    return d;
  }

  test("a same-size edit within the same second reads as dirty", async () => {
    const d = await primed();
    writeFileSync(join(d, "src", "a.txt"), "AAAA\n");
    expect(await check(d)).toBe(true);
  });

  test("an untracked file in a nested directory reads as dirty", async () => {
    const d = await primed();
    writeFileSync(join(d, "src", "deep", "new.txt"), "n");
    expect(await check(d)).toBe(true);
  });

  test("an untracked file in a new nested directory reads as dirty", async () => {
    const d = await primed();
    mkdirSync(join(d, "src", "deep", "x", "y"), { recursive: true });
    writeFileSync(join(d, "src", "deep", "x", "y", "f"), "n");
    expect(await check(d)).toBe(true);
  });

  test("a deleted file reads as dirty", async () => {
    const d = await primed();
    rmSync(join(d, "src", "deep", "b.txt"));
    expect(await check(d)).toBe(true);
  });

  test("a mode change reads as dirty", async () => {
    const d = await primed();
    chmodSync(join(d, "src", "a.txt"), 0o755);
    expect(await check(d)).toBe(true);
  });

  test("a staged-only change reads as dirty", async () => {
    const d = await primed();
    writeFileSync(join(d, "src", "a.txt"), "staged\n");
    git(d, "add", "src/a.txt");
    writeFileSync(join(d, "src", "a.txt"), "aaaa\n");
    expect(await check(d)).toBe(true);
  });

  test("an ignored file stays clean", async () => {
    const d = await primed();
    writeFileSync(join(d, "src", "deep", "debug.log"), "x");
    expect(await check(d)).toBe(false);
    // ...and its directory is listed every time from now on: it no longer holds only tracked entries.
    expect(Object.keys(cached(d)?.dirs ?? {}).sort()).toEqual(["", "src"]);
    expect(cached(d)?.complete).toBe(false);
    writeFileSync(join(d, "src", "deep", "new.txt"), "n");
    expect(await check(d)).toBe(true);
  });

  test("a corrupt cache file gives the right answers and is replaced", async () => {
    const d = await primed();
    writeFileSync(cachePath(d), "{not json");
    expect(await check(d)).toBe(false);
    expect(Object.keys(cached(d)?.dirs ?? {}).sort()).toEqual(ALL_DIRS);
    writeFileSync(cachePath(d), JSON.stringify({ v: 1, index: "0".repeat(40), commit: null, tree: null, dirs: { src: "damaged" } }));
    writeFileSync(join(d, "src", "new.txt"), "n");
    expect(await check(d)).toBe(true);
  });

  test("damaged directory entries are never taken as a match", async () => {
    const d = await primed();
    const cache = JSON.parse(readFileSync(cachePath(d), "utf8"));
    cache.dirs = { "": "x", src: [1, 2], "src/deep": null };
    writeFileSync(cachePath(d), JSON.stringify(cache));
    writeFileSync(join(d, "src", "deep", "new.txt"), "n");
    expect(await check(d)).toBe(true);
  });

  test("a missing cache file gives the right answers and is written again", async () => {
    const d = await primed();
    rmSync(cachePath(d));
    writeFileSync(join(d, "new.txt"), "n");
    expect(await check(d)).toBe(true);
    rmSync(join(d, "new.txt"));
    rmSync(cachePath(d));
    expect(await check(d)).toBe(false);
    expect(cached(d)).not.toBeNull();
  });

  test("a cache copied from another clone (another index) is not trusted for directories", async () => {
    const a = await primed();
    const b = await primed();
    copyFileSync(cachePath(a), cachePath(b));
    writeFileSync(join(b, "src", "new.txt"), "n");
    expect(await check(b)).toBe(true);
  });

  test("a file hashed and found unchanged is remembered by its stat data, and stays clean", async () => {
    const d = touched[0] as string;
    expect(await check(d)).toBe(false);
    // (Files written in the index's own clock tick, as a fresh checkout's often are, are hashed and remembered too.)
    expect(cached(d)?.hashed["src/a.txt"]).toEqual(fileStampOf(lstatSync(join(d, "src", "a.txt"))));
    const before = statSync(cachePath(d));
    expect(await check(d)).toBe(false);
    const after = statSync(cachePath(d));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  test("a same-size edit of a remembered file reads as dirty", async () => {
    const d = touched[1] as string;
    expect(await check(d)).toBe(false);
    expect(Object.keys(cached(d)?.hashed ?? {})).toContain("src/a.txt");
    writeFileSync(join(d, "src", "a.txt"), "AAAA\n");
    expect(await check(d)).toBe(true);
  });

  test("damaged or foreign file proofs are never taken as a match", async () => {
    const d = touched[2] as string;
    expect(await check(d)).toBe(false);
    const cache = JSON.parse(readFileSync(cachePath(d), "utf8"));
    writeFileSync(join(d, "src", "a.txt"), "AAAA\n");
    const now = fileStampOf(lstatSync(join(d, "src", "a.txt")));
    for (const hashed of [{ "src/a.txt": "x" }, { "src/a.txt": [now[0], now[1], now[2]] }, [now], null]) {
      writeFileSync(cachePath(d), JSON.stringify({ ...cache, hashed }));
      expect(await check(d)).toBe(true);
    }
    // The right stamp, but recorded against another index: not trusted either.
    writeFileSync(cachePath(d), JSON.stringify({ ...cache, index: "f".repeat(40), hashed: { "src/a.txt": now } }));
    expect(await check(d)).toBe(true);
  });

  test("an unchanged tree does not rewrite the cache", async () => {
    const d = await primed();
    const before = statSync(cachePath(d));
    expect(await check(d)).toBe(false);
    const after = statSync(cachePath(d));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });
});

describe("on a tree changed moments ago", () => {
  test("directories not older than the settle window are not remembered", async () => {
    const d = await clone();
    expect(await check(d)).toBe(false);
    // Just checked out: every directory changed within the window, so none may be trusted yet.
    expect(cached(d)?.dirs).toEqual({});
    writeFileSync(join(d, "src", "deep", "new.txt"), "n");
    expect(await check(d)).toBe(true);
  });

  test("a file hashed within the settle window is not remembered", async () => {
    const d = await clone();
    touchBack(d, "src/a.txt"); // its ctime is now: an edit in the same tick could keep this stat data
    expect(await check(d)).toBe(false);
    expect(cached(d)?.hashed).toEqual({});
    writeFileSync(join(d, "src", "a.txt"), "AAAA\n");
    expect(await check(d)).toBe(true);
  });
});

describe("grex status", () => {
  let t: TestWorkspace;
  beforeAll(() => {
    t = new TestWorkspace("grex-status-cache-verb-");
  });
  afterAll(() => t.cleanup());

  test("reports the same with the cache cold and warm, and still sees a new file", async () => {
    const url = t.repo("plain", { "README.md": "r\n", "src/x.txt": "x\n" });
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", url)).code).toBe(0);
    const cold = await t.grex("status", "--json");
    expect(cold.code).toBe(0);
    expect((cold.json.packs as Array<{ drift: string }>).map((p) => p.drift)).toEqual(["clean"]);
    expect(readStatusCache(statusCacheFile(join(t.ws, ".grex", ".state"), "plain"))).not.toBeNull();
    expect(readdirSync(join(t.ws, "plain", ".git")).filter((f) => f.includes("cache"))).toEqual([]); // nothing written into the pack
    const warm = await t.grex("status", "--json");
    expect(warm.stdout).toBe(cold.stdout);
    writeFileSync(join(t.ws, "plain", "src", "y.txt"), "y\n");
    const dirty = await t.grex("status", "--json");
    expect((dirty.json.packs as Array<{ drift: string; dirty: boolean }>).map((p) => [p.drift, p.dirty])).toEqual([["dirty", true]]);
  });

  test("an install cut short (a bracket never closed) is not-installed until a sync finishes it", async () => {
    const w = new TestWorkspace("grex-status-interrupted-");
    try {
      const url = w.repo("cut", { "README.md": "r\n" });
      expect((await w.grex("init")).code).toBe(0);
      expect((await w.grex("add", url)).code).toBe(0);
      expect(((await w.grex("status", "--json")).json.packs as Array<{ drift: string }>)[0]?.drift).toBe("clean");
      // A crash after an action started (an older grex, which kept brackets in grex.jsonl): its start, never its end.
      // Brackets are matched across grex.jsonl and the runtime journal in time order, so it is stamped now.
      appendFileSync(join(w.ws, "grex.jsonl"), `${JSON.stringify({ op: "action_started", ts: new Date().toISOString(), id: "cut", schema_version: "1", action: "exec", idx: 0 })}\n`);
      const cut = (await w.grex("status", "--json")).json.packs as Array<{ drift: string; install_error: string | null }>;
      expect(cut[0]).toMatchObject({ drift: "not-installed", install_error: "the last install was interrupted" });
      expect((await w.grex("sync")).code).toBe(0);
      expect(((await w.grex("status", "--json")).json.packs as Array<{ drift: string }>)[0]?.drift).toBe("clean");
    } finally {
      w.cleanup();
    }
  });

  test("rm removes the pack's cache file with the pack", async () => {
    const w = new TestWorkspace("grex-status-cache-rm-");
    try {
      const url = w.repo("gone", { "README.md": "r\n" });
      expect((await w.grex("init")).code).toBe(0);
      expect((await w.grex("add", url)).code).toBe(0);
      expect((await w.grex("status", "--json")).code).toBe(0);
      const file = statusCacheFile(join(w.ws, ".grex", ".state"), "gone");
      expect(existsSync(file)).toBe(true);
      expect((await w.grex("rm", "gone")).code).toBe(0);
      expect(existsSync(file)).toBe(false);
    } finally {
      w.cleanup();
    }
  });
});
