// Whose checkout is it? Detached checkouts grex made (`sync --locked`) are
// grex's to move later without --force; a HEAD the user detached and a topic
// branch are the user's, and a lock that cannot be applied to them is never a
// silent exit 0. A fresh clone of a workspace repository plus `grex init` or
// `grex sync` leaves the committed files as they were.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { git, type RunResult, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

async function grexIn(dir: string, home: string, ...argv: string[]): Promise<RunResult> {
  mkdirSync(home, { recursive: true });
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    cwd: dir,
    env: { ...t.env, HOME: home },
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    stdoutTTY: false,
    stderrTTY: false,
  });
  return { code, stdout, stderr, json: argv.includes("--json") && stdout.trim() !== "" ? JSON.parse(stdout) : {} };
}

const headOf = (dir: string) => git(dir, "rev-parse", "HEAD");
const branchOf = (dir: string) => git(dir, "rev-parse", "--abbrev-ref", "HEAD");
const porcelain = (dir: string) => git(dir, "status", "--porcelain");
const COMMITTED = ["grex.jsonl", "grex.lock.jsonl", ".gitignore", ".gitattributes"];
const committed = (dir: string) => COMMITTED.map((f) => readFileSync(join(dir, f), "utf8"));

/** A's workspace with the given packs, committed; returns B's fresh clone of it. */
async function teamWorkspace(packs: string[]): Promise<{ dir: string; home: string }> {
  expect((await t.grex("init")).code).toBe(0);
  for (const p of packs) expect((await t.grex("add", p)).code).toBe(0);
  git(t.ws, "init", "-q", "-b", "main");
  git(t.ws, "add", "-A");
  git(t.ws, "commit", "-q", "-m", "workspace");
  const dir = join(t.root, "b");
  git(t.root, "clone", "-q", t.ws, dir);
  return { dir, home: join(t.root, "b-home") };
}

describe("a fresh clone of the workspace repository", () => {
  test("grex init, grex sync and grex sync --locked leave grex.jsonl, grex.lock.jsonl, .gitignore and .gitattributes byte-identical", async () => {
    t = new TestWorkspace();
    const packs = [t.repo("declarative-basic"), t.repo("notes", { "n.md": "n\n" })];
    const b = await teamWorkspace(packs);
    const before = committed(b.dir);
    for (const argv of [["init"], ["sync"], ["sync", "--locked"], ["status"], ["doctor"]]) {
      const r = await grexIn(b.dir, b.home, ...argv);
      expect({ argv, code: r.code, stderr: r.stderr }).toEqual({ argv, code: 0, stderr: "" });
      expect(committed(b.dir)).toEqual(before);
      expect(porcelain(b.dir)).toBe("");
    }
    // What B installed, and when, is B's: beside the lockfile, not in it.
    const local = JSON.parse(readFileSync(join(b.dir, ".grex", ".state", "installs.json"), "utf8")) as { packs: Record<string, { installed_at: string }> };
    expect(Object.keys(local.packs).sort()).toEqual(["declarative-basic", "notes"]);
    expect(local.packs.notes?.installed_at).not.toBe("");
  });
});

describe("detached checkouts", () => {
  test("a locked commit no longer on the tracked branch is checked out detached and recorded; plain sync moves it on; a HEAD the user detached stays, and --locked says so", async () => {
    t = new TestWorkspace();
    const up = t.repo("lib", { "a.txt": "1\n" });
    const b = await teamWorkspace([up]);
    const locked = headOf(up);
    // Upstream rewrites main: the locked commit stays reachable through a tag only.
    git(up, "tag", "old");
    git(up, "checkout", "-q", "--orphan", "fresh");
    t.commit(up, { "a.txt": "new root\n" }, "rewritten");
    const y = t.commit(up, { "a.txt": "new 2\n" }, "rewritten 2");
    git(up, "branch", "-M", "fresh", "main");

    const dir = join(b.dir, "lib");
    const r = await grexIn(b.dir, b.home, "sync", "--locked", "--json");
    expect(r.code).toBe(0);
    expect(headOf(dir)).toBe(locked);
    expect(branchOf(dir)).toBe("HEAD"); // detached: the commit is not on origin/main
    const local = JSON.parse(readFileSync(join(b.dir, ".grex", ".state", "installs.json"), "utf8")) as { packs: Record<string, { checkout?: unknown }> };
    expect(local.packs.lib?.checkout).toEqual({ sha: locked, branch: null });
    const st = await grexIn(b.dir, b.home, "status", "--json");
    expect((st.json.packs as Array<{ drift: string; off_branch: string | null }>)[0]).toMatchObject({ drift: "clean", off_branch: null });
    expect((await grexIn(b.dir, b.home, "doctor")).code).toBe(0);

    // Grex's own detached checkout: a plain sync moves it onto the tracked branch, no --force.
    const plain = await grexIn(b.dir, b.home, "sync", "--json");
    expect(plain.code).toBe(0);
    expect((plain.json.packs as Array<{ result: string }>)[0]?.result).toBe("ok");
    expect(branchOf(dir)).toBe("main");
    expect(headOf(dir)).toBe(y);

    // A HEAD the user detached is the user's: plain sync leaves it (as before), --locked fails naming it.
    git(dir, "checkout", "-q", "--detach", "HEAD~1");
    const userHead = headOf(dir);
    const left = await grexIn(b.dir, b.home, "sync", "--json");
    expect(left.code).toBe(0);
    expect((left.json.packs as Array<{ result: string; message: string }>)[0]).toMatchObject({ result: "skipped", message: expect.stringContaining("off-branch") });
    const lockedAgain = await grexIn(b.dir, b.home, "sync", "--locked");
    expect(lockedAgain.code).toBe(4);
    expect(lockedAgain.stderr).toContain("lib");
    expect(lockedAgain.stderr).toContain("not on its locked commit");
    expect(headOf(dir)).toBe(userHead);
  });

  test("--locked leaves a topic branch as it is and fails saying so; --force puts it on its locked commit", async () => {
    t = new TestWorkspace();
    const up = t.repo("lib", { "a.txt": "1\n" });
    const b = await teamWorkspace([up]);
    const locked = headOf(up);
    expect((await grexIn(b.dir, b.home, "sync", "--locked")).code).toBe(0);
    const dir = join(b.dir, "lib");
    git(dir, "switch", "-q", "-c", "topic");
    const mine = t.commit(dir, { "b.txt": "mine\n" }, "mine");
    const r = await grexIn(b.dir, b.home, "sync", "--locked", "--json");
    expect(r.code).toBe(4);
    expect((r.json.packs as Array<{ result: string; message: string }>)[0]).toMatchObject({ result: "failed", message: expect.stringContaining("topic branch 'topic'") });
    expect(branchOf(dir)).toBe("topic");
    expect(headOf(dir)).toBe(mine);
    const forced = await grexIn(b.dir, b.home, "sync", "--locked", "--force");
    expect(forced.code).toBe(0);
    expect(headOf(dir)).toBe(locked);
    expect(branchOf(dir)).toBe("main");
    expect(git(dir, "rev-parse", "refs/heads/topic")).toBe(mine); // the topic itself is kept
  });
});

describe("adopted clones with local changes", () => {
  test("import --scan of a dirty clone: status shows both facts; sync installs a setup that writes nothing inside it, or names what blocks it", async () => {
    t = new TestWorkspace();
    const safe = t.repo("dots", {
      ".grex/pack.yaml": 'schema_version: "1"\nname: dots\ntype: declarative\nactions:\n  - mkdir: { path: $HOME/.config/dots }\n  - symlink: { src: rc, dst: $HOME/.dotsrc }\n',
      rc: "rc\n",
    });
    const unsafe = t.repo("tool", {
      ".grex/pack.yaml": 'schema_version: "1"\nname: tool\ntype: declarative\nactions:\n  - mkdir: { path: build }\n',
    });
    expect((await t.grex("init")).code).toBe(0);
    for (const [up, name] of [[safe, "dots"], [unsafe, "tool"]] as const) {
      git(t.root, "clone", "-q", up, join(t.ws, name));
      await Bun.write(join(t.ws, name, "notes.txt"), "work in progress\n");
    }
    expect((await t.grex("import", "--scan")).code).toBe(0);
    const st = await t.grex("status", "--json");
    for (const p of st.json.packs as Array<{ id: string; drift: string; dirty: boolean }>) expect(p).toMatchObject({ drift: "not-installed", dirty: true });
    expect((await t.grex("status")).stdout).toContain("has uncommitted changes");

    const r = await t.grex("sync", "--json");
    expect(r.code).toBe(0);
    const rowOf = (id: string) => (r.json.packs as Array<{ id: string; result: string; message: string }>).find((p) => p.id === id);
    expect(rowOf("dots")).toMatchObject({ result: "ok", message: expect.stringContaining("writes nothing inside the pack, so it was installed") });
    expect(readFileSync(join(t.home, ".dotsrc"), "utf8")).toBe("rc\n");
    expect(rowOf("tool")).toMatchObject({ result: "dirty", message: expect.stringContaining("action 0 (mkdir) writes build, inside the pack") });
    // Neither work tree was touched.
    for (const name of ["dots", "tool"]) expect(porcelain(join(t.ws, name))).toBe("?? notes.txt");
    const after = await t.grex("status", "--json");
    const drift = Object.fromEntries((after.json.packs as Array<{ id: string; drift: string }>).map((p) => [p.id, p.drift]));
    expect(drift).toEqual({ dots: "dirty", tool: "not-installed" });
  });
});

describe("the tracked branch under a topic", () => {
  /** A workspace with the pack `lib` (its lockfile as add wrote it), then switched to a new branch `topic` with one commit. */
  async function libOnTopic(): Promise<{ up: string; dir: string; lockBefore: string }> {
    t = new TestWorkspace();
    const up = t.repo("lib", { "a.txt": "1\n" });
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", up)).code).toBe(0);
    const dir = join(t.ws, "lib");
    const lockBefore = readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8");
    git(dir, "switch", "-q", "-c", "topic");
    t.commit(dir, { "mine.txt": "mine\n" }, "mine");
    return { up, dir, lockBefore };
  }

  test("grex init leaves a pack on a topic branch out of the lockfile's line, as sync does: the tracked branch and its commit stay", async () => {
    const { dir, lockBefore } = await libOnTopic();
    expect(lockBefore).toContain('"branch":"main"');
    for (const argv of [["init"], ["sync"]]) {
      const r = await t.grex(...argv);
      expect({ argv, code: r.code, stderr: r.stderr }).toEqual({ argv, code: 0, stderr: "" });
      expect(readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8")).toBe(lockBefore);
      expect(branchOf(dir)).toBe("topic");
    }
  });

  test("moves as `git fetch origin main:main` moves it: fast-forward only, HEAD and work tree untouched; status knows the topic's upstream", async () => {
    const { up, dir } = await libOnTopic();
    t.commit(up, { "a.txt": "2\n" }, "upstream 2");

    // git's own answer, on a copy of the pack made before grex runs.
    const twin = join(t.root, "twin");
    git(t.root, "clone", "-q", "--no-local", dir, twin); // a copy with lib's branches as origin's: rebuild it as lib is
    git(twin, "remote", "set-url", "origin", up);
    git(twin, "fetch", "-q", "origin");
    git(twin, "branch", "-f", "main", git(dir, "rev-parse", "refs/heads/main"));
    git(twin, "switch", "-q", "topic");
    git(twin, "fetch", "-q", "origin", "main:main");

    const r = await t.grex("sync", "--json");
    expect(r.code).toBe(0);
    expect((r.json.packs as Array<{ message: string }>)[0]?.message).toBe("on topic; main moved 1 commit; topic is 1 behind main");
    for (const ref of ["refs/heads/main", "refs/heads/topic", "HEAD"]) expect(git(dir, "rev-parse", ref)).toBe(git(twin, "rev-parse", ref));
    expect(git(dir, "symbolic-ref", "HEAD")).toBe("refs/heads/topic");
    expect(porcelain(dir)).toBe("");
    git(dir, "fsck", "--no-progress");

    // Local commits on main that origin lacks: git refuses the non-fast-forward, and grex leaves main as git does.
    git(dir, "switch", "-q", "main");
    const localMain = t.commit(dir, { "local.txt": "l\n" }, "local on main");
    git(dir, "switch", "-q", "topic");
    t.commit(up, { "a.txt": "3\n" }, "upstream 3");
    git(twin, "switch", "-q", "main");
    t.commit(twin, { "local.txt": "l\n" }, "local on main");
    git(twin, "switch", "-q", "topic");
    const refused = Bun.spawnSync(["git", "fetch", "-q", "origin", "main:main"], { cwd: twin, env: t.env as Record<string, string> });
    expect(refused.exitCode).not.toBe(0);
    const held = await t.grex("sync", "--json");
    expect(held.code).toBe(0);
    expect((held.json.packs as Array<{ result: string; message: string }>)[0]).toMatchObject({ result: "ok", message: expect.stringContaining("main has 1 commit origin/main lacks; left as is") });
    expect(git(dir, "rev-parse", "refs/heads/main")).toBe(localMain);

    // Pushed with an upstream: status says so.
    git(dir, "push", "-q", "-u", "origin", "topic");
    const st = await t.grex("status", "--json");
    expect((st.json.packs as Array<{ drift: string; topic: unknown }>)[0]).toMatchObject({ drift: "topic", topic: { branch: "topic", base: "main", upstream: "origin/topic", pushed: true } });
    t.commit(dir, { "more.txt": "m\n" }, "more");
    const st2 = await t.grex("status", "--json");
    expect((st2.json.packs as Array<{ topic: { pushed: boolean } }>)[0]?.topic.pushed).toBe(false);
  });
});
