// changedEntries (the connectivity walk's tree comparison) against a plain
// diff of the parsed trees, on trees git itself wrote with `git mktree` (so
// in git's order, where a directory "a" sorts as "a/", after "a.b" and
// before "a0"): random pairs of trees sharing most entries.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { changedEntries } from "../../src/core/git/objects/tree-changes.ts";
import { git, gitEnv } from "../helpers/git-fixtures.ts";

const root = mkdtempSync(join(tmpdir(), "grex-tree-changes-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function mktree(dir: string, entries: Map<string, { mode: string; oid: string }>): string {
  const input = [...entries].map(([name, e]) => `${e.mode} ${e.mode === "040000" ? "tree" : e.mode === "160000" ? "commit" : "blob"} ${e.oid}\t${name}`).join("\n");
  const p = Bun.spawnSync(["git", "mktree", "--missing"], { cwd: dir, env: gitEnv(), stdin: Buffer.from(input ? `${input}\n` : ""), stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  return p.stdout.toString().trim();
}

test("changedEntries is exactly the entries the base lacks or holds otherwise, in git's tree order", () => {
  const dir = join(root, "repo");
  git(root, "init", "-q", "--bare", dir);
  // Names chosen to collide in git's order: a file and a directory named alike, prefixes, non-ASCII.
  const names = ["a", "a.b", "a0", "a-", "ab", "b", "é", "z", "a b", "Z", "a.b.c"];
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const oid = (k: number) => k.toString(16).padStart(40, "0");
  const modes = ["100644", "100755", "120000", "040000", "160000"];
  const store = new ObjectStore(dir);
  try {
    for (let round = 0; round < 60; round++) {
      const base = new Map<string, { mode: string; oid: string }>();
      for (const n of names) if (rand(3) > 0) base.set(n, { mode: modes[rand(modes.length)] as string, oid: oid(1 + rand(4)) });
      const next = new Map(base);
      for (const n of names) {
        const r = rand(5);
        if (r === 0) next.delete(n);
        else if (r === 1) next.set(n, { mode: modes[rand(modes.length)] as string, oid: oid(1 + rand(4)) });
      }
      const [baseOid, nextOid] = [mktree(dir, base), mktree(dir, next)];
      const raw = (o: string) => (store.read(o) as { data: Buffer }).data;
      const got = changedEntries(raw(nextOid), raw(baseOid));
      const all = store.readTree(nextOid) ?? [];
      const baseParsed = new Map((store.readTree(baseOid) ?? []).map((e) => [`${e.name}${e.mode === "040000" ? "/" : ""}`, e]));
      const want = all
        .filter((e) => {
          const b = baseParsed.get(`${e.name}${e.mode === "040000" ? "/" : ""}`);
          return !(b && b.mode === e.mode && b.oid === e.oid);
        })
        .map((e) => {
          const b = baseParsed.get(`${e.name}/`);
          return { mode: e.mode, name: e.name, oid: e.oid, baseTree: e.mode === "040000" && b ? b.oid : undefined };
        });
      expect(got).toEqual(want);
      // Without a base: every entry, as readTree reads them.
      expect(changedEntries(raw(nextOid), null)?.map(({ mode, name, oid }) => ({ mode, name, oid }))).toEqual(all);
    }
  } finally {
    store.close();
  }
});

test("a malformed tree is refused; a malformed base only counts as having nothing", () => {
  const good = Buffer.concat([Buffer.from("100644 a\0"), Buffer.alloc(20, 1)]);
  expect(changedEntries(Buffer.from("100644 a\0short"), null)).toBeNull();
  expect(changedEntries(good, Buffer.from("garbage"))?.map((e) => e.name)).toEqual(["a"]);
  expect(changedEntries(good, good)).toEqual([]);
});

test("diffTrees finds the paths two commits' flat trees differ in, reading only differing subtrees", async () => {
  const { diffTrees } = await import("../../src/core/git/objects/tree-changes.ts");
  const { flatTree } = await import("../../src/core/git/objects/tree-read.ts");
  const r = join(root, "diff");
  git(root, "init", "-q", r);
  const write = (files: Record<string, string | null>) => {
    for (const [p, body] of Object.entries(files)) {
      const abs = join(r, p);
      if (body === null) rmSync(abs, { recursive: true, force: true });
      else {
        require("node:fs").mkdirSync(join(abs, ".."), { recursive: true });
        require("node:fs").writeFileSync(abs, body);
      }
    }
    git(r, "add", "-A");
    git(r, "commit", "-q", "--allow-empty", "-m", "c");
    return git(r, "rev-parse", "HEAD");
  };
  // Same-named files and directories, a directory replaced by a file and back, non-ASCII and prefix names, a mode change.
  const c1 = write({ "a/x": "1", "a.b": "2", "a0/y": "3", "d/e/f": "4", "d/e/g": "5", "keep/k": "6", "é/ü": "7", "t": "8", "big/n1": "9", "big/n2": "10" });
  const c2 = write({ "a/x": "1b", "d/e": null, "keep/k": "6", "é/ü": "7b", "t": null, "new/deep/n": "11", "big/n2": null });
  require("node:fs").rmSync(join(r, "a"), { recursive: true, force: true });
  require("node:fs").rmSync(join(r, "d"), { recursive: true, force: true });
  require("node:fs").writeFileSync(join(r, "a"), "file now");
  require("node:fs").writeFileSync(join(r, "d"), "d is a file");
  require("node:fs").chmodSync(join(r, "keep/k"), 0o755);
  git(r, "add", "-A");
  git(r, "commit", "-q", "-m", "types");
  const c3 = git(r, "rev-parse", "HEAD");
  const store = new ObjectStore(join(r, ".git"));
  try {
    const treeOf = (c: string) => store.readCommit(c)?.tree as string;
    const read = (oid: string) => {
      const o = store.read(oid);
      return o?.type === "tree" ? Buffer.from(o.data) : null;
    };
    for (const [x, y] of [[c1, c2], [c2, c1], [c2, c3], [c3, c1], [c1, c3], [c3, c3]] as const) {
      const fx = await flatTree(join(r, ".git"), x);
      const fy = await flatTree(join(r, ".git"), y);
      const want = new Set([...[...fy].filter(([p, v]) => fx.get(p) !== v).map(([p]) => p), ...[...fx.keys()].filter((p) => !fy.has(p))]);
      const d = diffTrees(read, treeOf(x), treeOf(y));
      expect(d).not.toBeNull();
      expect(new Set(d?.changed)).toEqual(want);
      expect(d?.changed.length).toBe(want.size);
      for (const p of want) expect(d?.from.get(p)).toBe(fx.get(p));
    }
    expect(diffTrees(() => null, treeOf(c1), treeOf(c2))).toBeNull();
  } finally {
    store.close();
  }
});
