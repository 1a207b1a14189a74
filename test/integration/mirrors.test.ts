// Mirrors: a workspace whose packs name a host that does not exist
// (unreachable.invalid) syncs through the mirror the user's global git config
// points at with url.<base>.insteadOf: a loopback smart-HTTP server, or a
// local directory. The manifest and the clone's origin keep the URL they were
// given; git, with the same config, fetches from the same mirror.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { GitHttpServer } from "../helpers/git-http-server.ts";
import { servedWorkspace } from "../helpers/served-workspace.ts";
import { git, GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let served: string;
let server: GitHttpServer;
servedWorkspace("grex-mirrors-", (f) => ({ t, served, server } = f));

let n = 0;
let ws: string;
beforeEach(() => {
  ws = join(t.root, `ws${++n}`);
  mkdirSync(ws);
  writeFileSync(join(t.home, ".gitconfig"), "");
});
afterEach(() => writeFileSync(join(t.home, ".gitconfig"), ""));

/** A repository made from `files`, published as a bare copy under the served root as `<name>.git`. */
function publish(name: string, files: Record<string, string>): { work: string; bare: string } {
  const work = t.repo(`${name}-${n}`, files);
  const bare = join(served, `${name}-${n}.git`);
  git(t.root, "clone", "-q", "--bare", work, bare);
  return { work, bare };
}

function globalConfig(text: string) {
  writeFileSync(join(t.home, ".gitconfig"), text);
}

/** grex as a real process (it reads the user's git config from its environment, as git does). */
async function grex(...argv: string[]) {
  return grexWith({}, ...argv);
}

async function grexWith(env: Record<string, string>, ...argv: string[]) {
  const p = Bun.spawn([process.execPath, GREX_MAIN, ...argv], { cwd: ws, env: { ...t.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const json = argv.includes("--json") && stdout.trim() !== "" ? (JSON.parse(stdout) as Record<string, unknown>) : {};
  return { code, stdout, stderr, json };
}

const DEAD = "http://unreachable.invalid/";

describe("url.<base>.insteadOf in the user's global config", () => {
  test("without a mirror the unreachable host fails the add (the other tests are not vacuous)", async () => {
    publish("plain", { "README.md": "plain\n" });
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", `${DEAD}plain-${n}.git`, "pack");
    expect(add.code).toBe(4);
    expect(existsSync(join(ws, "pack"))).toBe(false);
  });

  test("add and sync go through a smart-HTTP mirror; the manifest and origin keep the URL", async () => {
    const { work, bare } = publish("pack", { "README.md": "one\n" });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    const url = `${DEAD}pack-${n}.git`;
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", url, "pack", "--json");
    expect(add.code).toBe(0);
    const dir = join(ws, "pack");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("one\n");
    expect(readFileSync(join(ws, "grex.jsonl"), "utf8")).toContain(url);
    expect(git(dir, "config", "remote.origin.url")).toBe(url);
    // git, with the same user config, fetches from the same mirror (--get-url only reads the config).
    expect(Bun.spawnSync(["git", "ls-remote", "--get-url", "origin"], { cwd: dir, env: { ...t.env } }).stdout.toString().trim()).toBe(`${server.url}/pack-${n}.git`);

    const next = t.commit(work, { "README.md": "two\n" }, "two");
    git(work, "push", "-q", bare, "HEAD:main");
    const sync = await grex("sync", "--json");
    expect(sync.code).toBe(0);
    expect(git(dir, "rev-parse", "HEAD")).toBe(next);
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe("two\n");
    expect(git(dir, "status", "--porcelain")).toBe("");
    git(dir, "fsck", "--no-progress");

    // status --fetch goes through the mirror too, and shows where the pack is fetched from.
    t.commit(work, { "README.md": "three\n" }, "three");
    git(work, "push", "-q", bare, "HEAD:main");
    const status = await grex("status", "--fetch", "--json");
    expect(status.code).toBe(0);
    const row = (status.json.packs as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
    expect([row.id, row.drift, row.behind, row.fetch_url]).toEqual(["pack", "behind", 1, `${server.url}/pack-${n}.git`]);
    expect((await grex("status")).stdout).toContain(`fetched from ${server.url}/pack-${n}.git`);
    const doctor = await grex("doctor", "--json");
    const notes = (doctor.json.findings as Array<{ check: string; severity: string; pack: string; detail: string }>).filter((f) => f.check === "mirrors");
    expect(notes).toEqual([{ check: "mirrors", severity: "ok", pack: "pack", detail: `fetched from ${server.url}/pack-${n}.git (url.<base>.insteadOf in your git config); the manifest keeps ${url}`, auto_fixable: false } as never]);
    // Without the rewrite, no fetch_url and no note.
    globalConfig("");
    const plain = await grex("status", "--json");
    expect((plain.json.packs as Array<Record<string, unknown>>)[0]?.fetch_url).toBeNull();
  });

  test("a local directory as the mirror; the longest insteadOf wins", async () => {
    const { work } = publish("local", { "README.md": "local\n" });
    globalConfig(`[url "/nonexistent/wrong/"]\n\tinsteadOf = ${DEAD}\n[url "${t.upstream}/"]\n\tinsteadOf = ${DEAD}mirror/\n`);
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", `${DEAD}mirror/local-${n}`, "pack");
    expect(add.code).toBe(0);
    expect(git(join(ws, "pack"), "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "HEAD"));
  });

  test("a meta pack's children, absolute and relative, come through the mirror too", async () => {
    publish("child-a", { "a.txt": "a\n" });
    publish("child-b", { "b.txt": "b\n" });
    const yaml = ["schema_version: \"1\"", `name: meta-${n}`, "type: meta", "children:", `  - url: ${DEAD}child-a-${n}.git`, "    path: a", `  - url: ../child-b-${n}.git`, "    path: b", ""].join("\n");
    publish("meta", { ".grex/pack.yaml": yaml });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", `${DEAD}meta-${n}.git`, "meta", "--json");
    expect(add.code).toBe(0);
    expect(readFileSync(join(ws, "meta/a/a.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(join(ws, "meta/b/b.txt"), "utf8")).toBe("b\n");
    expect(git(join(ws, "meta/b"), "config", "remote.origin.url")).toBe(`${DEAD}child-b-${n}.git`);
  });

  test("submodules come through the mirror; the pack records the submodule URL as written", async () => {
    const { work: sub } = publish("sub", { "sub.txt": "sub\n" });
    const sup = t.repo(`super-${n}`, { "README.md": "super\n" });
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "vendor/sub");
    git(sup, "config", "-f", ".gitmodules", "submodule.vendor/sub.url", `${DEAD}sub-${n}.git`);
    git(sup, "add", ".gitmodules");
    git(sup, "commit", "-q", "-m", "sub");
    git(t.root, "clone", "-q", "--bare", sup, join(served, `super-${n}.git`));
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", "--recurse-submodules", `${DEAD}super-${n}.git`, "super");
    expect(add.code).toBe(0);
    const dir = join(ws, "super");
    expect(readFileSync(join(dir, "vendor/sub/sub.txt"), "utf8")).toBe("sub\n");
    expect(git(dir, "config", "submodule.vendor/sub.url")).toBe(`${DEAD}sub-${n}.git`);
    expect(git(join(dir, "vendor/sub"), "config", "remote.origin.url")).toBe(`${DEAD}sub-${n}.git`);
    expect(git(dir, "status", "--porcelain")).toBe("");
  });

  test("a submodule rewritten to a transport helper is refused before anything is cloned", async () => {
    const { work: sub } = publish("hsub", { "sub.txt": "sub\n" });
    const sup = t.repo(`hsuper-${n}`, { "README.md": "super\n" });
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "vendor/sub");
    git(sup, "config", "-f", ".gitmodules", "submodule.vendor/sub.url", `${DEAD}evil/sub.git`);
    git(sup, "add", ".gitmodules");
    git(sup, "commit", "-q", "-m", "sub");
    git(t.root, "clone", "-q", "--bare", sup, join(served, `hsuper-${n}.git`));
    const marker = join(t.root, `pwned-${n}`);
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n[url "ext::sh -c touch% ${marker}% #"]\n\tinsteadOf = ${DEAD}evil/\n`);
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", "--recurse-submodules", `${DEAD}hsuper-${n}.git`, "super");
    expect(add.code).toBe(4);
    expect(add.stderr).toContain("a transport grex does not fetch submodules over");
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(ws, "super"))).toBe(false);
  });

  test("a pack URL rewritten to one starting with '-' is refused in one sentence (exit 4), nothing run; doctor calls it an error", async () => {
    const marker = join(t.root, `opt-${n}`);
    const evil = `[url "-oProxyCommand=touch ${marker} "]\n\tinsteadOf = ${DEAD}\n`;
    globalConfig(evil);
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", `${DEAD}opt-${n}.git`, "x");
    expect(add.code).toBe(4);
    expect(add.stderr).toContain("is rewritten by url.<base>.insteadOf in your git configuration");
    expect(add.stderr.trim().split("\n")).toHaveLength(1);
    // Registered through a good mirror, then the setting goes bad: sync refuses, doctor says why.
    publish("opt", { "README.md": "opt\n" });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    expect((await grex("add", `${DEAD}opt-${n}.git`, "x")).code).toBe(0);
    globalConfig(evil);
    const sync = await grex("sync", "--json");
    expect(sync.code).toBe(4);
    expect(JSON.stringify(sync.json)).toContain("is rewritten by url.<base>.insteadOf");
    const doctor = await grex("doctor", "--json");
    const found = (doctor.json.findings as Array<{ check: string; severity: string; pack: string }>).filter((f) => f.check === "mirrors");
    expect(found.map((f) => [f.severity, f.pack])).toEqual([["error", "x"]]);
    expect(existsSync(marker)).toBe(false);
  });

  test("sync --dry-run lists the mirror's refs", async () => {
    const { work, bare } = publish("dry", { "README.md": "one\n" });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    expect((await grex("init")).code).toBe(0);
    expect((await grex("add", `${DEAD}dry-${n}.git`, "dry")).code).toBe(0);
    const next = t.commit(work, { "README.md": "two\n" }, "two");
    git(work, "push", "-q", bare, "HEAD:main");
    const dry = await grex("sync", "--dry-run", "--json");
    expect(dry.code).toBe(0);
    expect(JSON.stringify(dry.json)).toContain(next.slice(0, 12));
    expect(git(join(ws, "dry"), "rev-parse", "HEAD")).not.toBe(next);
  });

  test("an ssh URL mirrored over http is fetched in process, as git clone with the same config fetches it", async () => {
    const { work } = publish("ssh", { "README.md": "ssh\n" });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = git@unreachable.invalid:\n`);
    const url = `git@unreachable.invalid:ssh-${n}.git`;
    expect((await grex("init")).code).toBe(0);
    const add = await grex("add", url, "pack");
    expect(add.code).toBe(0);
    const dir = join(ws, "pack");
    // git with the same user config: the same commit, tree and origin.
    const byGit = join(t.root, `by-git-${n}`);
    // Asynchronously: the mirror answers from this process.
    const p = Bun.spawn(["git", "clone", "-q", url, byGit], { env: { ...t.env, GIT_TERMINAL_PROMPT: "0" }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    expect(await p.exited).toBe(0);
    for (const args of [["rev-parse", "HEAD"], ["rev-parse", "HEAD^{tree}"], ["config", "remote.origin.url"], ["status", "--porcelain"]]) {
      expect(git(dir, ...args)).toBe(git(byGit, ...args));
    }
    expect(git(dir, "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "HEAD"));
  });

  test("an insteadOf without a value: sync refuses as git would, doctor names it once", async () => {
    publish("bare", { "README.md": "bare\n" });
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n`);
    expect((await grex("init")).code).toBe(0);
    expect((await grex("add", `${DEAD}bare-${n}.git`, "bare")).code).toBe(0);
    globalConfig(`[url "${server.url}/"]\n\tinsteadOf = ${DEAD}\n\tinsteadOf\n`);
    const sync = await grex("sync", "--json");
    expect(sync.code).toBe(4);
    expect(JSON.stringify(sync.json)).toContain("is set without a value in your git configuration");
    const doctor = await grex("doctor", "--json");
    const found = (doctor.json.findings as Array<{ check: string; severity: string; pack: string | null }>).filter((f) => f.check === "mirrors");
    expect(found.map((f) => [f.severity, f.pack])).toEqual([["error", null]]);
  });

  test("an http URL mirrored over ssh goes through the system git, which applies the same rewrite", async () => {
    // A stand-in for ssh that runs the command git asks for on this machine (as git's own test suite does).
    const fakeSsh = join(t.root, "fake-ssh");
    writeFileSync(fakeSsh, '#!/bin/sh\nfor a; do last=$a; done\nexec sh -c "$last"\n');
    chmodSync(fakeSsh, 0o755);
    const { work, bare } = publish("viassh", { "README.md": "one\n" });
    globalConfig(`[url "ssh://mirror.invalid${served}/"]\n\tinsteadOf = ${DEAD}viassh/\n`);
    const url = `${DEAD}viassh/viassh-${n}.git`;
    const env = { GIT_SSH: fakeSsh };
    expect((await grex("init")).code).toBe(0);
    const add = await grexWith(env, "add", url, "pack");
    expect(add.code).toBe(0);
    const dir = join(ws, "pack");
    expect(git(dir, "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "HEAD"));
    expect(git(dir, "config", "remote.origin.url")).toBe(url);
    const next = t.commit(work, { "README.md": "two\n" }, "two");
    git(work, "push", "-q", bare, "HEAD:main");
    const sync = await grexWith(env, "sync", "--json");
    expect(sync.code).toBe(0);
    expect(git(dir, "rev-parse", "HEAD")).toBe(next);
    const status = await grex("status", "--json");
    expect((status.json.packs as Array<Record<string, unknown>>)[0]?.fetch_url).toBe(`ssh://mirror.invalid${served}/viassh-${n}.git`);
    // When the mirror cannot be reached, the error names it.
    const deadSsh = join(t.root, "dead-ssh");
    writeFileSync(deadSsh, "#!/bin/sh\necho 'ssh: connect to host mirror.invalid port 22: Connection refused' >&2\nexit 255\n");
    chmodSync(deadSsh, 0o755);
    t.commit(work, { "README.md": "three\n" }, "three");
    git(work, "push", "-q", bare, "HEAD:main");
    const failed = await grexWith({ GIT_SSH: deadSsh }, "sync", "--json");
    expect(failed.code).toBe(4);
    expect(JSON.stringify(failed.json)).toContain(`from ${url} (through ssh://mirror.invalid${served}/viassh-${n}.git, your url.<base>.insteadOf) failed (ssh: connect to host mirror.invalid port 22: Connection refused)`);
  });
});
