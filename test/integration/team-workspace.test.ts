// The workspace itself in git, as a team uses it: committed grex.jsonl,
// grex.lock.jsonl, .gitignore and .gitattributes; clones on other machines;
// branches merged with `git merge`. Real git repositories throughout.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { git, type RunResult, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

/** grex run in `dir` with its own HOME (another teammate's machine). */
async function grexIn(dir: string, home: string, argv: string[], extraEnv: Record<string, string> = {}): Promise<RunResult> {
  mkdirSync(home, { recursive: true });
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    cwd: dir,
    env: { ...t.env, HOME: home, ...extraEnv },
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    stdoutTTY: false,
    stderrTTY: false,
  });
  return { code, stdout, stderr, json: argv.includes("--json") && stdout.trim() !== "" ? JSON.parse(stdout) : {} };
}

/** Make the workspace a git repository and commit everything grex wants committed. */
function commitWorkspace(dir: string, message: string): void {
  if (!existsSync(join(dir, ".git"))) git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", message);
}

/** A teammate's clone of the workspace repository. */
function cloneWorkspace(name: string): { dir: string; home: string } {
  const dir = join(t.root, name);
  git(t.root, "clone", "-q", t.ws, dir);
  return { dir, home: join(t.root, `${name}-home`) };
}

const porcelain = (dir: string) => git(dir, "status", "--porcelain");
const headOf = (dir: string) => git(dir, "rev-parse", "HEAD");
const lockShas = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readFileSync(join(dir, "grex.lock.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; sha: string })
      .map((e) => [e.id, e.sha]),
  );

describe("committed files do not churn", () => {
  test("10 no-op syncs, status, ls and doctor leave the committed workspace clean (bytes and mtimes)", async () => {
    t = new TestWorkspace();
    t.repo("child-a");
    t.repo("child-b");
    expect((await t.grex("init")).code).toBe(0);
    for (const p of [t.repo("meta-basic"), t.repo("declarative-basic"), t.repo("scripted-basic"), t.repo("notes", { "n.md": "n\n" })]) {
      expect((await t.grex("add", p)).code).toBe(0);
    }
    expect((await t.grex("sync")).code).toBe(0);
    commitWorkspace(t.ws, "workspace");
    expect(porcelain(t.ws)).toBe("");
    const files = ["grex.jsonl", "grex.lock.jsonl", ".gitignore", ".gitattributes"].map((f) => join(t.ws, f));
    const before = files.map((f) => [readFileSync(f, "utf8"), statSync(f).mtimeMs]);
    for (let i = 0; i < 10; i++) {
      for (const verb of ["sync", "status", "ls", "doctor"]) expect((await t.grex(verb)).code).toBe(0);
    }
    expect(files.map((f) => [readFileSync(f, "utf8"), statSync(f).mtimeMs])).toEqual(before);
    expect(porcelain(t.ws)).toBe("");
    // The runs' markers are in the journal, which .gitignore keeps out of git.
    expect(readFileSync(join(t.ws, ".grex", ".state", "journal.jsonl"), "utf8")).toContain('"op":"sync"');
  });
});

describe("branches merge", () => {
  test("two branches adding different packs merge with `git merge` without conflicts; the result lists both", async () => {
    t = new TestWorkspace();
    const p1 = t.repo("p1", { "README.md": "p1\n" });
    const p2 = t.repo("p2", { "README.md": "p2\n" });
    const p3 = t.repo("p3", { "README.md": "p3\n" });
    await t.grex("init");
    expect((await t.grex("add", p1)).code).toBe(0);
    expect(readFileSync(join(t.ws, ".gitattributes"), "utf8")).toContain("/grex.jsonl merge=union");
    commitWorkspace(t.ws, "base");
    const a = cloneWorkspace("a");
    const b = cloneWorkspace("b");
    for (const [side, pack] of [[a, p2], [b, p3]] as const) {
      expect((await grexIn(side.dir, side.home, ["init"])).code).toBe(0);
      expect((await grexIn(side.dir, side.home, ["add", pack])).code).toBe(0);
      commitWorkspace(side.dir, `add ${pack}`);
    }
    git(a.dir, "fetch", "-q", b.dir, "main");
    git(a.dir, "merge", "-q", "--no-edit", "FETCH_HEAD"); // throws on a conflict
    expect(git(a.dir, "ls-files", "-u")).toBe("");
    const ls = await grexIn(a.dir, a.home, ["ls", "--json"]);
    expect((ls.json.packs as Array<{ id: string }>).map((p) => p.id).sort()).toEqual(["p1", "p2", "p3"]);
    expect(Object.keys(lockShas(a.dir)).sort()).toEqual(["p1", "p2", "p3"]);
    const doctor = await grexIn(a.dir, a.home, ["doctor", "--json"]);
    const merge = (doctor.json.findings as Array<{ check: string; severity: string }>).filter((f) => f.check === "merge-conflicts");
    expect(merge).toEqual([expect.objectContaining({ severity: "ok" })]);
    expect((await grexIn(a.dir, a.home, ["sync"])).code).toBe(0);
    expect(existsSync(join(a.dir, "p3", "README.md"))).toBe(true);
  });

  test("two branches re-pinning the same pack merge in git, and doctor reports the conflict until the user picks", async () => {
    t = new TestWorkspace();
    const tools = t.repo("tools", { "README.md": "1\n" });
    git(tools, "tag", "v1");
    t.commit(tools, { "README.md": "2\n" });
    git(tools, "tag", "v2");
    t.commit(tools, { "README.md": "3\n" });
    git(tools, "tag", "v3");
    await t.grex("init");
    expect((await t.grex("add", tools, "--ref", "v1")).code).toBe(0);
    commitWorkspace(t.ws, "base");
    const a = cloneWorkspace("a");
    const b = cloneWorkspace("b");
    for (const [side, ref] of [[a, "v2"], [b, "v3"]] as const) {
      expect((await grexIn(side.dir, side.home, ["init"])).code).toBe(0);
      expect((await grexIn(side.dir, side.home, ["update", "tools", "--ref", ref])).code).toBe(0);
      commitWorkspace(side.dir, `tools at ${ref}`);
    }
    git(a.dir, "fetch", "-q", b.dir, "main");
    git(a.dir, "merge", "-q", "--no-edit", "FETCH_HEAD");
    expect(git(a.dir, "ls-files", "-u")).toBe("");
    const doctor = await grexIn(a.dir, a.home, ["doctor", "--json"]);
    expect(doctor.code).toBe(7);
    const merge = (doctor.json.findings as Array<{ check: string; severity: string; pack: string; detail: string }>).filter(
      (f) => f.check === "merge-conflicts",
    );
    expect(merge.map((f) => [f.severity, f.pack])).toEqual([
      ["error", "tools"],
      ["error", "tools"],
    ]);
    expect(merge[0]?.detail).toContain("'v2'");
    expect(merge[0]?.detail).toContain("'v3'");
    expect(merge[1]?.detail).toContain("grex.lock.jsonl records pack 'tools' at 2 commits");
    // --locked refuses to guess which commit is locked.
    const locked = await grexIn(a.dir, a.home, ["sync", "--locked"]);
    expect(locked.code).toBe(3);
    expect(locked.stderr).toContain("'tools'");
    // The user picks; the new line supersedes both branches' lines.
    expect((await grexIn(a.dir, a.home, ["update", "tools", "--ref", "v3"])).code).toBe(0);
    const after = await grexIn(a.dir, a.home, ["doctor", "--json"]);
    expect(after.code).toBe(0);
    expect(headOf(join(a.dir, "tools"))).toBe(git(tools, "rev-parse", "v3"));
  });
});

describe("--locked", () => {
  test("round trip: clone the workspace after upstreams moved; sync --locked lands on the locked commits, children included, and writes nothing committed", async () => {
    t = new TestWorkspace();
    const childA = t.repo("child-a");
    t.repo("child-b");
    const meta = t.repo("meta-basic");
    const notes = t.repo("notes", { "n.md": "n\n" });
    await t.grex("init");
    for (const p of [meta, notes]) expect((await t.grex("add", p)).code).toBe(0);
    expect((await t.grex("sync")).code).toBe(0);
    commitWorkspace(t.ws, "workspace");
    const locked = lockShas(t.ws);
    expect(Object.keys(locked).sort()).toEqual(["meta-basic", "meta-basic/child-a", "meta-basic/second", "notes"]);
    // Upstreams move on.
    t.commit(notes, { "n.md": "moved\n" });
    t.commit(childA, { "files/a.txt": "moved\n" });
    t.commit(meta, { "README.md": "moved\n" });

    const c = cloneWorkspace("c");
    const r = await grexIn(c.dir, c.home, ["sync", "--locked", "--json"]);
    expect(r.code).toBe(0);
    const dirOf = { "meta-basic": "meta-basic", "meta-basic/child-a": "meta-basic/child-a", "meta-basic/second": "meta-basic/second", notes: "notes" };
    for (const [id, rel] of Object.entries(dirOf)) expect({ id, sha: headOf(join(c.dir, rel)) }).toEqual({ id, sha: locked[id] as string });
    expect(existsSync(join(c.home, ".child-a", "a.txt"))).toBe(true); // setup ran
    expect(porcelain(c.dir)).toBe(""); // grex.jsonl and grex.lock.jsonl untouched
    // Again: still there (a pack detached at its locked commit is where --locked left it).
    const again = await grexIn(c.dir, c.home, ["sync", "--locked", "--json"]);
    expect(again.code).toBe(0);
    expect((again.json.packs as Array<{ result: string }>).every((p) => p.result === "ok")).toBe(true);
    expect(headOf(join(c.dir, "notes"))).toBe(locked.notes as string);

    // GREX_LOCKED=1 and `init --locked` do the same on fresh clones.
    const d = cloneWorkspace("d");
    expect((await grexIn(d.dir, d.home, ["sync"], { GREX_LOCKED: "1" })).code).toBe(0);
    expect(headOf(join(d.dir, "meta-basic", "child-a"))).toBe(locked["meta-basic/child-a"] as string);
    const e = cloneWorkspace("e");
    expect((await grexIn(e.dir, e.home, ["init", "--locked"])).code).toBe(0);
    expect(headOf(join(e.dir, "notes"))).toBe(locked.notes as string);
    expect(porcelain(e.dir)).toBe("");

    // Without --locked, sync moves forward as always, and records it.
    const fwd = await grexIn(c.dir, c.home, ["sync", "--json"]);
    expect(fwd.code).toBe(0);
    expect(headOf(join(c.dir, "notes"))).toBe(headOf(notes));
    expect(headOf(join(c.dir, "meta-basic", "child-a"))).toBe(headOf(childA));
    expect(lockShas(c.dir).notes).toBe(headOf(notes));
  });

  test("--dry-run shows the locked commits and changes nothing; --ref beside --locked is a usage error", async () => {
    t = new TestWorkspace();
    const p1 = t.repo("p1", { "README.md": "1\n" });
    await t.grex("init");
    expect((await t.grex("add", p1)).code).toBe(0);
    const locked = lockShas(t.ws).p1 as string;
    const tip = t.commit(p1, { "README.md": "2\n" });
    const plain = await t.grex("sync", "--dry-run", "--json");
    expect((plain.json.packs as Array<{ sha_after: string }>)[0]?.sha_after).toBe(tip); // without --locked: forward
    const dry = await t.grex("sync", "--locked", "--dry-run", "--json");
    expect(dry.code).toBe(0);
    expect((dry.json.packs as Array<{ id: string; sha_after: string }>).map((p) => [p.id, p.sha_after])).toEqual([["p1", locked]]);
    expect(headOf(join(t.ws, "p1"))).toBe(locked);
    const both = await t.grex("sync", "--locked", "--ref", "main");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--locked");
  });

  test("a registered pack missing from the lockfile is exit 3 naming it, before anything is cloned", async () => {
    t = new TestWorkspace();
    const p1 = t.repo("p1", { "README.md": "p1\n" });
    const p2 = t.repo("p2", { "README.md": "p2\n" });
    await t.grex("init");
    for (const p of [p1, p2]) expect((await t.grex("add", p)).code).toBe(0);
    const lock = readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8").split("\n");
    writeFileSync(join(t.ws, "grex.lock.jsonl"), lock.filter((l) => !l.includes('"id":"p2"')).join("\n"));
    commitWorkspace(t.ws, "p2 not locked");
    const c = cloneWorkspace("c");
    const r = await grexIn(c.dir, c.home, ["sync", "--locked"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("'p2'");
    expect(r.stderr).toContain("grex.lock.jsonl");
    expect(existsSync(join(c.dir, "p1"))).toBe(false);
    expect(existsSync(join(c.dir, "p2"))).toBe(false);
  });

  test("a locked commit the upstream no longer has is exit 4 naming the pack; nothing moves", async () => {
    t = new TestWorkspace();
    const p1 = t.repo("p1", { "README.md": "1\n" });
    const p2 = t.repo("p2", { "README.md": "1\n" });
    await t.grex("init");
    for (const p of [p1, p2]) expect((await t.grex("add", p)).code).toBe(0);
    commitWorkspace(t.ws, "base");
    const c = cloneWorkspace("c");
    expect((await grexIn(c.dir, c.home, ["sync", "--locked"])).code).toBe(0);
    const p1Before = headOf(join(c.dir, "p1"));
    const p2Before = headOf(join(c.dir, "p2"));
    // Upstream moves, the workspace locks the new commits, then p1's history is rewritten away.
    t.commit(p1, { "README.md": "2\n" });
    t.commit(p2, { "README.md": "2\n" });
    expect((await t.grex("sync")).code).toBe(0);
    commitWorkspace(t.ws, "moved");
    git(p1, "reset", "-q", "--hard", "HEAD~1");
    git(p1, "reflog", "expire", "--expire=now", "--all");
    git(p1, "gc", "-q", "--prune=now");
    git(c.dir, "pull", "-q", "--no-rebase", "origin", "main");
    const r = await grexIn(c.dir, c.home, ["sync", "--locked"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("'p1'");
    expect(r.stderr).not.toContain("'p2'");
    expect(headOf(join(c.dir, "p1"))).toBe(p1Before);
    expect(headOf(join(c.dir, "p2"))).toBe(p2Before); // its locked commit exists, but nothing moves before every check passed
    expect(porcelain(c.dir)).toBe("");
  });
});

describe("older workspaces", () => {
  test("an action an older grex left open in grex.jsonl is re-run by the next sync, which closes it in the journal; grex.jsonl is left as it was", async () => {
    t = new TestWorkspace();
    const url = t.repo("declarative-basic");
    await t.grex("init");
    expect((await t.grex("add", url)).code).toBe(0);
    // What an older grex killed mid-install left behind: a bracket opened in grex.jsonl itself.
    const manifest = join(t.ws, "grex.jsonl");
    const open = { op: "action_started", ts: new Date().toISOString(), id: "declarative-basic", schema_version: "1", action: "mkdir", idx: 1 };
    writeFileSync(manifest, `${readFileSync(manifest, "utf8")}${JSON.stringify(open)}\n`);
    const text = readFileSync(manifest, "utf8");
    const status = await t.grex("status", "--json");
    expect(JSON.stringify(status.json)).toContain("interrupted");
    const sync = await t.grex("sync", "--json");
    expect(sync.code).toBe(0);
    expect((sync.json.warnings as string[]).join("\n")).toContain("interrupted during action 1 (mkdir)");
    const next = await t.grex("sync", "--json");
    expect(next.json.warnings).toEqual([]);
    expect(readFileSync(manifest, "utf8")).toBe(text);
    // doctor --compact moves the old event out; recovery still reads the same.
    expect((await t.grex("doctor", "--compact")).code).toBe(0);
    expect(readFileSync(manifest, "utf8")).not.toContain("action_started");
    expect((await t.grex("sync", "--json")).json.warnings).toEqual([]);
  });

  test("installed_at moves only when a setup really ran again", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    expect((await t.grex("add", t.repo("declarative-basic"))).code).toBe(0);
    // Per machine: beside the committed lockfile, which never carries it.
    const installedAt = () => (JSON.parse(readFileSync(join(t.ws, ".grex", ".state", "installs.json"), "utf8")) as { packs: Record<string, { installed_at: string }> }).packs["declarative-basic"]?.installed_at;
    expect(readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8")).not.toContain("installed_at");
    const first = installedAt();
    expect(first).not.toBe("");
    expect((await t.grex("sync")).code).toBe(0);
    expect(installedAt()).toBe(first);
    await Bun.sleep(5);
    expect((await t.grex("sync", "--force")).code).toBe(0); // --force reinstalls every pack
    expect(installedAt()).not.toBe(first);
  });
});
