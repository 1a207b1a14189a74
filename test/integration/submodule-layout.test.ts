// Submodules laid out as git lays them out (issue 40): grex's clone of a pack
// with nested submodules compared with `git clone` + `git submodule update
// --init --recursive` (and with `git clone --recurse-submodules`): the
// `.git/modules` tree, the `.git` files, the config of the superproject and of
// every module, `git submodule status --recursive`; then git's own commands
// (`git pull --recurse-submodules`, plain `git fetch`/`git pull`, `git
// submodule update`, `git fsck` in every module) work in grex's clone. A pack
// an older grex laid out with `.git` directories is migrated by the next pass,
// also when that pass is SIGKILLed at every step boundary.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { isGitDirectory } from "../../src/core/git/layout/layout.ts";
import { moduleGitdir } from "../../src/core/git/submodule-layout.ts";
import { recordSubmoduleInConfig, updateSubmodules } from "../../src/core/git/submodules.ts";
import { git, gitEnv, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
const WORKER = join(import.meta.dir, "..", "helpers", "submodule-worker.ts");
const FILE = ["-c", "protocol.file.allow=always"];
let tmp: { path: string; cleanup: () => void };
let env: Record<string, string | undefined>;
beforeEach(() => {
  tmp = tempDir("grex-submodule-layout-");
  const file = join(tmp.path, "allow-file.gitconfig");
  writeFileSync(file, '[protocol "file"]\n\tallow = always\n');
  env = { ...gitEnv(), GIT_CONFIG_GLOBAL: file };
});
afterEach(() => tmp.cleanup());

function repo(dir: string, files: Record<string, string>): string {
  git(tmp.path, "init", "-q", "-b", "main", dir);
  for (const [rel, body] of Object.entries(files)) writeFileSync(join(dir, rel), body);
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "initial");
  return dir;
}

/** super → vendor/lib (→ deps/inner), and tools/kit named 'toolkit' (a name other than its path) → inner. */
function family(root = tmp.path) {
  const inner = repo(join(root, "inner"), { "inner.txt": "inner\n" });
  const lib = repo(join(root, "lib"), { "lib.txt": "lib\n" });
  git(lib, ...FILE, "submodule", "add", "-q", "../inner", "deps/inner");
  git(lib, "commit", "-q", "-m", "inner");
  const sup = repo(join(root, "super"), { README: "super\n" });
  git(sup, ...FILE, "submodule", "add", "-q", "../lib", "vendor/lib");
  git(sup, ...FILE, "submodule", "add", "-q", "--name", "toolkit", "../inner", "tools/kit");
  git(sup, "commit", "-q", "-m", "subs");
  return { root, inner, lib, sup };
}

let round = 0;
/** Upstream moves: a commit in inner, taken by lib, lib taken by super (tools/kit stays). */
function advance(f: ReturnType<typeof family>): void {
  round++;
  writeFileSync(join(f.inner, "inner.txt"), `inner ${round}\n`);
  git(f.inner, "commit", "-q", "-am", `inner ${round}`);
  git(join(f.lib, "deps", "inner"), "pull", "-q", "--ff-only");
  git(f.lib, "commit", "-q", "-am", `inner ${round} in lib`);
  git(join(f.sup, "vendor", "lib"), "pull", "-q", "--ff-only");
  git(f.sup, "commit", "-q", "-am", `lib ${round} in super`);
}

const SUBS = ["tools/kit", "vendor/lib", "vendor/lib/deps/inner"];

/** The git directories under `.git/modules`, as paths relative to it. */
function moduleDirs(clone: string): string[] {
  const root = join(clone, ".git", "modules");
  const out: string[] = [];
  const walk = (dir: string) => {
    if (isGitDirectory(dir)) out.push(relative(root, dir));
    for (const d of readdirSync(dir, { withFileTypes: true })) if (d.isDirectory() && !["objects", "refs", "logs", "hooks", "info"].includes(d.name)) walk(join(dir, d.name));
  };
  if (existsSync(root)) walk(root);
  return out.sort();
}

/** Everything git itself says about the submodules of `clone`, minus what legitimately differs between two clones. */
function layout(clone: string) {
  const cfg = (dir: string) => git(dir, "config", "-l", "--local").split("\n").sort();
  // Each module's own files by name, minus what git copies from its templates (sample hooks, description,
  // branches/, info/), how it stores refs and reflogs (packed-refs, logs/) and what a last fetch or reset left: grex makes none of those.
  const TEMPLATE_AND_STORAGE = new Set(["branches", "description", "hooks", "info", "logs", "packed-refs", "FETCH_HEAD", "ORIG_HEAD"]);
  // A lock's note whose lock is gone: lockfile.ts removes the note just after the lock is renamed over its file,
  // so a SIGKILL between the two leaves it (git ignores it; that file's next write by grex removes it).
  const orphanNote = (gd: string, n: string) => n.endsWith(".lock.grex") && !existsSync(join(gd, n.slice(0, -".grex".length)));
  const names = (gd: string) => readdirSync(gd).filter((n) => !TEMPLATE_AND_STORAGE.has(n) && !orphanNote(gd, n)).sort();
  return {
    modules: moduleDirs(clone),
    moduleFiles: moduleDirs(clone).map((m) => [m, names(join(clone, ".git", "modules", m))]),
    gitFiles: SUBS.map((p) => `${p}: ${readFileSync(join(clone, p, ".git"), "utf8")}`),
    superConfig: cfg(clone).filter((l) => !l.startsWith("submodule.recurse=")),
    moduleConfig: SUBS.map((p) => [p, cfg(join(clone, p))]),
    status: git(clone, "submodule", "status", "--recursive"),
    heads: SUBS.map((p) => [p, Bun.spawnSync(["git", "symbolic-ref", "-q", "HEAD"], { cwd: join(clone, p), env: gitEnv() }).exitCode === 0 ? "on a branch" : "detached"]),
    branches: SUBS.map((p) => [p, git(join(clone, p), "for-each-ref", "--format=%(refname) %(upstream)", "refs/heads")]),
  };
}

function byGit(sup: string, dest: string): string {
  git(tmp.path, "clone", "-q", sup, dest);
  git(dest, ...FILE, "submodule", "update", "-q", "--init", "--recursive");
  return dest;
}

async function byGrex(sup: string, dest: string) {
  await backendFor(sup).clone(sup, dest, { ref: null, signal: never() });
  return updateSubmodules(dest, sup, never(), env);
}

/** git's own commands in `clone` after upstream moved: pull recursing, plain fetch and pull, submodule update, fsck everywhere. */
function gitWorksIn(clone: string, f: ReturnType<typeof family>): void {
  advance(f);
  git(clone, ...FILE, "pull", "-q", "--recurse-submodules");
  // (The names in parentheses are git describe's: a fresh clone's local branch is at the new commit, a pulled one's is not.)
  const shaAndPath = (dir: string) => git(dir, "submodule", "status", "--recursive").replace(/ \(.*\)$/gm, "");
  expect(shaAndPath(clone)).toBe(shaAndPath(byGit(f.sup, join(tmp.path, `ref-${round}`))));
  expect(git(clone, "status", "--porcelain")).toBe("");

  advance(f);
  git(clone, ...FILE, "fetch", "-q");
  git(clone, ...FILE, "pull", "-q");
  git(clone, ...FILE, "submodule", "update", "-q", "--recursive");
  expect(git(clone, "status", "--porcelain")).toBe("");
  expect(readFileSync(join(clone, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe(`inner ${round}\n`);

  // What `grex add --recurse-submodules` records: plain `git pull` then recurses, and works.
  git(clone, "config", "submodule.recurse", "true");
  advance(f);
  git(clone, ...FILE, "pull", "-q");
  expect(git(clone, "status", "--porcelain")).toBe("");
  expect(readFileSync(join(clone, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe(`inner ${round}\n`);
  git(clone, "config", "--unset", "submodule.recurse");

  git(clone, "fsck", "--no-progress", "--strict");
  for (const p of SUBS) git(join(clone, p), "fsck", "--no-progress", "--strict");
}

test("a clone with nested submodules is laid out as git submodule update --init --recursive lays it out, and git's commands work in it", async () => {
  const f = family();
  const gitClone = byGit(f.sup, join(tmp.path, "by-git"));
  const grexClone = join(tmp.path, "by-grex");
  const done = await byGrex(f.sup, grexClone);
  expect(done.map((d) => [d.path, d.result])).toEqual([
    ["tools/kit", "cloned"],
    ["vendor/lib", "cloned"],
    ["vendor/lib/deps/inner", "cloned"],
  ]);
  const want = layout(gitClone);
  expect(want.modules).toEqual(["toolkit", "vendor/lib", "vendor/lib/modules/deps/inner"]);
  expect(layout(grexClone)).toEqual(want);
  for (const p of SUBS) expect(lstatSync(join(grexClone, p, ".git")).isFile()).toBe(true);
  expect(git(grexClone, "status", "--porcelain")).toBe("");
  expect(await backendFor(grexClone).isDirty(grexClone)).toBe(false);

  // `git clone --recurse-submodules` lays the modules out the same; its superproject says `submodule.active=.` instead of one line per submodule.
  const recursed = join(tmp.path, "recursed");
  git(tmp.path, ...FILE, "clone", "-q", "--recurse-submodules", f.sup, recursed);
  const r = layout(recursed);
  const g = layout(grexClone);
  expect({ ...r, superConfig: null }).toEqual({ ...g, superConfig: null });
  const noActive = (lines: string[]) => lines.filter((l) => !/^submodule\.(.*\.)?active=/.test(l));
  expect(noActive(r.superConfig)).toEqual(noActive(g.superConfig));

  gitWorksIn(grexClone, f);
  // And grex's next pass finds everything where git left it.
  const again = await updateSubmodules(grexClone, f.sup, never(), env);
  expect(again.every((d) => d.result === "unchanged")).toBe(true);
  expect(await backendFor(grexClone).isDirty(grexClone)).toBe(false);
});

/** A pack as an older grex left it: each submodule a plain clone at its path (a `.git` directory), recorded in the config as grex recorded it. */
function oldLayout(f: ReturnType<typeof family>, dest: string, cloned = false): string {
  if (!cloned) git(tmp.path, "clone", "-q", f.sup, dest);
  const place = (parent: string, path: string, url: string, name: string) => {
    const at = join(parent, path);
    git(tmp.path, "clone", "-q", url, at);
    git(at, "checkout", "-q", "--detach", git(parent, "rev-parse", `HEAD:${path}`));
    recordSubmoduleInConfig(join(parent, ".git"), name, url);
  };
  place(dest, "tools/kit", f.inner, "toolkit");
  place(dest, "vendor/lib", f.lib, "vendor/lib");
  place(join(dest, "vendor", "lib"), "deps/inner", f.inner, "deps/inner");
  for (const p of SUBS) expect(lstatSync(join(dest, p, ".git")).isDirectory()).toBe(true);
  return dest;
}

test("a pack laid out the old way (.git directories in the submodules) is migrated by the next pass, as git submodule absorbgitdirs does", async () => {
  const f = family();
  const want = layout(byGit(f.sup, join(tmp.path, "by-git")));
  const old = oldLayout(f, join(tmp.path, "old"));
  // The failure: with submodule.recurse, plain `git pull` cannot reach the nested submodule.
  git(old, "config", "submodule.recurse", "true");
  advance(f);
  const head = git(old, "rev-parse", "HEAD");
  const before = Bun.spawnSync(["git", ...FILE, "pull", "-q"], { cwd: old, env: gitEnv(), stderr: "pipe" });
  expect(before.exitCode).not.toBe(0);
  expect(before.stderr.toString()).toMatch(/Could not access submodule/);
  expect(git(old, "rev-parse", "HEAD")).toBe(head); // it stopped in the fetch

  const done = await updateSubmodules(old, f.sup, never(), env);
  expect(done.map((d) => [d.path, d.result])).toEqual([
    ["tools/kit", "unchanged"],
    ["vendor/lib", "unchanged"],
    ["vendor/lib/deps/inner", "unchanged"],
  ]);
  expect(layout(old)).toEqual(want);
  git(old, "config", "--unset", "submodule.recurse");
  gitWorksIn(old, f);
});

/** Which of its two places holds each submodule's repository: never neither, never both. */
function repositoryPlaces(clone: string): string[] {
  return SUBS.map((p) => {
    const parent = p === "vendor/lib/deps/inner" ? join(clone, ".git", "modules", "vendor", "lib") : join(clone, ".git");
    const name = p === "tools/kit" ? "toolkit" : p === "vendor/lib" ? "vendor/lib" : "deps/inner";
    const inside = isGitDirectory(join(clone, p, ".git"));
    // The nested one's "absorbed" place depends on where its parent's repository is now.
    const parentGitdir = p === "vendor/lib/deps/inner" && !existsSync(parent) ? join(clone, "vendor", "lib", ".git") : parent;
    const absorbed = isGitDirectory(join(parentGitdir, "modules", name));
    return `${p}: ${inside && absorbed ? "both" : inside ? "in its work tree" : absorbed ? "absorbed" : "NONE"}`;
  });
}

function runWorker(dir: string, url: string, killAfter: number): { killed: boolean; renames: number } {
  const p = Bun.spawnSync([process.execPath, WORKER, dir, url, String(killAfter)], { env, stdout: "pipe", stderr: "pipe" });
  if (p.signalCode === "SIGKILL") return { killed: true, renames: killAfter };
  if (p.exitCode !== 0) throw new Error(`worker failed: ${p.stderr.toString()}`);
  return { killed: false, renames: (JSON.parse(p.stdout.toString()) as { renames: number }).renames };
}

test("a migration SIGKILLed after every one of its steps leaves every repository in one place, and the next pass completes it", () => {
  const f = family();
  const want = layout(byGit(f.sup, join(tmp.path, "by-git")));
  const template = oldLayout(f, join(tmp.path, "template"));
  const calib = join(tmp.path, "calibrate");
  cpSync(template, calib, { recursive: true });
  const { renames } = runWorker(calib, f.sup, -1);
  expect(layout(calib)).toEqual(want);
  expect(renames).toBeGreaterThanOrEqual(SUBS.length * 3); // per submodule: the move, the .git file, core.worktree
  for (let k = 1; k < renames; k++) {
    const trial = join(tmp.path, `trial-${k}`);
    cpSync(template, trial, { recursive: true });
    expect(runWorker(trial, f.sup, k).killed).toBe(true);
    for (const place of repositoryPlaces(trial)) expect(place).not.toMatch(/NONE|both/);
    expect(runWorker(trial, f.sup, -1).killed).toBe(false);
    expect({ k, layout: layout(trial) }).toEqual({ k, layout: want });
    expect(git(trial, "status", "--porcelain")).toBe("");
    for (const p of SUBS) git(join(trial, p), "fsck", "--no-progress");
  }
});

test("a fresh clone of submodules SIGKILLed at steps across it is completed by the next pass", async () => {
  const f = family();
  const want = layout(byGit(f.sup, join(tmp.path, "by-git")));
  const template = join(tmp.path, "template");
  await backendFor(f.sup).clone(f.sup, template, { ref: null, signal: never() });
  const calib = join(tmp.path, "calibrate");
  cpSync(template, calib, { recursive: true });
  const { renames } = runWorker(calib, f.sup, -1);
  expect(layout(calib)).toEqual(want);
  // Every step boundary would be many trials: eight spread across the whole pass, the last steps included.
  const points = [...new Set([1, 2, 3, ...[0.2, 0.35, 0.5, 0.65, 0.8].map((x) => Math.round(x * renames)), renames - 2, renames - 1])].filter((k) => k >= 1 && k < renames);
  expect(points.length).toBeGreaterThanOrEqual(8);
  for (const k of points) {
    const trial = join(tmp.path, `trial-${k}`);
    cpSync(template, trial, { recursive: true });
    expect(runWorker(trial, f.sup, k).killed).toBe(true);
    expect(runWorker(trial, f.sup, -1).killed).toBe(false);
    expect({ k, layout: layout(trial) }).toEqual({ k, layout: want });
    expect(git(trial, "status", "--porcelain")).toBe("");
  }
});

test("a .gitmodules name never makes grex write outside .git/modules", async () => {
  const f = family();
  const gd = join(tmp.path, "x", ".git");
  expect(moduleGitdir(gd, "vendor/lib")).toEqual({ gitdir: join(gd, "modules", "vendor", "lib") });
  expect(moduleGitdir(gd, "/abs/name")).toEqual({ gitdir: join(gd, "modules", "abs", "name") });
  for (const name of [".", "./", "a/..", "../x", "../../x"]) expect("refused" in moduleGitdir(gd, name)).toBe(true);

  // A name that would put one module's repository inside another's (git's validate_submodule_git_dir).
  // (git itself refuses to make such a pair, so the tree is written by hand.)
  const sup = repo(join(tmp.path, "nesting"), { README: "x\n" });
  writeFileSync(join(sup, ".gitmodules"), '[submodule "a"]\n\tpath = one\n\turl = ../lib\n[submodule "a/modules/b"]\n\tpath = two\n\turl = ../inner\n');
  git(sup, "add", ".gitmodules");
  git(sup, "update-index", "--add", "--cacheinfo", `160000,${git(f.lib, "rev-parse", "HEAD")},one`);
  git(sup, "update-index", "--add", "--cacheinfo", `160000,${git(f.inner, "rev-parse", "HEAD")},two`);
  git(sup, "commit", "-q", "-m", "nesting names");
  const dest = join(tmp.path, "nesting-clone");
  await backendFor(sup).clone(sup, dest, { ref: null, signal: never() });
  // Refused before anything is cloned.
  const err = await updateSubmodules(dest, sup, never(), env).catch((e: unknown) => e);
  expect(String((err as Error).message)).toMatch(/its name 'a\/modules\/b' would put its repository inside that of submodule 'a'; refusing to clone it\.$/);
  expect(existsSync(join(dest, ".git", "modules"))).toBe(false);
  expect(readdirSync(join(dest, "one"))).toEqual([]);
  // One placed by an earlier pass (or by git) counts as well, as in git's validate_submodule_git_dir.
  expect(moduleGitdir(join(f.sup, ".git"), "vendor/lib/x")).toEqual({ refused: expect.stringMatching(/inside that of another submodule/) });

  // `../../x` (refused by git's check_submodule_name before anything is cloned): nothing beside or above .git/modules.
  const evil = repo(join(tmp.path, "evil"), { README: "x\n" });
  git(evil, ...FILE, "submodule", "add", "-q", "--name", "ok", "../lib", "sub");
  writeFileSync(join(evil, ".gitmodules"), '[submodule "../../x"]\n\tpath = sub\n\turl = ../lib\n');
  git(evil, "commit", "-q", "-am", "escape");
  const evilClone = join(tmp.path, "evil-clone");
  await backendFor(evil).clone(evil, evilClone, { ref: null, signal: never() });
  const refused = await updateSubmodules(evilClone, evil, never(), env).catch((e: unknown) => e);
  expect(String((refused as Error).message)).toMatch(/unsafe name '\.\.\/\.\.\/x'/);
  expect(existsSync(join(evilClone, "x"))).toBe(false);
  expect(existsSync(join(evilClone, ".git", "x"))).toBe(false);
  expect(existsSync(join(tmp.path, "x"))).toBe(false);
  expect(existsSync(join(evilClone, ".git", "modules"))).toBe(false);
  expect(readdirSync(join(evilClone, "sub"))).toEqual([]);
});

test("grex add --recurse-submodules lays them out as git does, and grex sync migrates a pack an older grex laid out", async () => {
  const { TestWorkspace } = await import("../helpers/workspace.ts");
  const { rmSync } = await import("node:fs");
  const t = new TestWorkspace("grex-submodule-layout-ws-");
  try {
    const f = family(t.upstream);
    writeFileSync(join(t.home, ".gitconfig"), '[protocol "file"]\n\tallow = always\n'); // local submodule URLs: the user's opt-in
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", f.sup, "--recurse-submodules", "--no-install", "--json")).code).toBe(0);
    const pack = join(t.ws, "super");
    const want = layout(byGit(f.sup, join(tmp.path, "by-git")));
    expect(layout(pack)).toEqual(want);
    expect(git(pack, "config", "submodule.recurse")).toBe("true");
    // Plain `git pull` in the pack (submodule.recurse on) brings the nested submodules along.
    advance(f);
    git(pack, ...FILE, "pull", "-q");
    expect(readFileSync(join(pack, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe(`inner ${round}\n`);
    expect(git(pack, "status", "--porcelain")).toBe("");

    // The same pack as an older grex left it: each submodule a clone with its own .git directory.
    for (const p of SUBS.slice(0, 2)) rmSync(join(pack, p), { recursive: true, force: true });
    rmSync(join(pack, ".git", "modules"), { recursive: true, force: true });
    oldLayout(f, pack, true);
    advance(f);
    const r = await t.grex("sync", "--json");
    expect(r.code).toBe(0);
    for (const p of SUBS) expect(lstatSync(join(pack, p, ".git")).isFile()).toBe(true);
    expect(moduleDirs(pack)).toEqual(["toolkit", "vendor/lib", "vendor/lib/modules/deps/inner"]);
    expect(readFileSync(join(pack, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe(`inner ${round}\n`);
    expect(git(pack, "status", "--porcelain")).toBe("");
    const st = await t.grex("status", "--json");
    const row = (st.json.packs as Array<{ id: string; drift: string }>).find((p) => p.id === "super");
    expect(row?.drift).toBe("clean");
    // And git's plain pull works there now.
    advance(f);
    git(pack, ...FILE, "pull", "-q");
    expect(readFileSync(join(pack, "vendor", "lib", "deps", "inner", "inner.txt"), "utf8")).toBe(`inner ${round}\n`);
    for (const p of SUBS) git(join(pack, p), "fsck", "--no-progress");
  } finally {
    t.cleanup();
  }
});

test("a submodule deinitialised by git (its repository kept under .git/modules, its directory empty) is left so, as git's own update leaves it", async () => {
  const f = family();
  const want = layout(byGit(f.sup, join(tmp.path, "by-git")));
  const clone = join(tmp.path, "by-grex");
  await byGrex(f.sup, clone);
  git(clone, "submodule", "deinit", "-q", "-f", "vendor/lib");
  expect(readdirSync(join(clone, "vendor", "lib"))).toEqual([]);
  const done = await updateSubmodules(clone, f.sup, never(), env);
  expect(done.map((d) => [d.path, d.result])).toEqual([
    ["tools/kit", "unchanged"],
    ["vendor/lib", "skipped"],
  ]);
  expect(readdirSync(join(clone, "vendor", "lib"))).toEqual([]);
  expect(isGitDirectory(join(clone, ".git", "modules", "vendor", "lib"))).toBe(true);
  // git brings it back into the same place, and grex finds it there.
  git(clone, ...FILE, "submodule", "update", "-q", "--init", "--recursive");
  expect(layout(clone)).toEqual(want);
  const again = await updateSubmodules(clone, f.sup, never(), env);
  expect(again.every((d) => d.result === "unchanged")).toBe(true);
  expect(await backendFor(clone).isDirty(clone)).toBe(false);
});

test("a submodule whose .git file names a repository that is gone stops with one sentence, and nothing is changed", async () => {
  const f = family();
  const clone = join(tmp.path, "by-grex");
  await byGrex(f.sup, clone);
  const { rmSync } = await import("node:fs");
  rmSync(join(clone, ".git", "modules", "toolkit"), { recursive: true, force: true });
  const err = await updateSubmodules(clone, f.sup, never(), env).catch((e: unknown) => e);
  expect(String((err as Error).message)).toMatch(/submodule 'toolkit' at 'tools\/kit' has a \.git file naming .*modules\/toolkit, which holds no repository; move the submodule's directory away, then run the command again to clone it afresh\.$/);
  expect(readFileSync(join(clone, "tools", "kit", "inner.txt"), "utf8")).toBe("inner\n");
  rmSync(join(clone, "tools", "kit"), { recursive: true, force: true });
  const done = await updateSubmodules(clone, f.sup, never(), env);
  expect(done.find((d) => d.path === "tools/kit")?.result).toBe("cloned");
  expect(git(clone, "status", "--porcelain")).toBe("");
});
