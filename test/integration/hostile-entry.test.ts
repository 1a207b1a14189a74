// Control characters in URLs, refs and paths are refused at every entry point
// (CLI, MCP, grex.jsonl, grex.lock.jsonl, pack.yaml children, .gitmodules,
// REPOS.json, import --scan): a newline in a URL would otherwise reach a
// `.git/config` as lines of its own (`[filter.x] smudge = <cmd>`,
// `core.fsmonitor`), run by the next checkout, status or plain `git status`.
// Each test plants such a value, runs the verbs (dry run and status
// included), and checks the exit code, that nothing was cloned or written,
// and that the marker the injected commands would create never appears.
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-entry-");
let server: GitHttpServer;
const serveRoot = join(t.root, "serve");
let kidUrl = "";

/** A bare repository served over HTTP, from `files` committed on main. */
function served(name: string, files: Record<string, string>): string {
  const work = join(t.upstream, name);
  mkdirSync(work, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(work, rel, ".."), { recursive: true });
    writeFileSync(join(work, rel), content);
  }
  git(work, "init", "-q", "-b", "main");
  git(work, "add", "-A");
  git(work, "commit", "-q", "-m", `${name}: initial`);
  mkdirSync(serveRoot, { recursive: true });
  git(serveRoot, "clone", "-q", "--bare", work, join(serveRoot, `${name}.git`));
  return `${server.url}/${name}.git`;
}

/**
 * `url` with a filter driver, an fsmonitor and a dummy key smuggled into its
 * user-info: the HTTP client strips the newlines and still reaches the
 * server, while the text written unescaped into a .git/config becomes
 * `[filter.x] smudge/clean` and `[core] fsmonitor`, each running
 * `touch $GREX_TEST_MARKER` (no "/" may appear before the "@").
 */
const injected = (url: string) =>
  url.replace(
    "http://",
    "http://u\n[filter.x]\nsmudge=touch $GREX_TEST_MARKER && cat\nclean=touch $GREX_TEST_MARKER && cat\nrequired\n[core]\nfsmonitor=touch $GREX_TEST_MARKER\n[junk]\nk=@",
  );

/** Where the injected commands would leave their mark: named by a variable every process here inherits (grex's own and git's). */
const marker = () => join(t.root, "pwned");
process.env.GREX_TEST_MARKER = marker();

/** Every .git/config under the workspace: none may hold the injected lines. */
function configs(): string[] {
  return readdirSync(t.ws, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".git/config"))
    .map((f) => readFileSync(join(t.ws, f), "utf8"));
}

/** Nothing ran and nothing reached a git config; a plain `git status` in every clone still runs nothing. */
function nothingRan(): void {
  for (const f of readdirSync(t.ws, { recursive: true }).map(String).filter((f) => f.endsWith("/.git") || f === ".git")) {
    Bun.spawnSync(["git", "status"], { cwd: join(t.ws, f, ".."), env: t.env, stdout: "ignore", stderr: "ignore" });
  }
  expect(existsSync(marker())).toBe(false);
  for (const text of configs()) expect(text).not.toContain("filter.x");
}

beforeAll(async () => {
  server = await startGitHttpServer(serveRoot);
  // Every file of the child goes through filter x: a configured driver would run on checkout and status.
  kidUrl = served("kid", { ".gitattributes": "* filter=x\n", "a.txt": "a\n" });
});
afterAll(async () => {
  await server.stop();
  delete process.env.GREX_TEST_MARKER;
  t.cleanup();
});
beforeEach(async () => {
  rmSync(t.ws, { recursive: true, force: true });
  mkdirSync(t.ws, { recursive: true });
  rmSync(marker(), { force: true });
  expect((await t.grex("init")).code).toBe(0);
});

test("a meta pack's child URL with newlines is refused (exit 4) before anything is cloned, with and without --dry-run", async () => {
  const meta = served("meta", {
    ".grex/pack.yaml": `schema_version: "1"\nname: meta\ntype: meta\nchildren:\n  - url: ${JSON.stringify(injected(kidUrl))}\n    path: kid\n`,
  });
  for (const dry of [[], ["--dry-run"]]) {
    const r = await t.grex("add", meta, "meta", ...dry);
    nothingRan(); // first: before the fix, the plain `git status` in meta/kid ran the injected fsmonitor
    expect(r.stderr).toContain("children[0].url contains a newline, which git refuses in URLs, refs and paths");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.code).toBe(4);
    expect(existsSync(join(t.ws, "meta"))).toBe(false);
  }
  // A child's ref is checked the same way.
  const reffed = served("reffed", {
    ".grex/pack.yaml": `schema_version: "1"\nname: reffed\ntype: meta\nchildren:\n  - url: ${JSON.stringify(kidUrl)}\n    path: kid\n    ref: "main\\n[core]\\nfsmonitor=touch $GREX_TEST_MARKER"\n`,
  });
  const r = await t.grex("add", reffed, "reffed");
  expect(r.stderr).toContain("children[0].ref contains a newline");
  expect(r.code).toBe(4);
  nothingRan();
});

test("a child URL that turns hostile upstream after the pack was added is refused by sync (exit 4); status and the dry run run nothing", async () => {
  const work = join(t.upstream, "later");
  const url = served("later", { ".grex/pack.yaml": `schema_version: "1"\nname: later\ntype: meta\n` });
  expect((await t.grex("add", url, "later")).code).toBe(0);
  writeFileSync(join(work, ".grex/pack.yaml"), `schema_version: "1"\nname: later\ntype: meta\nchildren:\n  - url: ${JSON.stringify(injected(kidUrl))}\n    path: kid\n`);
  git(work, "commit", "-qam", "hostile child");
  git(work, "push", "-q", join(serveRoot, "later.git"), "main");
  // A dry run reads only the remote's ref list (no objects, so not the new pack.yaml): it plans the move.
  const dry = await t.grex("sync", "--dry-run");
  expect(dry.stdout).toContain("would move");
  expect(dry.code).toBe(0);
  nothingRan();
  const r = await t.grex("sync", "--json");
  expect(r.json.error).toMatchObject({ code: 4 });
  expect(JSON.stringify(r.json)).toContain("children[0].url contains a newline, which git refuses in URLs, refs and paths");
  expect(r.code).toBe(4);
  expect(existsSync(join(t.ws, "later", "kid"))).toBe(false);
  nothingRan();
  const s = await t.grex("status");
  expect(existsSync(join(t.ws, "later", "kid"))).toBe(false);
  expect(s.code).not.toBe(0);
  nothingRan();
});

test("CLI params: a url, path or ref with a control character is a usage error (exit 2)", async () => {
  for (const argv of [
    ["add", injected(kidUrl), "kid"],
    ["add", kidUrl, "kid", "--ref", "main\n[core]\nfsmonitor=x"],
    ["add", kidUrl, "kid\tx"],
    ["add", kidUrl, "kid", "--dry-run", "--ref", "main\u001b[31m"],
    ["sync", "--ref", "main\nx"],
    ["update", "kid", "--ref", "main\rx"],
  ]) {
    const r = await t.grex(...argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/contains (a newline|a tab|a carriage return|the control character U\+001B), which git refuses in URLs, refs and paths/);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  }
  expect(existsSync(join(t.ws, "kid"))).toBe(false);
  nothingRan();
});

test("MCP params: a url or ref with a control character is refused as invalid params (-32602)", async () => {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { SessionTransport, serverOptions } = await import("../helpers/mcp.ts");
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
  try {
    for (const args of [{ url: injected(kidUrl), path: "kid" }, { url: kidUrl, path: "kid", ref: "main\nx", dry_run: true }]) {
      const err = await client.callTool({ name: "add", arguments: args }).then(
        () => null,
        (e: unknown) => e as { code?: number; message?: string },
      );
      expect(err?.code).toBe(-32602);
      expect(err?.message).toContain("contains a newline, which git refuses in URLs, refs and paths");
    }
    const sync = await client.callTool({ name: "sync", arguments: { ref: "main\nx" } }).then(
      () => null,
      (e: unknown) => e as { code?: number },
    );
    expect(sync?.code).toBe(-32602);
  } finally {
    await client.close();
  }
  expect(existsSync(join(t.ws, "kid"))).toBe(false);
  nothingRan();
});

/** A line a teammate's grex.jsonl might carry. */
const addLine = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ op: "add", ts: "2026-01-02T00:00:00Z", id: "kid", schema_version: "1", path: "kid", type: "meta", ref: null, ...fields })}\n`;

test("grex.jsonl: a teammate's url or ref with a control character is exit 3 for sync, its dry run, status and ls", async () => {
  const update = (fields: Record<string, unknown>) =>
    addLine({ url: kidUrl }) + `${JSON.stringify({ op: "update", ts: "2026-01-03T00:00:00Z", id: "kid", schema_version: "1", ...fields })}\n`;
  for (const lines of [
    addLine({ url: injected(kidUrl) }),
    addLine({ url: kidUrl, ref: "main\n[core]\nfsmonitor=touch $GREX_TEST_MARKER" }),
    update({ url: injected(kidUrl) }),
    update({ ref: "main\tx" }),
  ]) {
    const manifest = join(t.ws, "grex.jsonl");
    const before = readFileSync(manifest, "utf8");
    appendFileSync(manifest, lines);
    for (const argv of [["sync"], ["sync", "--dry-run"], ["status"], ["ls"]]) {
      const r = await t.grex(...argv);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/grex\.jsonl.* line \d+ .*'(url|ref)' contains (a newline|a tab), which git refuses in URLs, refs and paths/);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    expect(existsSync(join(t.ws, "kid"))).toBe(false);
    nothingRan();
    writeFileSync(manifest, before);
  }
});

test("grex.lock.jsonl: a child entry's url, ref or branch with a control character is exit 3", async () => {
  const lock = join(t.ws, "grex.lock.jsonl");
  const entry = { id: "kid", sha: "", branch: null, installed_at: "", actions_hash: "", type: "meta" };
  for (const extra of [{ url: injected(kidUrl) }, { url: kidUrl, ref: "main\nx" }, { branch: "main\nx" }]) {
    writeFileSync(lock, `${JSON.stringify({ ...entry, ...extra })}\n`);
    for (const argv of [["ls"], ["status"], ["sync", "--dry-run"]]) {
      const r = await t.grex(...argv);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/grex\.lock\.jsonl line 1 has a bad '(url|ref|branch)' \(it contains a newline, which git refuses in URLs, refs and paths\)/);
    }
  }
  nothingRan();
});

test(".gitmodules: a submodule URL with a control character is refused (exit 4) and nothing is cloned", async () => {
  const work = join(t.upstream, "subs");
  mkdirSync(work, { recursive: true });
  git(work, "init", "-q", "-b", "main");
  const kidSha = git(join(t.upstream, "kid"), "rev-parse", "HEAD");
  git(work, "update-index", "--add", "--cacheinfo", `160000,${kidSha},lib`);
  // git's own config syntax: "\n" and "\t" inside a quoted value are escapes.
  writeFileSync(join(work, ".gitmodules"), `[submodule "lib"]\n\tpath = lib\n\turl = "${injected(kidUrl).replace(/\n/g, "\\n")}"\n`);
  git(work, "add", ".gitmodules");
  git(work, "commit", "-qm", "submodule");
  git(serveRoot, "clone", "-q", "--bare", work, join(serveRoot, "subs.git"));
  const r = await t.grex("add", `${server.url}/subs.git`, "subs", "--recurse-submodules");
  expect(r.stderr).toContain("submodule at 'lib': its URL contains a newline, which git refuses in URLs, refs and paths");
  expect(r.code).toBe(4);
  expect(existsSync(join(t.ws, "subs"))).toBe(false);
  nothingRan();
});

test("REPOS.json: an entry whose url has a control character refuses the file (exit 3); nothing is registered", async () => {
  const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
  writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify([{ url: kidUrl, path: "ok" }, { url: injected(kidUrl), path: "kid" }]));
  for (const dry of [["--dry-run"], []]) {
    const r = await t.grex("import", "--from-repos-json", "REPOS.json", ...dry);
    expect(r.stderr).toContain("entry 2 is refused: its url contains a newline, which git refuses in URLs, refs and paths");
    expect(r.code).toBe(3);
  }
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(manifest);
  expect((await t.grex("sync")).code).toBe(0);
  nothingRan();
});

test("import --scan: a clone whose origin URL holds a newline is not registered (exit 3)", async () => {
  const dir = join(t.ws, "found");
  mkdirSync(dir);
  git(dir, "init", "-q", "-b", "main");
  // Written as git writes it (escaped), read back as a URL with newlines.
  appendFileSync(join(dir, ".git", "config"), `[remote "origin"]\n\turl = "${injected(kidUrl).replace(/\n/g, "\\n")}"\n`);
  const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
  for (const dry of [["--dry-run"], []]) {
    const r = await t.grex("import", "--scan", ...dry);
    expect(r.stderr).toContain("found was not imported: its origin URL contains a newline, which git refuses in URLs, refs and paths");
    expect(r.code).toBe(3);
  }
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(manifest);
  rmSync(dir, { recursive: true });
  nothingRan();
});
