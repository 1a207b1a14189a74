// Shallow clones against the git CLI: `grex add --depth n` beside `git clone
// --depth n` (over the real smart-HTTP server and a file:// URL), a sync of new
// commits beside `git fetch` + `git merge --ff-only` in git's shallow clone,
// `grex update --depth 0` beside `git fetch --unshallow`, and the git CLI
// working in grex's shallow clone (`git log`, `git pull`, `git fsck`).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { GitHttpServer } from "../helpers/git-http-server.ts";
import { servedWorkspace } from "../helpers/served-workspace.ts";
import { git, GIT_ENV, GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let served: string;
let server: GitHttpServer;
servedWorkspace("grex-shallow-", (f) => ({ t, served, server } = f));

/** git as a process that may talk to the in-process HTTP server (a blocking spawn would starve it). */
async function gitA(cwd: string, ...args: string[]): Promise<string> {
  const p = Bun.spawn(["git", ...args], { cwd, env: { ...t.env, ...GIT_ENV }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${err}`);
  return out.trim();
}

async function grex(ws: string, ...argv: string[]) {
  const p = Bun.spawn([process.execPath, GREX_MAIN, ...argv], { cwd: ws, env: t.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** An upstream with a merge in its history (the cut at depth n is not a straight line), published bare under the served root. */
function publish(name: string): { work: string; bare: string } {
  const work = t.repo(name, { "README.md": "0\n" });
  for (let i = 1; i <= 5; i++) t.commit(work, { [`f${i}.txt`]: `${i}\n` }, `c${i}`);
  git(work, "checkout", "-q", "-b", "side", "HEAD~2");
  t.commit(work, { "side.txt": "s\n", "dir/deep.txt": "d\n" }, "side");
  git(work, "checkout", "-q", "main");
  git(work, "merge", "-q", "--no-ff", "side", "-m", "merge side");
  // Tags inside the history a --depth 2 clone gets (lightweight, annotated, a tag of a tag) and one below it.
  git(work, "tag", "light", "side");
  git(work, "tag", "-a", "near", "-m", "near", "main~1");
  git(work, "tag", "-a", "outer", "-m", "outer", "near");
  git(work, "tag", "far", "main~4");
  const bare = join(served, `${name}.git`);
  git(t.root, "clone", "-q", "--bare", work, bare);
  return { work, bare };
}

function push(work: string, bare: string, files: Record<string, string>, message: string): void {
  t.commit(work, files, message);
  git(work, "push", "-q", bare, "main");
}

/** What git sees in a clone: the boundary, the index, the history, the work tree, fsck. */
async function seen(dir: string) {
  const shallowFile = join(dir, ".git", "shallow");
  return {
    shallow: existsSync(shallowFile) ? readFileSync(shallowFile, "latin1") : null,
    index: await gitA(dir, "ls-files", "-s"),
    log: await gitA(dir, "log", "--format=%H"),
    status: await gitA(dir, "status", "--porcelain"),
    head: await gitA(dir, "rev-parse", "HEAD"),
    tags: await gitA(dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags"),
  };
}

async function fsckClean(dir: string): Promise<void> {
  const p = Bun.spawn(["git", "fsck", "--no-progress"], { cwd: dir, env: { ...t.env, ...GIT_ENV }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect({ code, out: out.trim(), err: err.trim() }).toEqual({ code: 0, out: "", err: "" });
}

const manifestLines = (ws: string) =>
  readFileSync(join(ws, "grex.jsonl"), "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Record<string, unknown>);

for (const kind of ["http", "file"] as const) {
  describe(`shallow clones over ${kind === "http" ? "smart HTTP" : "a file:// URL"}`, () => {
    const name = `up-${kind}`;
    let up: { work: string; bare: string };
    let url: string;
    let ws: string;
    let theirs: string;

    beforeAll(async () => {
      up = publish(name);
      url = kind === "http" ? `${server.url}/${name}.git` : `file://${up.bare}`;
      ws = join(t.root, `ws-${kind}`);
      mkdirSync(ws);
      expect((await grex(ws, "init")).code).toBe(0);
      theirs = join(t.root, `git-${kind}`);
    });

    test("grex add --depth 2 makes what git clone --depth 2 makes", async () => {
      const add = await grex(ws, "add", url, "pack", "--depth", "2", "--json");
      expect(add.stderr).toBe("");
      expect(add.code).toBe(0);
      expect((JSON.parse(add.stdout) as { depth: number }).depth).toBe(2);
      await gitA(t.root, "clone", "-q", "--depth", "2", url, theirs);
      const ours = await seen(join(ws, "pack"));
      expect(ours).toEqual(await seen(theirs));
      // The tags into the history fetched are followed, as git's clone follows them; the one below the boundary is not.
      expect(ours.tags.split("\n").map((l) => l.split(" ")[0])).toEqual(["refs/tags/light", "refs/tags/near", "refs/tags/outer"]);
      // The merge's two parents at depth 2 end the history: git's boundary, sorted.
      expect(ours.shallow?.trim().split("\n").length).toBe(2);
      expect(ours.log.split("\n").length).toBe(3);
      await fsckClean(join(ws, "pack"));
      const add0 = manifestLines(ws).find((e) => e.op === "add");
      expect(add0?.depth).toBe(2);
    });

    test("a sync brings the new commits only, as git fetch + merge --ff-only does in git's shallow clone", async () => {
      push(up.work, up.bare, { "new.txt": "new\n" }, "new one");
      push(up.work, up.bare, { "new.txt": "newer\n" }, "new two");
      git(up.work, "tag", "-a", "fresh", "-m", "fresh", "main");
      git(up.work, "push", "-q", up.bare, "fresh");
      const sync = await grex(ws, "sync");
      expect(sync.code).toBe(0);
      await gitA(theirs, "fetch", "-q");
      await gitA(theirs, "merge", "-q", "--ff-only", "origin/main");
      const ours = await seen(join(ws, "pack"));
      expect(ours).toEqual(await seen(theirs));
      expect(ours.log.split("\n").length).toBe(5);
      expect(ours.tags).toContain("refs/tags/fresh ");
      await fsckClean(join(ws, "pack"));
      // The depth stays recorded: a later clone of the pack (another machine) is shallow too.
      expect(manifestLines(ws).filter((e) => e.op === "update")).toEqual([]);
    });

    test("git log and git pull work in grex's shallow clone", async () => {
      push(up.work, up.bare, { "pulled.txt": "p\n" }, "pulled");
      const dir = join(ws, "pack");
      await gitA(dir, "pull", "-q", "--ff-only", "origin", "main");
      expect(await gitA(dir, "log", "-1", "--format=%s")).toBe("pulled");
      await fsckClean(dir);
      await gitA(theirs, "pull", "-q", "--ff-only", "origin", "main");
      expect((await seen(dir)).shallow).toBe((await seen(theirs)).shallow);
    });

    test("the recorded depth holds for a later clone: a sync that finds the pack missing clones it shallow again", async () => {
      const { rmSync } = await import("node:fs");
      rmSync(join(ws, "pack"), { recursive: true, force: true });
      const sync = await grex(ws, "sync");
      expect(sync.code).toBe(0);
      const fresh = join(t.root, `git-fresh-${kind}`);
      await gitA(t.root, "clone", "-q", "--depth", "2", url, fresh);
      expect(await seen(join(ws, "pack"))).toEqual(await seen(fresh));
      await fsckClean(join(ws, "pack"));
      // git's own clone of the same history for the comparisons that follow.
      await gitA(t.root, "clone", "-q", "--depth", "2", url, `${theirs}-2`);
      theirs = `${theirs}-2`;
    });

    test("grex update --depth 0 fetches the whole history, as git fetch --unshallow does, and drops the recorded depth", async () => {
      const up0 = await grex(ws, "update", "pack", "--depth", "0");
      expect(up0.stderr).toBe("");
      expect(up0.code).toBe(0);
      await gitA(theirs, "fetch", "-q", "--unshallow");
      const dir = join(ws, "pack");
      const ours = await seen(dir);
      expect(ours.shallow).toBeNull();
      expect(ours).toEqual(await seen(theirs));
      expect(ours.log).toBe(await gitA(up.work, "log", "--format=%H"));
      await fsckClean(dir);
      const last = manifestLines(ws).filter((e) => e.id === "pack").at(-1);
      expect(last?.op).toBe("update");
      expect(last?.depth).toBeNull();
      const ls = await grex(ws, "ls", "--json");
      expect(ls.stdout).not.toContain('"depth":2');
    });
  });
}

describe("a shallow pack's children", () => {
  test("are cloned at the pack's depth, as git clone --depth 2 clones them, and update --depth 0 brings back their history too", async () => {
    publish("kid");
    const kidUrl = `${server.url}/kid.git`;
    const parent = t.repo("parent-shallow", { ".grex/pack.yaml": `schema_version: "1"\nname: parent-shallow\ntype: meta\nchildren:\n  - url: ${kidUrl}\n    path: kid\n` });
    t.commit(parent, { "more.txt": "more\n" }, "second");
    t.commit(parent, { "more.txt": "even more\n" }, "third");
    git(t.root, "clone", "-q", "--bare", parent, join(served, "parent-shallow.git"));
    const ws = join(t.root, "ws-children");
    mkdirSync(ws);
    expect((await grex(ws, "init")).code).toBe(0);
    const add = await grex(ws, "add", `${server.url}/parent-shallow.git`, "parent", "--depth", "2");
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    const theirs = join(t.root, "git-kid");
    await gitA(t.root, "clone", "-q", "--depth", "2", kidUrl, theirs);
    expect(await seen(join(ws, "parent", "kid"))).toEqual(await seen(theirs));
    expect(await gitA(join(ws, "parent"), "rev-list", "--count", "HEAD")).toBe("2");
    await fsckClean(join(ws, "parent", "kid"));
    // Full history for the pack and its child.
    const up = await grex(ws, "update", "parent", "--depth", "0");
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    await gitA(theirs, "fetch", "-q", "--unshallow");
    expect(existsSync(join(ws, "parent", "kid", ".git", "shallow"))).toBe(false);
    expect(await seen(join(ws, "parent", "kid"))).toEqual(await seen(theirs));
    expect(await gitA(join(ws, "parent"), "rev-list", "--count", "HEAD")).toBe("3");
  });
});

describe("bad depths", () => {
  let ws: string;
  let url: string;
  beforeAll(async () => {
    url = `file://${publish("up-bad").bare}`;
    ws = join(t.root, "ws-bad");
    mkdirSync(ws);
    expect((await grex(ws, "init")).code).toBe(0);
  });

  for (const bad of ["-1", "abc", "0", "1.5"]) {
    test(`add --depth ${bad}: one sentence, exit 2, nothing added`, async () => {
      const r = await grex(ws, "add", url, "pack", `--depth=${bad}`);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n").length).toBe(1);
      expect(r.stderr).toContain("depth");
      expect(existsSync(join(ws, "pack"))).toBe(false);
    });
  }

  test("update --depth 3: only 0 is accepted (one sentence, exit 2)", async () => {
    const r = await grex(ws, "update", "pack", "--depth", "3");
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n").length).toBe(1);
  });

  test("a depth of the wrong type in grex.jsonl: one sentence naming the file and line, exit 3", async () => {
    const bad = join(t.root, "ws-badline");
    mkdirSync(bad);
    expect((await grex(bad, "init")).code).toBe(0);
    const line = { op: "add", ts: "2026-01-01T00:00:00Z", id: "pack", schema_version: "1", url, path: "pack", type: "meta", ref: null, depth: "2" };
    writeFileSync(join(bad, "grex.jsonl"), `${JSON.stringify(line)}\n`);
    const r = await grex(bad, "ls");
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split("\n").length).toBe(1);
    expect(r.stderr).toContain("'depth' must be a whole number of commits");
    expect(r.stderr).toContain("grex.jsonl");
  });
});

describe("ahead/behind across the shallow boundary", () => {
  let up: { work: string; bare: string };
  let ws: string;
  beforeAll(async () => {
    up = publish("up-counts");
    ws = join(t.root, "ws-counts");
    mkdirSync(ws);
    expect((await grex(ws, "init")).code).toBe(0);
  });

  const row = async (id: string) => {
    const r = await grex(ws, "status", "--fetch", "--json");
    expect(r.stderr).toBe("");
    const doc = JSON.parse(r.stdout) as { packs: Array<{ id: string; drift: string; ahead: number | null; behind: number | null; ahead_behind_unknown: string | null }> };
    return doc.packs.find((p) => p.id === id);
  };

  test("exact when the merge base is inside the fetched history (the counts git gives)", async () => {
    const url = `file://${up.bare}`;
    expect((await grex(ws, "add", url, "near", "--depth", "3")).code).toBe(0);
    const dir = join(ws, "near");
    git(dir, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "local");
    push(up.work, up.bare, { "upstream.txt": "u\n" }, "upstream");
    const r = await row("near");
    await gitA(dir, "fetch", "-q");
    const [ahead, behind] = (await gitA(dir, "rev-list", "--left-right", "--count", "HEAD...origin/main")).split(/\s+/).map(Number);
    expect(r).toMatchObject({ drift: "diverged", ahead, behind, ahead_behind_unknown: null });
    expect([ahead, behind]).toEqual([1, 1]);
  });

  test("unknown, with the reason, when the merge base lies below it (git would count only down to the boundary)", async () => {
    const url = `file://${up.bare}`;
    expect((await grex(ws, "add", url, "far", "--depth", "1")).code).toBe(0);
    const dir = join(ws, "far");
    git(dir, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "local");
    // Upstream rewrites its last two commits: the new tip's history meets ours below the boundary.
    git(up.work, "reset", "-q", "--hard", "HEAD~2");
    t.commit(up.work, { "rewritten.txt": "r\n" }, "rewritten");
    git(up.work, "push", "-q", "--force", up.bare, "main");
    const r = await row("far");
    expect(r?.drift).toBe("diverged");
    expect(r?.ahead).toBeNull();
    expect(r?.behind).toBeNull();
    expect(r?.ahead_behind_unknown).toContain("grex update far --depth 0");
    const text = await grex(ws, "status", "--plain");
    expect(text.stdout).toContain("main +? -?");
    expect(text.stdout).toContain("ahead/behind unknown");
  });
});

describe("ssh URLs go through the system git (driven here with a file:// URL, as git-system.test.ts does)", () => {
  test("clone --depth 2, a fetch of new commits, then --unshallow: the same .git/shallow and history as git's own", async () => {
    const { systemGitBackend: sys } = await import("../../src/core/git/backend.ts");
    const { INFINITE_DEPTH } = await import("../../src/core/git/layout/shallow-file.ts");
    const up = publish("up-ssh");
    const url = `file://${up.bare}`;
    const ours = join(t.root, "ssh-ours");
    const theirs = join(t.root, "ssh-theirs");
    const signal = new AbortController().signal;
    await sys.clone(url, ours, { ref: null, signal, depth: 2 });
    await gitA(t.root, "clone", "-q", "--depth", "2", url, theirs);
    expect(await seen(ours)).toEqual(await seen(theirs));
    push(up.work, up.bare, { "n.txt": "n\n" }, "n");
    await sys.update(ours, url, { ref: null, signal });
    await gitA(theirs, "pull", "-q", "--ff-only");
    expect(await seen(ours)).toEqual(await seen(theirs));
    await sys.update(ours, url, { ref: null, signal, depth: INFINITE_DEPTH });
    await gitA(theirs, "fetch", "-q", "--unshallow");
    const after = await seen(ours);
    expect(after.shallow).toBeNull();
    expect(after).toEqual(await seen(theirs));
    await fsckClean(ours);
  });
});
