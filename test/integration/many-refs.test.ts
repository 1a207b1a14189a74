// A repository advertising 100,000 refs clones with the default limits, its
// refs land in one packed-refs file (not one loose file each), git reads them,
// and a later sync with nothing new writes no ref at all.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const REFS = 100_000;
let t: TestWorkspace;
let server: GitHttpServer;

beforeAll(async () => {
  t = new TestWorkspace("grex-many-refs-");
  const work = t.repo("many", { "README.md": "many refs\n" });
  const tip = git(work, "rev-parse", "HEAD");
  mkdirSync(join(t.root, "served"));
  const bare = join(t.root, "served", "many.git");
  git(t.root, "clone", "--quiet", "--bare", work, bare);
  // 100k lightweight tags, written the way git packs them.
  const lines = [`${tip} refs/heads/main`];
  for (let i = 0; i < REFS; i++) lines.push(`${tip} refs/tags/t${String(i).padStart(6, "0")}`);
  writeFileSync(join(bare, "packed-refs"), `# pack-refs with: peeled fully-peeled sorted \n${lines.join("\n")}\n`);
  server = await startGitHttpServer(join(t.root, "served"));
  expect((await t.grex("init")).code).toBe(0);
});

afterAll(async () => {
  await server.stop();
  t.cleanup();
});

test("100,000 refs: one packed-refs write, read by git, and a later sync writes nothing", async () => {
  const r = await t.grex("add", `${server.url}/many.git`, "many");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const gitdir = join(t.ws, "many", ".git");
  expect(existsSync(join(gitdir, "refs", "tags")) ? readdirSync(join(gitdir, "refs", "tags")) : []).toEqual([]);
  const packed = readFileSync(join(gitdir, "packed-refs"), "utf8");
  expect(packed.split("\n").filter((l) => l.includes(" refs/tags/"))).toHaveLength(REFS);
  expect(git(join(t.ws, "many"), "show-ref", "--tags").split("\n")).toHaveLength(REFS);
  expect(git(join(t.ws, "many"), "rev-parse", "t099999")).toBe(git(join(t.ws, "many"), "rev-parse", "HEAD"));
  const stamp = statSync(join(gitdir, "packed-refs")).mtimeMs;
  const s = await t.grex("sync");
  expect(s.code).toBe(0);
  expect(statSync(join(gitdir, "packed-refs")).mtimeMs).toBe(stamp);
});
