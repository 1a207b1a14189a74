// Moving from another tool in one command: a vcstool .repos, a west.yml, a
// repo manifest, a gita repos.csv and a myrepos .mrconfig, each written the
// way its tool writes it, imported, synced, and the packs' paths, pins and
// tags checked against real clones. Where the tool itself is installed (vcs,
// gita, mr), a second test lets it write the file.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

let t: TestWorkspace;
let core: string;
let api: string;
let web: string;
let v1: string;
beforeEach(async () => {
  t = new TestWorkspace("grex-import-peers-");
  await t.grex("init");
  core = t.repo("core", { "core.txt": "core\n" });
  v1 = git(core, "rev-parse", "HEAD");
  git(core, "tag", "v1");
  t.commit(core, { "core.txt": "core 2\n" }, "after v1");
  api = t.repo("api", { "api.txt": "api\n" });
  git(api, "branch", "stable");
  t.commit(api, { "api.txt": "api 2\n" }, "main moves on");
  web = t.repo("web", { "web.txt": "web\n" });
});
afterEach(() => t.cleanup());

interface LsPack {
  id: string;
  url: string;
  ref: string | null;
  tags?: string[];
}

/** Imports `file`, syncs, and returns what `ls` says with each pack's checked-out commit. */
async function importAndSync(file: string, ...extra: string[]) {
  const imp = await t.grex("import", "--from", file, "--json", ...extra);
  expect(imp.code).toBe(0);
  const sync = await t.grex("sync");
  expect(sync.code).toBe(0);
  const ls = await t.grex("ls", "--json");
  const packs = (ls.json.packs as LsPack[]).map((p) => ({ id: p.id, url: p.url, ref: p.ref, tags: p.tags ?? [], head: git(join(t.ws, p.id), "rev-parse", "HEAD") }));
  return { imp, packs: packs.sort((a, b) => (a.id < b.id ? -1 : 1)) };
}

describe("each format, imported and synced", () => {
  test("vcstool .repos (as `vcs export` writes it): nested paths, version as a pin", async () => {
    writeFileSync(
      join(t.ws, "team.repos"),
      `repositories:\n  libs/core:\n    type: git\n    url: ${core}\n    version: v1\n  services/api:\n    type: git\n    url: ${api}\n    version: stable\n`,
    );
    const { packs } = await importAndSync("team.repos");
    expect(packs).toEqual([
      { id: "libs/core", url: core, ref: "v1", tags: [], head: v1 },
      { id: "services/api", url: api, ref: "stable", tags: [], head: git(api, "rev-parse", "stable") },
    ]);
  });

  test("west.yml: remotes and url-base, defaults, groups as tags, path", async () => {
    writeFileSync(
      join(t.ws, "west.yml"),
      `manifest:\n  defaults:\n    remote: local\n    revision: main\n  remotes:\n    - name: local\n      url-base: ${t.upstream}\n  projects:\n    - name: core\n      path: libs/core\n      revision: v1\n      groups: [base, frontend]\n    - name: web\n`,
    );
    const { packs } = await importAndSync("west.yml");
    expect(packs).toEqual([
      { id: "libs/core", url: `${t.upstream}/core`, ref: "v1", tags: ["base", "frontend"], head: v1 },
      { id: "web", url: `${t.upstream}/web`, ref: "main", tags: [], head: git(web, "rev-parse", "HEAD") },
    ]);
  });

  test("repo manifest: remote fetch, default revision, groups, an include beside it", async () => {
    mkdirSync(join(t.ws, "manifests"));
    writeFileSync(join(t.ws, "manifests", "web.xml"), `<?xml version="1.0" encoding="UTF-8"?>\n<manifest>\n  <project name="web" path="ui/web" groups="frontend" />\n</manifest>\n`);
    writeFileSync(
      join(t.ws, "manifests", "default.xml"),
      `<?xml version="1.0" encoding="UTF-8"?>\n<manifest>\n  <remote name="local" fetch="${t.upstream}" />\n  <default remote="local" revision="refs/heads/main" />\n  <project name="api" path="services/api" revision="stable" groups="backend,services" />\n  <include name="web.xml" />\n</manifest>\n`,
    );
    const { packs } = await importAndSync("manifests/default.xml");
    expect(packs).toEqual([
      { id: "services/api", url: `${t.upstream}/api`, ref: "stable", tags: ["backend", "services"], head: git(api, "rev-parse", "stable") },
      { id: "ui/web", url: `${t.upstream}/web`, ref: "main", tags: ["frontend"], head: git(web, "rev-parse", "HEAD") },
    ]);
  });

  test("gita repos.csv and groups.csv: clones outside the workspace are registered by name and cloned", async () => {
    const elsewhere = join(t.root, "elsewhere");
    mkdirSync(elsewhere);
    git(elsewhere, "clone", "-q", core, "core");
    git(elsewhere, "clone", "-q", web, "web");
    const conf = join(t.home, ".config", "gita");
    mkdirSync(conf, { recursive: true });
    // Python's csv module, as gita writes them: path,name,type,flags and group:repos:path.
    writeFileSync(join(conf, "repos.csv"), `${join(elsewhere, "core")},core,,\r\n${join(elsewhere, "web")},web,,\r\n`);
    writeFileSync(join(conf, "groups.csv"), "frontend:web:\r\n");
    const { imp, packs } = await importAndSync(join(conf, "repos.csv"));
    expect(packs).toEqual([
      { id: "core", url: core, ref: null, tags: [], head: git(core, "rev-parse", "HEAD") },
      { id: "web", url: web, ref: null, tags: ["frontend"], head: git(web, "rev-parse", "HEAD") },
    ]);
    expect(imp.json.notes).toEqual([
      `${join(elsewhere, "core")} lies outside the workspace; it is registered as 'core' and sync clones it there.`,
      `${join(elsewhere, "web")} lies outside the workspace; it is registered as 'web' and sync clones it there.`,
    ]);
  });

  test("myrepos .mrconfig: sections relative to the file, git clone -b as a pin, other VCSs named", async () => {
    writeFileSync(
      join(t.ws, ".mrconfig"),
      `[libs/core]\ncheckout = git clone '${core}' 'core'\n\n[services/api]\ncheckout = git clone -b stable '${api}' 'api'\n\n[old]\ncheckout = svn checkout svn://example.test/old old\n`,
    );
    const imp = await t.grex("import", "--from", ".mrconfig");
    expect(imp.code).toBe(2);
    expect(imp.stderr).toBe(
      "grex: 1 of 3 entries could not be imported (first: old: .mrconfig:7: the checkout command is not a git clone (svn checkout); grex manages git repositories only); correct that entry in .mrconfig and run grex import again.\n",
    );
    expect((await t.grex("sync")).code).toBe(0);
    expect(git(join(t.ws, "libs", "core"), "rev-parse", "HEAD")).toBe(git(core, "rev-parse", "HEAD"));
    expect(git(join(t.ws, "services", "api"), "rev-parse", "HEAD")).toBe(git(api, "rev-parse", "stable"));
  });
});

describe("bad input", () => {
  test("a file no tool wrote is refused with the way out; --format without --from too", async () => {
    writeFileSync(join(t.ws, "list.txt"), "hello\n");
    const r = await t.grex("import", "--from", "list.txt");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "grex: Cannot tell which tool wrote list.txt; pass --format vcstool|west|repo|gita|mrconfig (or name it *.repos, west.yml, *.xml, repos.csv or .mrconfig).\n",
    );
    const f = await t.grex("import", "--format", "west");
    expect(f.code).toBe(2);
    expect(f.stderr).toContain("--format describes --from");
  });
  test("a broken file is named by file and line and nothing is registered", async () => {
    writeFileSync(join(t.ws, "west.yml"), "manifest:\n  remotes:\n    - name: r\n");
    const r = await t.grex("import", "--from", "west.yml");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: west.yml:3: a remote needs both name and url-base; complete that remote.\n");
    expect((await t.grex("ls", "--json")).json.packs).toEqual([]);
  });
  test("a control character in any entry refuses the whole file (exit 3), as with REPOS.json", async () => {
    writeFileSync(join(t.ws, "evil.repos"), `repositories:\n  ok:\n    type: git\n    url: ${core}\n  evil:\n    type: git\n    url: "${core}\\n[filter \\"x\\"]\\n\\tsmudge = touch pwned"\n`);
    const r = await t.grex("import", "--from", "evil.repos");
    expect(r.code).toBe(3);
    expect(r.stderr).toBe('grex: evil.repos:5: the entry for "evil" is refused: its url contains a newline, which git refuses in URLs, refs and paths; fix evil.repos and run grex import again.\n');
    expect((await t.grex("ls", "--json")).json.packs).toEqual([]);
  });
  test("a path the path rule refuses is a failed entry, not a clone", async () => {
    writeFileSync(join(t.ws, "x.repos"), `repositories:\n  ../out:\n    type: git\n    url: ${core}\n`);
    const r = await t.grex("import", "--from", "x.repos", "--json");
    expect(r.code).toBe(2);
    expect(existsSync(join(t.root, "out"))).toBe(false);
  });
});

const has = (cmd: string) => Bun.which(cmd) !== null;

describe("files written by the tools themselves (where installed)", () => {
  test.skipIf(!has("vcs"))("vcs export of a workspace's clones", async () => {
    const src = join(t.root, "src");
    mkdirSync(join(src, "libs"), { recursive: true });
    git(join(src, "libs"), "clone", "-q", core, "core");
    git(src, "clone", "-q", "-b", "stable", api, "api");
    const out = Bun.spawnSync(["vcs", "export", src], { env: t.env });
    writeFileSync(join(t.ws, "exported.repos"), out.stdout);
    const { packs } = await importAndSync("exported.repos");
    expect(packs.map((p) => [p.id, p.ref, p.head])).toEqual([
      ["api", "stable", git(api, "rev-parse", "stable")],
      ["libs/core", "main", git(core, "rev-parse", "HEAD")],
    ]);
  });
  test.skipIf(!has("gita"))("gita add and gita group add", async () => {
    const src = join(t.root, "src");
    mkdirSync(src);
    git(src, "clone", "-q", core, "core");
    git(src, "clone", "-q", web, "web");
    const env = { ...t.env, XDG_CONFIG_HOME: join(t.home, ".config") };
    expect(Bun.spawnSync(["gita", "add", join(src, "core"), join(src, "web")], { env, cwd: src }).exitCode).toBe(0);
    expect(Bun.spawnSync(["gita", "group", "add", "web", "-n", "frontend"], { env, cwd: src }).exitCode).toBe(0);
    const { packs } = await importAndSync(join(t.home, ".config", "gita", "repos.csv"));
    expect(packs.map((p) => [p.id, p.url, p.tags])).toEqual([
      ["core", core, []],
      ["web", web, ["frontend"]],
    ]);
  });
  test.skipIf(!has("mr"))("mr register", async () => {
    const src = join(t.ws, "checkouts");
    mkdirSync(src);
    git(src, "clone", "-q", web, "web");
    const reg = Bun.spawnSync(["mr", "-c", join(t.ws, ".mrconfig"), "register", join(src, "web")], { env: t.env, cwd: src });
    expect(reg.exitCode).toBe(0);
    const imp = await t.grex("import", "--from", ".mrconfig", "--json");
    expect(imp.code).toBe(0);
    expect((imp.json.imported as Array<{ path: string; url: string }>).map((i) => [i.path, i.url])).toEqual([["checkouts/web", web]]);
  });
});
