// Submodules a hostile pack can shape (issue 34): a fan-out under a budget, the
// file transport off by default (git's protocol.file.allow=user), a child and
// a submodule at one path refused, a gitlink to a missing commit named.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git } from "../helpers/git-fixtures.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-submodules-");
beforeAll(async () => {
  expect((await t.grex("init")).code).toBe(0);
});
afterAll(() => t.cleanup());
afterEach(() => {
  rmSync(join(t.home, ".gitconfig"), { force: true });
  delete process.env.GREX_MAX_SUBMODULES;
});

const allowFile = () => writeFileSync(join(t.home, ".gitconfig"), '[protocol "file"]\n\tallow = always\n');

/** A commit in `dir` whose tree is `files` plus gitlinks (path → [name, url, sha]) and the .gitmodules naming them. */
function withGitlinks(name: string, files: Record<string, string>, links: Record<string, [string, string]>): string {
  const dir = join(t.upstream, name);
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", "main");
  const modules = Object.entries(links).map(([path, [url]]) => `[submodule "${path}"]\n\tpath = ${path}\n\turl = ${url}\n`);
  for (const [rel, body] of Object.entries({ ...files, ".gitmodules": modules.join("") })) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  git(dir, "add", "-A");
  for (const [path, [, sha]] of Object.entries(links)) git(dir, "update-index", "--add", "--cacheinfo", `160000,${sha},${path}`);
  git(dir, "commit", "-q", "-m", `${name}`);
  return dir;
}

/** Every `.<name>.grex-clone-*` folder under `dir`. */
function leftovers(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name.includes(".grex-clone-")) out.push(join(d, e.name));
      else walk(join(d, e.name));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

test("a fan-out of submodules (3 gitlinks per commit, 3 levels) stops at the budget with one sentence and leaves nothing", async () => {
  allowFile();
  let prev = t.repo("fan0", { "leaf.txt": "leaf\n" });
  for (let level = 1; level <= 3; level++) {
    const sha = git(prev, "rev-parse", "HEAD");
    const url = `../fan${level - 1}`;
    prev = withGitlinks(`fan${level}`, { [`level${level}.txt`]: `${level}\n` }, { a: [url, sha], b: [url, sha], c: [url, sha] });
  }
  process.env.GREX_MAX_SUBMODULES = "10";
  const r = await t.grex("add", "--recurse-submodules", prev, "fan");
  expect(r.code).toBe(4);
  const lines = r.stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/limit of 10 submodules cloned or moved per add or sync \(GREX_MAX_SUBMODULES\)/);
  expect(existsSync(join(t.ws, "fan"))).toBe(false);
  expect(leftovers(t.ws)).toEqual([]);
  expect(readdirSync(t.ws).filter((n) => n !== ".grex" && n !== "grex.jsonl" && n !== "grex.lock.jsonl" && n !== ".gitignore" && n !== ".gitattributes")).toEqual([]);
  // Raised, the same pack is cloned whole: 3 + 9 + 27 submodules.
  process.env.GREX_MAX_SUBMODULES = "100";
  const ok = await t.grex("add", "--recurse-submodules", "--json", prev, "fan");
  expect(ok.stderr).toBe("");
  expect(ok.code).toBe(0);
  expect(existsSync(join(t.ws, "fan", "c", "b", "a", "leaf.txt"))).toBe(true);
  expect((await t.grex("rm", "fan")).code).toBe(0);
});

test("a .gitmodules URL relative to a pack added from a local path does not clone a local repository unless the user allows the file transport", async () => {
  const secret = t.repo("private", { "secret.txt": "secret\n" });
  const pack = withGitlinks("innocent", { "README": "hi\n" }, { vendor: ["../private", git(secret, "rev-parse", "HEAD")] });
  const r = await t.grex("add", "--recurse-submodules", pack, "innocent");
  expect(r.code).toBe(4);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toMatch(/submodules may not use local repositories .*protocol\.file\.allow = always/);
  expect(existsSync(join(t.ws, "innocent"))).toBe(false);
  expect(leftovers(t.ws)).toEqual([]);
  // The documented opt-in, git's own setting in the user's config.
  allowFile();
  expect((await t.grex("add", "--recurse-submodules", pack, "innocent")).code).toBe(0);
  expect(existsSync(join(t.ws, "innocent", "vendor", "secret.txt"))).toBe(true);
  expect((await t.grex("rm", "innocent")).code).toBe(0);
});

test("a pack.yaml child and a submodule at the same path are refused at add and at sync, with one sentence", async () => {
  allowFile();
  const kid = t.repo("kid", { "kid.txt": "kid\n" });
  const other = t.repo("other-kid", { "other.txt": "other\n" });
  const yaml = 'schema_version: "1"\nname: clash\ntype: meta\nchildren:\n  - url: ../kid\n    path: kid\n';
  const clash = withGitlinks("clash", { ".grex/pack.yaml": yaml }, { "kid": ["../other-kid", git(other, "rev-parse", "HEAD")] });
  const r = await t.grex("add", clash, "clash");
  expect(r.code).toBe(4);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toMatch(/declares the child 'kid' in \.grex\/pack\.yaml where its tree has the submodule 'kid'/);
  expect(existsSync(join(t.ws, "clash"))).toBe(false);

  // At sync: a pack that was fine gains a submodule where its child lives.
  const fine = t.repo("fine", { ".grex/pack.yaml": yaml.replace("name: clash", "name: fine") });
  expect((await t.grex("add", fine, "fine")).code).toBe(0);
  expect(existsSync(join(t.ws, "fine", "kid", "kid.txt"))).toBe(true);
  writeFileSync(join(fine, ".gitmodules"), `[submodule "kid"]\n\tpath = kid\n\turl = ../other-kid\n`);
  git(fine, "add", ".gitmodules");
  git(fine, "update-index", "--add", "--cacheinfo", `160000,${git(other, "rev-parse", "HEAD")},kid`);
  git(fine, "commit", "-q", "-m", "submodule where the child is");
  // The move is refused before anything changes (the child's clone stands where the submodule would go), and says why.
  const s = await t.grex("sync", "fine");
  expect(s.code).toBe(4);
  expect(s.stderr.trim().split("\n")).toHaveLength(1);
  expect(s.stderr).toMatch(/declares the child 'kid' in \.grex\/pack\.yaml where its tree has the submodule 'kid'; refusing both/);
  expect(git(join(t.ws, "fine"), "rev-parse", "HEAD")).not.toBe(git(fine, "rev-parse", "HEAD"));
  expect(git(join(t.ws, "fine", "kid"), "rev-parse", "HEAD")).toBe(git(kid, "rev-parse", "HEAD"));
  expect(existsSync(join(t.ws, "fine", "kid", "kid.txt"))).toBe(true);
});

test("a gitlink to a commit its repository lacks names the submodule and the commit", async () => {
  allowFile();
  t.repo("lib", { "lib.txt": "lib\n" });
  const missing = "1111111111111111111111111111111111111111";
  const pack = withGitlinks("dangling", { README: "x\n" }, { "vendor/lib": ["../lib", missing] });
  const r = await t.grex("add", "--recurse-submodules", pack, "dangling");
  expect(r.code).toBe(4);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toContain(`submodule 'vendor/lib' at 'vendor/lib' records commit ${missing}, which`);
  expect(r.stderr).not.toContain("check the tag or branch name");
  expect(existsSync(join(t.ws, "dangling"))).toBe(false);
});
