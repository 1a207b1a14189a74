// --dry-run changes nothing anywhere and says what would happen. A populated
// workspace (nested packs, installed actions in HOME, a dirty pack, upstream
// commits to move to, hand-edited .gitignore, a REPOS.json, an unregistered
// clone) is snapshotted — every file, its contents and symlink targets, of the
// workspace (packs' work trees and .git included) and HOME — and every writing
// verb runs with --dry-run on the CLI and over MCP; only .grex/.state may change.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VERBS } from "../../src/verbs/index.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { git, snapshot, TestWorkspace, userSnapshot } from "../helpers/workspace.ts";

let t: TestWorkspace;
let client: Client;
let newUrl: string;
let upstream: Record<string, string>;

beforeAll(async () => {
  t = new TestWorkspace("grex-dryrun-");
  expect((await t.grex("init")).code).toBe(0);
  upstream = { basic: t.repo("declarative-basic"), a: t.repo("child-a"), b: t.repo("child-b"), meta: t.repo("meta-basic") };
  upstream.scripted = t.repo("scripted-basic");
  upstream.tools = t.repo("tools", { "README.md": "tools\n" });
  for (const u of [upstream.basic, upstream.meta, upstream.scripted, upstream.tools]) expect((await t.grex("add", u as string)).code).toBe(0);
  for (let i = 0; i < 3; i++) expect((await t.grex("sync")).code).toBe(0); // a longer log to compact
  // Upstream moves, so sync/update would do something.
  t.commit(upstream.basic as string, { "files/app.conf": "changed upstream\n" });
  t.commit(upstream.a as string, { "more.txt": "more\n" });
  // A dirty pack, a hand-edited .gitignore, a REPOS.json, an unregistered clone, a long log.
  writeFileSync(join(t.ws, "tools", "README.md"), "local edit\n");
  writeFileSync(join(t.ws, ".gitignore"), readFileSync(join(t.ws, ".gitignore"), "utf8").replace("/tools/", "/tools-edited/"));
  writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify([{ url: t.repo("legacy", { "x.txt": "x\n" }), path: "legacy" }]));
  git(t.ws, "clone", "-q", t.repo("stray", { "s.txt": "s\n" }), "stray");
  newUrl = t.repo("newpack", { ".grex/pack.yaml": 'schema_version: "1"\nname: newpack\ntype: declarative\nactions:\n  - mkdir: { path: $HOME/.newpack }\n' });

  client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
});
afterAll(async () => {
  await client.close();
  t.cleanup();
});

const world = () => ({ ws: userSnapshot(t.ws), home: snapshot(t.home) });

/** Every writing verb with --dry-run, in the forms that exercise its writes. */
const CLI_CASES: string[][] = [
  ["init", "--dry-run"],
  ["add", "--dry-run", "NEW_URL"],
  ["add", "--dry-run", "--no-install", "NEW_URL", "other"],
  ["rm", "--dry-run", "declarative-basic"],
  ["rm", "--dry-run", "meta-basic"],
  ["rm", "--dry-run", "--force", "tools"],
  ["sync", "--dry-run"],
  ["sync", "--dry-run", "--force"],
  ["update", "--dry-run"],
  ["update", "--dry-run", "--force"],
  ["update", "--dry-run", "--ref", "main", "declarative-basic"],
  ["doctor", "--dry-run", "--fix"],
  ["doctor", "--dry-run", "--compact"],
  ["import", "--dry-run", "--scan"],
  ["import", "--dry-run", "--from-repos-json", "REPOS.json", "--migrate-gitignore"],
  ["run", "--dry-run", "symlink"],
  ["run", "--dry-run", "exec"],
  ["exec", "--dry-run", "touch", "EXEC_RAN"],
  ["exec", "--dry-run", "--shell", "touch EXEC_SHELL_RAN"],
  ["teardown", "--dry-run", "declarative-basic"],
  ["teardown", "--dry-run", "meta-basic"],
];

// doctor takes no dry_run over MCP (it is read-only there) and teardown is not a tool.
const MCP_CASES: Array<[string, Record<string, unknown>]> = [
  ["init", {}],
  ["add", { url: "NEW_URL" }],
  ["rm", { id: "meta-basic" }],
  ["rm", { id: "tools", force: true }],
  ["sync", { force: true }],
  ["update", { force: true }],
  ["update", { ids: ["declarative-basic"], ref: "main" }],
  ["import", { scan: true, from_repos_json: "REPOS.json" }],
  ["run", { action: "symlink" }],
  ["exec", { cmd: "touch", args: ["EXEC_RAN"] }],
];

describe("--dry-run changes nothing (workspace, packs' work trees and .git, HOME)", () => {
  test("the tables cover every verb that writes", () => {
    const writers = VERBS.filter((v) => !v.readOnly && v.mcp).map((v) => v.name);
    for (const w of writers) {
      expect(CLI_CASES.some((c) => c[0] === w)).toBe(true);
      expect(MCP_CASES.some((c) => c[0] === w)).toBe(true);
    }
    for (const v of VERBS.filter((x) => x.mcp && !x.readOnly)) expect(Object.keys(v.params.entries)).toContain("dry_run");
  });

  for (const argv of CLI_CASES) {
    test(`CLI: grex ${argv.join(" ")}`, async () => {
      const before = world();
      const r = await t.grex(...argv.map((a) => (a === "NEW_URL" ? newUrl : a)), "--json");
      expect(r.stderr).not.toContain("Unexpected");
      expect([0, 4, 7]).toContain(r.code);
      expect(world()).toEqual(before);
    });
  }

  for (const [tool, args] of MCP_CASES) {
    test(`MCP: ${tool} ${JSON.stringify(args)}`, async () => {
      const before = world();
      const resolved = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, v === "NEW_URL" ? newUrl : v]));
      const r = (await client.callTool({ name: tool, arguments: { ...resolved, dry_run: true } })) as { structuredContent?: Record<string, unknown> };
      expect(r.structuredContent).toBeDefined();
      expect(world()).toEqual(before);
    });
  }
});

describe("dry runs say concretely what would happen", () => {
  test("exec --dry-run --filter tools touch X: lists the command for tools, creates nothing", async () => {
    const r = await t.grex("exec", "--dry-run", "--filter", "tools", "touch", "X", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toEqual({ results: [], planned: [{ pack: "tools", dir: join(t.ws, "tools"), argv: ["touch", "X"] }] });
    expect(existsSync(join(t.ws, "tools", "X"))).toBe(false);
    const text = await t.grex("exec", "--dry-run", "--filter", "tools", "touch", "X");
    expect(text.stdout).toContain(`[tools] would run "touch" "X" in ${join(t.ws, "tools")}`);
  });

  test("doctor --compact --dry-run: line counts, grex.jsonl untouched", async () => {
    const log = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
    const r = await t.grex("doctor", "--compact", "--dry-run", "--json");
    const lines = log.trim().split("\n").length;
    expect(r.json.compacted).toBe(false);
    expect(r.json.compaction).toMatchObject({ manifest_lines: [lines, 4] });
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(log);
    expect((await t.grex("doctor", "--compact", "--dry-run")).stdout).toContain(`would compact grex.jsonl ${lines} → 4 lines`);
  });

  test("doctor --fix --dry-run: lists each fix, .gitignore untouched", async () => {
    const before = readFileSync(join(t.ws, ".gitignore"), "utf8");
    const r = await t.grex("doctor", "--fix", "--dry-run", "--json");
    expect(r.json.fixed).toEqual([]);
    expect((r.json.would_fix as string[]).join("\n")).toContain("gitignore-sync [tools]");
    expect(readFileSync(join(t.ws, ".gitignore"), "utf8")).toBe(before);
  });

  test("init --dry-run in a new directory says would create, creates nothing", async () => {
    const fresh = join(t.root, "fresh");
    mkdirSync(fresh);
    const r = await t.grex("init", "--dry-run", "--manifest", join(fresh, "grex.jsonl"));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("would create: grex.jsonl, grex.lock.jsonl, .gitignore");
    expect(r.stdout).not.toMatch(/^created/m);
    expect(snapshot(fresh)).toEqual({});
  });

  test("rm --dry-run lists the links it would remove, the directories and the children", async () => {
    const r = await t.grex("rm", "--dry-run", "meta-basic", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ removed: false, dry_run: true, children: ["meta-basic/child-a", "meta-basic/second"], deleted: [join(t.ws, "meta-basic")] });
    const steps = r.json.steps as Array<{ pack: string; action: string; result: string; details: { dst?: string } }>;
    expect(steps.some((s) => s.pack === "meta-basic/child-a" && s.action === "symlink" && s.result === "would_perform_change" && s.details.dst === join(t.home, ".child-a", "a.txt"))).toBe(true);
    const text = await t.grex("rm", "--dry-run", "meta-basic");
    expect(text.stdout).toContain("meta-basic/child-a: would unlink ~/.child-a/a.txt");
    expect(text.stdout).toContain(`would delete ${join(t.ws, "meta-basic")}`);
  });

  test("sync/update --dry-run name the sha each pack would move from and to", async () => {
    const before = git(join(t.ws, "declarative-basic"), "rev-parse", "HEAD");
    const target = git(upstream.basic as string, "rev-parse", "HEAD");
    for (const verb of ["sync", "update"]) {
      const r = await t.grex(verb, "--dry-run", "declarative-basic", "--json");
      const row = (r.json.packs as Array<{ id: string; message: string; sha_before?: string; sha_after?: string }>)[0];
      expect(row?.message).toBe(`would move ${before.slice(0, 7)} -> ${target.slice(0, 7)} (main)`);
      if (verb === "sync") expect(row).toMatchObject({ sha_before: before, sha_after: target });
    }
    // A pack pinned to an annotated tag that did not move upstream stays where it is.
    git(upstream.tools as string, "tag", "-a", "v1", "-m", "v1");
    const tw = new TestWorkspace("grex-dryrun-tag-");
    try {
      expect((await tw.grex("init")).code).toBe(0);
      expect((await tw.grex("add", "--ref", "v1", upstream.tools as string)).code).toBe(0);
      const at = git(join(tw.ws, "tools"), "rev-parse", "HEAD");
      const tagged = await tw.grex("sync", "--dry-run", "--json");
      expect((tagged.json.packs as Array<{ message: string }>)[0]?.message).toBe(`up to date at ${at.slice(0, 7)} (v1)`);
    } finally {
      tw.cleanup();
    }
    const r = await t.grex("sync", "--dry-run", "--ref", "nosuch", "declarative-basic", "--json");
    expect((r.json.packs as Array<{ message: string }>)[0]?.message).toContain("would fail: ref 'nosuch' not found");
  });
});

describe("over http, a dry-run sync reads the remote's ref list only", () => {
  test("one GET of info/refs per pack, no upload-pack POST; the clone's .git is untouched", async () => {
    const { startGitHttpServer } = await import("../helpers/git-http-server.ts");
    const w = new TestWorkspace("grex-dryrun-http-");
    const seen: string[] = [];
    const server = await startGitHttpServer(join(w.root, "served"), { onRequest: (req) => seen.push(`${req.method} ${new URL(req.url).pathname}`) });
    try {
      expect((await w.grex("init")).code).toBe(0);
      const work = w.repo("remote-tools", { "README.md": "v1\n" });
      mkdirSync(join(w.root, "served"), { recursive: true });
      git(join(w.root, "served"), "clone", "-q", "--bare", work, "tools.git");
      const url = `${server.url}/tools.git`;
      expect((await w.grex("add", url)).code).toBe(0);
      const from = git(join(w.ws, "tools"), "rev-parse", "HEAD");
      const to = w.commit(work, { "README.md": "v2\n" });
      git(work, "push", "-q", join(w.root, "served", "tools.git"), "main");
      const before = userSnapshot(w.ws);
      seen.length = 0;
      const r = await w.grex("sync", "--dry-run", "--json");
      expect(r.code).toBe(0);
      expect((r.json.packs as Array<{ message: string; sha_after: string }>)[0]).toMatchObject({
        message: `would move ${from.slice(0, 7)} -> ${to.slice(0, 7)} (main)`,
        sha_after: to,
      });
      expect(seen).toEqual(["GET /tools.git/info/refs"]);
      expect(userSnapshot(w.ws)).toEqual(before);
    } finally {
      await server.stop();
      w.cleanup();
    }
  });
});
