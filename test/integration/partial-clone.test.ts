// Partial clones (`grex add --filter blob:none`) against the git CLI: the
// same repository cloned by `git clone --filter=blob:none` and by grex, over
// a real smart-HTTP server (git http-backend, which serves filters and
// objects by id only when the served repository allows them), must agree on
// the promisor config, the `.promisor` packs, the index, status, fsck, HEAD
// and which objects are missing; a later move to another commit fetches the
// blobs it needs (as git pull / git checkout do), and the git CLI works in
// grex's clone, fetching lazily from the same promisor remote.
import { beforeEach, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gitAsync } from "../helpers/git-fixtures.ts";
import type { GitHttpServer } from "../helpers/git-http-server.ts";
import { servedWorkspace } from "../helpers/served-workspace.ts";
import { git, GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let served: string;
let server: GitHttpServer;
servedWorkspace("grex-partial-", (f) => ({ t, served, server } = f));

let n = 0;
beforeEach(async () => {
  n++;
  // A fresh workspace per test (TestWorkspace runs grex in t.ws).
  const ws = join(t.root, `ws${n}`);
  mkdirSync(ws);
  (t as { ws: string }).ws = ws;
  expect((await t.grex("init")).code).toBe(0);
});

/** A repository with history (files changed, added, removed, nested), published bare under the served root. */
function publish(name: string, opts: { allowFilter?: boolean } = {}): { work: string; bare: string; url: string } {
  const work = t.repo(`${name}-${n}`, { "README.md": "one\n", "src/a.txt": "a1\n", "src/deep/b.txt": "b1\n", "big.bin": "x".repeat(5000) });
  t.commit(work, { "src/a.txt": "a2\n", "docs/guide.md": "guide\n" }, "two");
  t.commit(work, { "src/deep/b.txt": "b3\n", "big.bin": "y".repeat(6000) }, "three");
  const bare = join(served, `${name}-${n}.git`);
  git(t.root, "clone", "-q", "--bare", work, bare);
  if (opts.allowFilter !== false) {
    git(bare, "config", "uploadpack.allowFilter", "true");
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true");
  }
  return { work, bare, url: `${server.url}/${name}-${n}.git` };
}

/** Publish the upstream's new commits. */
const push = (work: string, bare: string) => git(work, "push", "-q", bare, "main");

/** What a partial clone is marked with, as `git config` reads it. */
async function promisorConfig(dir: string): Promise<Record<string, string>> {
  const keys = ["core.repositoryformatversion", "remote.origin.promisor", "remote.origin.partialclonefilter", "extensions.partialclone"];
  const out: Record<string, string> = {};
  for (const k of keys) out[k] = await gitAsync(dir, "config", "--get", k).catch(() => "(unset)");
  return out;
}

/** Objects reachable from every ref that are not here (`?<oid>`), without fetching them. */
async function missing(dir: string): Promise<string[]> {
  const out = await gitAsync(dir, "rev-list", "--objects", "--all", "--missing=print");
  return out.split("\n").filter((l) => l.startsWith("?")).sort();
}

const promisorPacks = (dir: string) => readdirSync(join(dir, ".git", "objects", "pack")).filter((f) => f.endsWith(".promisor"));

/** Index, status, fsck and HEAD as the git CLI sees them. */
async function gitView(dir: string) {
  return {
    index: await gitAsync(dir, "ls-files", "-s"),
    status: await gitAsync(dir, "status", "--porcelain"),
    fsck: await gitAsync(dir, "fsck", "--no-dangling"),
    log: await gitAsync(dir, "log", "-1", "--format=%H %T %s"),
  };
}

test("grex add --filter blob:none makes what git clone --filter=blob:none makes", async () => {
  const { url } = publish("p");
  const add = await t.grex("add", url, "pack", "--filter", "blob:none", "--json");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:none", url, theirs);

  expect(await promisorConfig(mine)).toEqual(await promisorConfig(theirs));
  expect((await promisorConfig(mine))["remote.origin.partialclonefilter"]).toBe("blob:none");
  expect(promisorPacks(mine).length).toBeGreaterThan(0);
  expect(promisorPacks(theirs).length).toBeGreaterThan(0);
  const view = await gitView(mine);
  expect(view).toEqual(await gitView(theirs));
  expect(view.status).toBe("");
  expect(view.fsck).toBe("");
  // The same blobs left out: those of older commits, none of the checked-out tree.
  const gap = await missing(mine);
  expect(gap.length).toBeGreaterThan(0);
  expect(gap).toEqual(await missing(theirs));
  // Recorded for the pack: every later clone keeps it.
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toContain('"filter":"blob:none"');
});

test("a later update to another commit fetches the blobs it needs, as git pull and git checkout do", async () => {
  const { work, bare, url } = publish("u");
  expect((await t.grex("add", url, "pack", "--filter", "blob:none")).code).toBe(0);
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:none", url, theirs);

  t.commit(work, { "src/a.txt": "a4\n", "new/dir/c.txt": "c4\n", "big.bin": "z".repeat(7000) }, "four");
  push(work, bare);
  const sync = await t.grex("sync");
  expect(sync.code).toBe(0);
  await gitAsync(theirs, "pull", "-q", "--ff-only");
  expect(await gitView(mine)).toEqual(await gitView(theirs));
  expect(await missing(mine)).toEqual(await missing(theirs));
  expect(readFileSync(join(mine, "new/dir/c.txt"), "utf8")).toBe("c4\n");

  // Back to the first commit: its blobs were left out by the clone.
  const first = git(work, "rev-list", "--max-parents=0", "HEAD");
  const upd = await t.grex("update", "pack", "--ref", first);
  expect(upd.stderr).toBe("");
  expect(upd.code).toBe(0);
  await gitAsync(theirs, "checkout", "-q", first);
  const view = await gitView(mine);
  expect(view).toEqual(await gitView(theirs));
  expect(view.log.startsWith(first)).toBe(true);
  expect(view.fsck).toBe("");
  expect(readFileSync(join(mine, "src/a.txt"), "utf8")).toBe("a1\n");
  expect(await missing(mine)).toEqual(await missing(theirs));
});

test("the git CLI works in grex's partial clone: an old commit's checkout fetches lazily", async () => {
  const { work, url } = publish("g");
  expect((await t.grex("add", url, "pack", "--filter", "blob:none")).code).toBe(0);
  const mine = join(t.ws, "pack");
  const before = (await missing(mine)).length;
  await gitAsync(mine, "checkout", "-q", "HEAD~2");
  expect(readFileSync(join(mine, "src/deep/b.txt"), "utf8")).toBe("b1\n");
  expect(readFileSync(join(mine, "big.bin"), "utf8")).toBe("x".repeat(5000));
  expect((await missing(mine)).length).toBeLessThan(before);
  expect(await gitAsync(mine, "status", "--porcelain")).toBe("");
  expect(await gitAsync(mine, "fsck", "--no-dangling")).toBe("");
  expect(await gitAsync(mine, "rev-parse", "HEAD^{tree}")).toBe(git(work, "rev-parse", "HEAD~2^{tree}"));
});

test("status of a clean partial clone fetches nothing", async () => {
  const { url } = publish("s");
  expect((await t.grex("add", url, "pack", "--filter", "blob:none")).code).toBe(0);
  const requests = server.requests;
  const st = await t.grex("status", "--json");
  expect(st.code).toBe(0);
  expect(server.requests).toBe(requests);
  expect(await gitAsync(join(t.ws, "pack"), "status", "--porcelain")).toBe("");
});

test("a server that does not offer filters gives a full clone still marked as a promisor, as git's does", async () => {
  const { url } = publish("nf", { allowFilter: false });
  const add = await t.grex("add", url, "pack", "--filter", "blob:none");
  expect(add.code).toBe(0);
  expect(add.stderr).toContain("does not offer partial clones (no 'filter' capability), so everything is fetched");
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:none", url, theirs);
  expect(await promisorConfig(mine)).toEqual(await promisorConfig(theirs));
  expect(await missing(mine)).toEqual([]);
  expect(await missing(theirs)).toEqual([]);
  expect(await gitView(mine)).toEqual(await gitView(theirs));
});

test("a local source: grex's own server side leaves the blobs out as git's upload-pack does for file://", async () => {
  const { bare } = publish("l");
  expect((await t.grex("add", bare, "pack", "--filter", "blob:none")).code).toBe(0);
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:none", `file://${bare}`, theirs);
  expect(await promisorConfig(mine)).toEqual(await promisorConfig(theirs));
  expect(promisorPacks(mine).length).toBeGreaterThan(0);
  expect(await gitView(mine)).toEqual(await gitView(theirs));
  expect(await missing(mine)).toEqual(await missing(theirs));
  await gitAsync(mine, "checkout", "-q", "HEAD~2");
  expect(readFileSync(join(mine, "src/a.txt"), "utf8")).toBe("a1\n");
});

test("--depth with --filter from a local source: a shallow partial clone, as git clone --depth --filter makes over file://", async () => {
  const { bare } = publish("dl");
  const add = await t.grex("add", bare, "pack", "--depth", "2", "--filter", "blob:none");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--depth", "2", "--filter=blob:none", `file://${bare}`, theirs);
  expect(readFileSync(join(mine, ".git", "shallow"), "utf8")).toBe(readFileSync(join(theirs, ".git", "shallow"), "utf8"));
  expect(await promisorConfig(mine)).toEqual(await promisorConfig(theirs));
  // The history (commits, trees) came in a pack marked .promisor, so git takes the blobs it lacks for promised ones.
  expect(promisorPacks(mine).length).toBeGreaterThan(0);
  expect(await gitView(mine)).toEqual(await gitView(theirs));
  expect(await missing(mine)).toEqual(await missing(theirs));
  expect((await missing(mine)).length).toBeGreaterThan(0);
});

test("blob:limit=<n> leaves out only the larger files", async () => {
  const { url } = publish("lim");
  const add = await t.grex("add", url, "pack", "--filter", "blob:limit=1k");
  expect(add.code).toBe(0);
  const mine = join(t.ws, "pack");
  const theirs = join(t.root, `git-clone-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:limit=1k", url, theirs);
  expect(await promisorConfig(mine)).toEqual(await promisorConfig(theirs));
  const gap = await missing(mine);
  expect(gap.length).toBe(1); // the first big.bin; the second is checked out
  expect(gap).toEqual(await missing(theirs));
});

test("a filter grex does not implement is one sentence, exit 2, and nothing is cloned", async () => {
  const { url } = publish("bad");
  const add = await t.grex("add", url, "pack", "--filter", "tree:0");
  expect(add.code).toBe(2);
  expect(add.stderr.trim().split("\n")).toHaveLength(1);
  expect(add.stderr).toContain("'tree:0' is not a filter grex implements");
  expect(existsSync(join(t.ws, "pack"))).toBe(false);
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).not.toContain('"op":"add"');
});

test("over MCP: the same filter param, recorded the same way; a bad one is an error result", async () => {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { SessionTransport, serverOptions } = await import("../helpers/mcp.ts");
  const { url } = publish("mcp");
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
  try {
    const bad = (await client.callTool({ name: "add", arguments: { url, path: "pack", filter: "sparse:oid=abc" } })) as { isError?: boolean; content?: Array<{ text?: string }> };
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain("is not a filter grex implements");
    expect(existsSync(join(t.ws, "pack"))).toBe(false);
    const ok = (await client.callTool({ name: "add", arguments: { url, path: "pack", filter: "blob:none" } })) as { isError?: boolean };
    expect(ok.isError).toBe(false);
  } finally {
    await client.close();
  }
  expect(await gitAsync(join(t.ws, "pack"), "config", "remote.origin.partialclonefilter")).toBe("blob:none");
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toContain('"filter":"blob:none"');
});

test("sync keeps the recorded filter: a pack missing from disk is cloned partially again", async () => {
  const { url } = publish("again");
  expect((await t.grex("add", url, "pack", "--filter", "blob:none")).code).toBe(0);
  const dir = join(t.ws, "pack");
  rmSync(dir, { recursive: true, force: true });
  const sync = await t.grex("sync");
  expect(sync.code).toBe(0);
  expect(await promisorConfig(dir)).toMatchObject({ "remote.origin.promisor": "true", "remote.origin.partialclonefilter": "blob:none" });
  expect((await missing(dir)).length).toBeGreaterThan(0);
  expect(await gitAsync(dir, "status", "--porcelain")).toBe("");
  expect(await gitAsync(dir, "fsck", "--no-dangling")).toBe("");
});

test("over smart HTTP the later batches need no by-id setting: git's stateless upload-pack sends objects its refs reach", async () => {
  const { bare, url } = publish("noid");
  git(bare, "config", "--unset", "uploadpack.allowAnySHA1InWant");
  const add = await t.grex("add", url, "pack", "--filter", "blob:none");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  expect(await gitAsync(join(t.ws, "pack"), "status", "--porcelain")).toBe("");
})

test("ssh: the system git clones with --filter, and grex's checkout fetches the missing blobs through it", async () => {
  // A stand-in for ssh that runs the command git asks for on this machine (as git's own test suite does).
  const fakeSsh = join(t.root, "fake-ssh");
  writeFileSync(fakeSsh, '#!/bin/sh\nfor a; do last=$a; done\nexec sh -c "$last"\n');
  chmodSync(fakeSsh, 0o755);
  const { work, bare } = publish("ssh");
  const url = `ssh://fake.invalid${bare}`;
  const grex = async (...argv: string[]) => {
    const p = Bun.spawn([process.execPath, GREX_MAIN, ...argv], { cwd: t.ws, env: { ...t.env, GIT_SSH: fakeSsh }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    return { stderr, code };
  };
  const add = await grex("add", url, "pack", "--filter", "blob:none");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  const mine = join(t.ws, "pack");
  expect(git(mine, "config", "remote.origin.partialclonefilter")).toBe("blob:none");
  expect(git(mine, "status", "--porcelain")).toBe("");
  expect(git(mine, "rev-parse", "HEAD^{tree}")).toBe(git(work, "rev-parse", "HEAD^{tree}"));
  expect((await missing(mine)).length).toBeGreaterThan(0);
  const first = git(work, "rev-list", "--max-parents=0", "HEAD");
  const upd = await grex("update", "pack", "--ref", first);
  expect(upd.stderr).toBe("");
  expect(upd.code).toBe(0);
  expect(readFileSync(join(mine, "src/a.txt"), "utf8")).toBe("a1\n");
  expect(git(mine, "fsck", "--no-dangling")).toBe("");
});

test("a task workspace of a partial clone fetches the blobs its branch needs before writing its files", async () => {
  const { work, url } = publish("tw");
  expect((await t.grex("add", url, "pack", "--filter", "blob:none")).code).toBe(0);
  const source = join(t.ws, "pack");
  // A branch at the first commit: its blobs were left out by the filter.
  git(source, "branch", "old", "HEAD~2");
  const before = (await missing(source)).length;
  expect(before).toBeGreaterThan(0);
  const task = join(t.root, `task-${n}`);
  mkdirSync(task);
  const r = await t.grex("--manifest", join(task, "grex.jsonl"), "init", "--from", t.ws, "--branch", "old");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const linked = join(task, "pack");
  expect(readFileSync(join(linked, "src/a.txt"), "utf8")).toBe("a1\n");
  expect(readFileSync(join(linked, "big.bin"), "utf8")).toBe(git(work, "show", "HEAD~2:big.bin"));
  expect(await gitAsync(linked, "status", "--porcelain")).toBe("");
  expect((await missing(source)).length).toBeLessThan(before);
  expect(await gitAsync(source, "fsck", "--no-dangling")).toBe("");
});

test("a partial pack's children are cloned with its filter, as git clone --filter=blob:none clones them", async () => {
  const kid = publish("kid");
  const parent = t.repo(`parent-partial-${n}`, { ".grex/pack.yaml": `schema_version: "1"\nname: parent\ntype: meta\nchildren:\n  - url: ${kid.url}\n    path: kid\n` });
  git(t.root, "clone", "-q", "--bare", parent, join(served, `parent-partial-${n}.git`));
  git(join(served, `parent-partial-${n}.git`), "config", "uploadpack.allowFilter", "true");
  const add = await t.grex("add", `${server.url}/parent-partial-${n}.git`, "parent", "--filter", "blob:none");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  const theirs = join(t.root, `git-kid-${n}`);
  await gitAsync(t.root, "clone", "-q", "--filter=blob:none", kid.url, theirs);
  const ours = join(t.ws, "parent", "kid");
  expect(await promisorConfig(ours)).toEqual(await promisorConfig(theirs));
  expect(await missing(ours)).toEqual(await missing(theirs));
  expect((await missing(ours)).length).toBeGreaterThan(0);
  expect(await gitView(ours)).toEqual(await gitView(theirs));
});
