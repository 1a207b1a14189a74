// What the indexer records of a pack's commits and tags (pack-links.ts) must
// be what git says of the same objects: each commit's tree and parents in
// order, each tag's object; anything git's parser refuses is recorded as bad.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { Entries, objectId } from "../../src/core/git/objects/pack-entries.ts";
import { nameOrder } from "../../src/core/git/objects/pack-idx.ts";
import { storePack } from "../../src/core/git/objects/pack-index.ts";
import { PackLinks } from "../../src/core/git/objects/pack-links.ts";
import { commit, git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";
import { prng } from "../helpers/prng.ts";

let tmp: { path: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir("grex-pack-links-");
});
afterAll(() => tmp.cleanup());

/** A PackLinks over `objects` as if they were a pack's entries, in order. */
function linksOver(objects: Array<{ type: "commit" | "tag" | "tree" | "blob"; data: Buffer }>): { links: PackLinks; ids: string[] } {
  const e = new Entries();
  const links = new PackLinks();
  const ids: string[] = [];
  objects.forEach((o, n) => {
    const i = e.push(n * 100, 1, 0, -1);
    const oid = objectId(o.type, o.data);
    e.setOid(i, oid);
    ids.push(oid.toString("hex"));
    links.record(i, o.type, o.data);
  });
  links.seal(e, nameOrder(e));
  return { links, ids };
}

const hex = (rand: () => number) => Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(rand() * 16)]).join("");

test("a real pack: every commit's tree and parents and every tag's object, as git reports them", async () => {
  const src = join(tmp.path, "src");
  makeRepo(src, { "a.txt": "a\n" });
  for (let i = 0; i < 6; i++) commit(src, { [`f${i}.txt`]: `${i}\n` }, `c${i}`);
  git(src, "checkout", "-q", "-b", "side", "HEAD~3");
  commit(src, { "side.txt": "s\n" }, "side");
  git(src, "checkout", "-q", "main");
  git(src, "merge", "-q", "--no-ff", "-m", "merge", "side");
  git(src, "tag", "-a", "v1", "-m", "release");
  const pack = Bun.spawnSync(["git", "pack-objects", "--stdout", "--revs", "--all", "-q"], { cwd: src, env: gitEnv(), stdin: Buffer.from("\n") }).stdout;
  const dest = join(tmp.path, "dest.git");
  git(tmp.path, "init", "--quiet", "--bare", dest);
  const links = new PackLinks();
  const store = new ObjectStore(dest);
  try {
    await storePack(dest, Buffer.from(pack), { store, keepPack: true, signal: new AbortController().signal, links });
  } finally {
    store.close();
  }
  expect(links.sealed).toBe(true);
  const commits = git(src, "rev-list", "--all", "--parents").split("\n");
  expect(commits.length).toBe(9);
  for (const line of commits) {
    const [oid, ...parents] = line.split(" ") as [string, ...string[]];
    const i = links.find(oid);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(links.kindOf(i)).toBe("commit");
    expect(links.nameOf(i)).toBe(oid);
    const got = Array.from({ length: links.countOf(i) }, (_, k) => links.linkName(i, k));
    expect(got).toEqual([git(src, "rev-parse", `${oid}^{tree}`), ...parents]);
    // Links inside the pack resolve to their entries.
    expect(links.nameOf(links.findLink(i, 0))).toBe(got[0] as string);
  }
  const tag = git(src, "rev-parse", "v1");
  const t = links.find(tag);
  expect(links.kindOf(t)).toBe("tag");
  expect(links.linkName(t, 0)).toBe(git(src, "rev-parse", "v1^{commit}"));
  const blob = git(src, "rev-parse", "HEAD:a.txt");
  expect(links.kindOf(links.find(blob))).toBeNull();
  expect(links.find("0".repeat(40))).toBe(-1);
  expect(links.find("not an id")).toBe(-1);
});

test("what git's parser refuses is recorded as bad; octopus merges and many records keep every link", () => {
  const rand = prng(4242);
  const tree = hex(rand);
  const good: Array<{ parents: string[] }> = [];
  const objects: Array<{ type: "commit" | "tag" | "tree" | "blob"; data: Buffer }> = [];
  // Enough records to grow the record buffer several times, some with dozens of parents.
  for (let n = 0; n < 3000; n++) {
    const parents = Array.from({ length: n % 97 === 0 ? 40 : Math.floor(rand() * 3) }, () => hex(rand));
    good.push({ parents });
    objects.push({ type: "commit", data: Buffer.from(`tree ${tree}\n${parents.map((p) => `parent ${p}\n`).join("")}author A <a@b> 1 +0000\n\nmsg ${n}\n`) });
  }
  const bad = [
    `tree ${tree.toUpperCase()}\n\nupper case`,
    `tree ${tree.slice(1)}\n\nshort`,
    `parent ${tree}\ntree ${tree}\n\nparent first`,
    `tree ${tree}`,
    "",
  ];
  for (const b of bad) objects.push({ type: "commit", data: Buffer.from(b) });
  objects.push({ type: "tag", data: Buffer.from(`type commit\nobject ${tree}\n`) });
  objects.push({ type: "tag", data: Buffer.from(`object ${tree}\ntype tree\ntag t\n`) });
  objects.push({ type: "tree", data: Buffer.from(`100644 a\0${"x".repeat(20)}`) });
  const { links, ids } = linksOver(objects);
  good.forEach((g, n) => {
    const i = links.find(ids[n] as string);
    expect(links.kindOf(i)).toBe("commit");
    expect(Array.from({ length: links.countOf(i) }, (_, k) => links.linkName(i, k))).toEqual([tree, ...g.parents]);
    expect(links.findLink(i, 0)).toBe(-1); // the tree is not in this "pack"
  });
  bad.forEach((_, k) => expect(links.kindOf(links.find(ids[good.length + k] as string))).toBe("bad commit"));
  expect(links.kindOf(links.find(ids[good.length + bad.length] as string))).toBe("bad tag");
  const tag = links.find(ids[good.length + bad.length + 1] as string);
  expect(links.kindOf(tag)).toBe("tag");
  expect(links.linkName(tag, 0)).toBe(tree);
  expect(links.kindOf(links.find(ids.at(-1) as string))).toBeNull();
});
