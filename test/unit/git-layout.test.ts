// The repository layout (src/core/git/layout/layout.ts) against git itself:
// for a plain repository, a linked worktree (`git worktree add`: a `.git`
// file with an absolute gitdir, `commondir` relative), an absorbed submodule
// (`.git` file with a relative gitdir into the superproject's
// `.git/modules/<name>`) and a bare repository, every path it gives must be
// the one `git rev-parse --path-format=absolute --git-path <name>` prints.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  commonDirOf,
  configPath,
  dotGitOf,
  excludeFileOf,
  findLayout,
  gitdirOf,
  gitPath,
  indexPath,
  infoExcludePath,
  isCommonPath,
  isShallow,
  objectsDir,
  packedRefsPath,
  readGitFile,
  readShallow,
  type RepoLayout,
  refPath,
  reflogPath,
  shallowPath,
  submoduleGitdir,
} from "../../src/core/git/layout/layout.ts";
import { git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
let root: string;
let plain: string;
let linked: string;
let superproject: string;
let bare: string;

beforeAll(() => {
  tmp = tempDir("grex-layout-");
  root = realpathSync(tmp.path); // git prints real paths
  plain = join(root, "plain");
  makeRepo(plain, { "a.txt": "a\n" });
  linked = join(root, "linked");
  git(plain, "worktree", "add", "--quiet", "-b", "side", linked);
  const sub = join(root, "subsrc");
  makeRepo(sub, { "s.txt": "s\n" });
  superproject = join(root, "super");
  makeRepo(superproject, { "r.txt": "r\n" });
  git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "--quiet", sub, "libs/sub");
  git(superproject, "commit", "--quiet", "-m", "sub");
  bare = join(root, "bare.git");
  git(root, "clone", "--quiet", "--bare", plain, bare);
}, 60_000);
afterAll(() => tmp.cleanup());

/** Names every layout question comes down to, common and per-worktree alike. */
const NAMES = [
  "index",
  "objects",
  "objects/info/alternates",
  "info/exclude",
  "info/attributes",
  "info/sparse-checkout",
  "info/grafts",
  "config",
  "config.worktree",
  "shallow",
  "HEAD",
  "ORIG_HEAD",
  "FETCH_HEAD",
  "logs/HEAD",
  "logs/refs/heads/main",
  "logs/refs/bisect/x",
  "refs/heads/main",
  "refs/remotes/origin/main",
  "refs/bisect/bad",
  "refs/worktree/x",
  "refs/rewritten/y",
  "refs/replace",
  "packed-refs",
  "hooks/pre-commit",
  "modules/libs/sub",
  "worktrees",
  "sharedindex.0123",
  "grex-checkout.json",
  "gc.pid",
  "commondir",
];

/** What git says, for the work tree (or bare repository) `dir`. */
function gitSays(dir: string, name: string): string {
  return git(dir, "rev-parse", "--path-format=absolute", "--git-path", name);
}

function expectAsGit(dir: string, layout: RepoLayout): void {
  // One git process answers every question (--git-path may be repeated).
  const [gitDir, commonDir, ...paths] = git(dir, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", ...NAMES.flatMap((n) => ["--git-path", n])).split("\n");
  expect(layout.gitdir).toBe(gitDir as string);
  expect(layout.commonDir).toBe(commonDir as string);
  const says = new Map(NAMES.map((n, i) => [n, paths[i] as string]));
  for (const name of NAMES) expect(`${name} → ${gitPath(layout, name)}`).toBe(`${name} → ${says.get(name)}`);
  // The named helpers are the same question.
  expect(indexPath(layout)).toBe(says.get("index") as string);
  expect(objectsDir(layout)).toBe(says.get("objects") as string);
  expect(infoExcludePath(layout)).toBe(says.get("info/exclude") as string);
  expect(configPath(layout)).toBe(says.get("config") as string);
  expect(shallowPath(layout)).toBe(says.get("shallow") as string);
  expect(packedRefsPath(layout)).toBe(says.get("packed-refs") as string);
  expect(refPath(layout, "HEAD")).toBe(says.get("HEAD") as string);
  expect(reflogPath(layout, "refs/heads/main")).toBe(says.get("logs/refs/heads/main") as string);
  // A git directory given alone (as most of grex's functions take it) reads its commondir the same way.
  for (const name of NAMES) expect(gitPath(layout.gitdir, name)).toBe(gitPath(layout, name));
}

describe("the layout of a repository, as git resolves it", () => {
  test("a plain repository: .git is a directory, everything in it", () => {
    const layout = findLayout(plain) as RepoLayout;
    expect(layout).toEqual({ workTree: plain, gitdir: join(plain, ".git"), commonDir: join(plain, ".git") });
    expectAsGit(plain, layout);
  }, 60_000);

  test("a linked worktree: a .git file, commondir as git worktree add writes it", () => {
    expect(readFileSync(join(linked, ".git"), "utf8")).toStartWith("gitdir: ");
    expect(readFileSync(join(plain, ".git", "worktrees", "linked", "commondir"), "utf8").trim()).toBe("../..");
    const layout = findLayout(linked) as RepoLayout;
    expect(layout.gitdir).toBe(join(plain, ".git", "worktrees", "linked"));
    expect(layout.commonDir).toBe(join(plain, ".git"));
    expectAsGit(linked, layout);
  }, 60_000);

  test("an absorbed submodule: a relative gitdir into the superproject's .git/modules/<name>", () => {
    const sub = join(superproject, "libs", "sub");
    expect(readFileSync(join(sub, ".git"), "utf8").trim()).toBe("gitdir: ../../.git/modules/libs/sub");
    const layout = findLayout(sub) as RepoLayout;
    expectAsGit(sub, layout);
    const parent = findLayout(superproject) as RepoLayout;
    expectAsGit(superproject, parent);
    expect(submoduleGitdir(parent, "libs/sub")).toBe(layout.gitdir);
    expect(submoduleGitdir(parent, "libs/sub")).toBe(gitSays(superproject, "modules/libs/sub"));
  }, 60_000);

  test("a submodule of a linked worktree lives under that worktree's own git directory, as git puts it", () => {
    // git's common_list does not list modules/: each worktree has its own.
    const layout = findLayout(linked) as RepoLayout;
    expect(submoduleGitdir(layout, "x")).toBe(join(plain, ".git", "worktrees", "linked", "modules", "x"));
    expect(submoduleGitdir(layout, "x")).toBe(gitSays(linked, "modules/x"));
  }, 60_000);

  test("a bare repository is its own git directory", () => {
    const layout = findLayout(bare) as RepoLayout;
    expect(layout).toEqual({ workTree: null, gitdir: bare, commonDir: bare });
    expectAsGit(bare, layout);
    expect(gitdirOf(bare)).toBe(bare);
    expect(dotGitOf(bare)).toBeNull(); // not a work tree
  }, 60_000);

  test("a directory without a repository has no layout", () => {
    const none = join(root, "none");
    mkdirSync(none, { recursive: true });
    expect(findLayout(none)).toBeNull();
    expect(gitdirOf(none)).toBeNull();
    expect(excludeFileOf(none)).toBeNull();
  }, 60_000);

  test("the exclude file of a work tree whose .git is a file is the common one (never <dir>/.git/info/exclude)", () => {
    expect(excludeFileOf(linked)).toBe(join(plain, ".git", "info", "exclude"));
    expect(excludeFileOf(join(superproject, "libs", "sub"))).toBe(join(superproject, ".git", "modules", "libs", "sub", "info", "exclude"));
    expect(excludeFileOf(plain)).toBe(join(plain, ".git", "info", "exclude"));
  }, 60_000);

  test("shallow: read from the common directory, also from a linked worktree", () => {
    const shallowClone = join(root, "shallow");
    git(root, "clone", "--quiet", "--depth", "1", `file://${plain}`, shallowClone);
    const wt = join(root, "shallow-wt");
    git(shallowClone, "worktree", "add", "--quiet", "-b", "w", wt);
    const tip = git(shallowClone, "rev-parse", "HEAD");
    for (const dir of [shallowClone, wt]) {
      const layout = findLayout(dir) as RepoLayout;
      expect(isShallow(layout)).toBe(true);
      expect([...readShallow(layout)]).toEqual([tip]);
      expect(shallowPath(layout)).toBe(gitSays(dir, "shallow"));
    }
    expect(isShallow(findLayout(plain) as RepoLayout)).toBe(false);
    expect(readShallow(findLayout(plain) as RepoLayout).size).toBe(0);
  });
});

describe(".git files and commondir, as git reads them", () => {
  test("gitdir: relative to the .git file's directory, absolute as is, CRLF and trailing newline tolerated", () => {
    const d = join(root, "gitfiles");
    mkdirSync(d, { recursive: true });
    const f = join(d, ".git");
    writeFileSync(f, "gitdir: ../elsewhere/.git\n");
    expect(readGitFile(f)).toBe(join(root, "elsewhere", ".git"));
    writeFileSync(f, "gitdir: /abs/repo.git\r\n");
    expect(readGitFile(f)).toBe("/abs/repo.git");
    writeFileSync(f, "gitdir:sub/.git");
    expect(readGitFile(f)).toBe(join(d, "sub", ".git"));
    expect(dotGitOf(d)).toBe(join(d, "sub", ".git"));
  }, 60_000);

  test("a .git file that does not start with gitdir: names no repository", () => {
    const d = join(root, "badgitfile");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, ".git"), "# a comment\ngitdir: /somewhere\n");
    expect(dotGitOf(d)).toBeNull();
    writeFileSync(join(d, ".git"), "gitdir: \n");
    expect(dotGitOf(d)).toBeNull();
  }, 60_000);

  test("commondir: relative to the git directory, absolute as is, absent means the git directory itself", () => {
    const g = join(root, "cd", "wt-gitdir");
    mkdirSync(g, { recursive: true });
    expect(commonDirOf(g)).toBe(g);
    writeFileSync(join(g, "commondir"), "..\n");
    expect(commonDirOf(g)).toBe(join(root, "cd"));
    writeFileSync(join(g, "commondir"), "/shared/repo.git\n");
    expect(commonDirOf(g)).toBe("/shared/repo.git");
  });
});

describe("common_list", () => {
  test("the longest listed prefix decides; a file entry matches only itself", () => {
    const cases: Array<[string, boolean]> = [
      ["objects/pack/x.pack", true],
      ["refs/heads/main", true],
      ["refs/bisect/bad", false],
      ["refs/worktree/x", false],
      ["logs/HEAD", false],
      ["logs/refs/heads/x", true],
      ["logs/refs/bisect/x", false],
      ["info/exclude", true],
      ["info/sparse-checkout", false],
      ["info/sparse-checkout2", true],
      ["config", true],
      ["config.worktree", false],
      ["packed-refs", true],
      ["shallow", true],
      ["HEAD", false],
      ["index", false],
      ["modules/x", false],
      ["hooks/pre-commit", true],
      ["worktrees/a/HEAD", true],
      ["refsx", false],
    ];
    for (const [name, common] of cases) expect(`${name}: ${isCommonPath(name)}`).toBe(`${name}: ${common}`);
  }, 60_000);

  test("a lock file is taken beside its file: the path of <file>.lock is <path of file>.lock", () => {
    // lockfile.ts appends ".lock" to the resolved path, as git's lockfile.h does; the name itself would say otherwise.
    const layout = findLayout(linked) as RepoLayout;
    expect(`${shallowPath(layout)}.lock`).toBe(join(plain, ".git", "shallow.lock"));
    expect(`${indexPath(layout)}.lock`).toBe(gitSays(linked, "index.lock"));
  });
});
