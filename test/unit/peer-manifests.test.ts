// The readers of other tools' repository lists, on files written the way each
// tool writes them (vcs export, west's and repo's documented shapes, gita's
// csv module, mr register), and on the faults each must name by file and line.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { detectPeerFormat, readPeerManifest, type PeerContext, type PeerFormat } from "../../src/core/compat/peer-manifests.ts";
import { parseCsv } from "../../src/core/compat/peer-gita.ts";
import { readCloneCommand } from "../../src/core/compat/peer-mrconfig.ts";
import { shellQuote, shellWords } from "../../src/core/base/shell-words.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
afterEach(() => tmp.cleanup());
const makeTmpDir = (prefix: string) => tmp.make(prefix);

function ctxFor(dir: string, name: string, text: string, origins: Record<string, string> = {}): PeerContext {
  const abs = join(dir, name);
  writeFileSync(abs, text);
  return {
    file: name,
    abs,
    text,
    workspaceRoot: dir,
    home: "/home/someone",
    readInclude: (p) => {
      try {
        return readFileSync(p, "utf8");
      } catch {
        return null;
      }
    },
    originOf: (p) => origins[p] ?? null,
  };
}

async function read(format: PeerFormat, name: string, text: string, origins: Record<string, string> = {}) {
  const dir = makeTmpDir("peer-");
  return readPeerManifest(format, ctxFor(dir, name, text, origins));
}

async function failure(format: PeerFormat, name: string, text: string): Promise<string> {
  try {
    await read(format, name, text);
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error("expected a failure");
}

describe("detecting the format", () => {
  test("by name, then by content", () => {
    expect(detectPeerFormat("x/deps.repos", "")).toBe("vcstool");
    expect(detectPeerFormat("west.yml", "")).toBe("west");
    expect(detectPeerFormat("default.xml", "")).toBe("repo");
    expect(detectPeerFormat("/home/u/.config/gita/repos.csv", "")).toBe("gita");
    expect(detectPeerFormat("/home/u/.mrconfig", "")).toBe("mrconfig");
    expect(detectPeerFormat("manifest", '<?xml version="1.0"?>\n<manifest/>')).toBe("repo");
    expect(detectPeerFormat("m.yml", "manifest:\n  projects: []\n")).toBe("west");
    expect(detectPeerFormat("list", "repositories:\n  a:\n    type: git\n")).toBe("vcstool");
    expect(detectPeerFormat("cfg", "[src/a]\ncheckout = git clone x a\n")).toBe("mrconfig");
    expect(detectPeerFormat("notes.txt", "hello")).toBeNull();
  });
});

describe("vcstool .repos", () => {
  test("reads what `vcs export` writes: nested paths, versions as pins", async () => {
    const r = await read(
      "vcstool",
      "ws.repos",
      "repositories:\n  c d:\n    type: git\n    url: /srv/up/c\n    version: master\n  libs/b:\n    type: git\n    url: https://example.test/b.git\n    version: 1.10\n",
    );
    expect(r.entries.map(({ path, url, ref }) => ({ path, url, ref }))).toEqual([
      { path: "c d", url: "/srv/up/c", ref: "master" },
      { path: "libs/b", url: "https://example.test/b.git", ref: "1.10" },
    ]);
    expect(r.entries[1]?.at).toBe("ws.repos:6");
  });
  test("another VCS or a missing url is named by line; the rest imports", async () => {
    const r = await read("vcstool", "ws.repos", "repositories:\n  h:\n    type: hg\n    url: https://x/h\n  g:\n    type: git\n  ok:\n    type: git\n    url: https://x/ok\n");
    expect(r.entries.map((e) => e.path)).toEqual(["ok"]);
    expect(r.problems).toEqual([
      { path: "h", error: "ws.repos:2: type hg is not supported; grex manages git repositories only" },
      { path: "g", error: "ws.repos:5: the entry has no url" },
    ]);
  });
  test("a file that is not a .repos list stops with its line", async () => {
    expect(await failure("vcstool", "ws.repos", "repos:\n  a: 1\n")).toBe("ws.repos:1: has no 'repositories:' mapping; give a file written by `vcs export`.");
    expect(await failure("vcstool", "ws.repos", "repositories:\n  a: [\n")).toMatch(/^ws\.repos:\d+: is not valid YAML/);
  });
});

describe("west.yml", () => {
  const WEST = `manifest:
  version: "0.13"
  defaults:
    remote: upstream
    revision: main
  remotes:
    - name: upstream
      url-base: https://example.test/zephyr/
    - name: mirror
      url-base: https://mirror.test
  group-filter: [-optional]
  projects:
    - name: zephyr
      revision: v3.5.0
      import: true
    - name: hal_nordic
      path: modules/hal/nordic
      remote: mirror
      repo-path: hal-nordic
      groups:
        - hal
        - optional
    - name: tool
      url: https://other.test/tool.git
      revision: refs/heads/stable
    - name: both
      url: https://x/y
      remote: mirror
    - name: lost
      remote: nowhere
  self:
    path: app
`;
  test("remotes, url-base, repo-path, defaults, groups as tags, paths kept", async () => {
    const r = await read("west", "west.yml", WEST);
    expect(r.entries.map(({ path, url, ref, tags }) => ({ path, url, ref, tags }))).toEqual([
      { path: "zephyr", url: "https://example.test/zephyr/zephyr", ref: "v3.5.0", tags: [] },
      { path: "modules/hal/nordic", url: "https://mirror.test/hal-nordic", ref: "main", tags: ["hal", "optional"] },
      { path: "tool", url: "https://other.test/tool.git", ref: "stable", tags: [] },
    ]);
    expect(r.problems).toEqual([
      { path: "both", error: "west.yml:26: project both gives both url and remote; west allows one of them" },
      { path: "lost", error: "west.yml:29: project lost names remote nowhere, which remotes: does not define" },
    ]);
    expect(r.notes.some((n) => n.startsWith("west.yml:13: the import: of project zephyr is not followed"))).toBe(true);
    expect(r.notes.some((n) => n.includes("group-filter is not applied"))).toBe(true);
  });
  test("west's own default revision is master", async () => {
    const r = await read("west", "west.yml", "manifest:\n  projects:\n    - name: a\n      url: https://x/a\n");
    expect(r.entries[0]?.ref).toBe("master");
  });
  test("a remote without url-base stops with its line", async () => {
    expect(await failure("west", "west.yml", "manifest:\n  remotes:\n    - name: r\n  projects: []\n")).toBe(
      "west.yml:3: a remote needs both name and url-base; complete that remote.",
    );
  });
});

describe("repo manifest XML", () => {
  test("remotes, default, groups, extend/remove-project and a local include", async () => {
    const dir = makeTmpDir("peer-repo-");
    writeFileSync(
      join(dir, "extra.xml"),
      `<?xml version="1.0" encoding="UTF-8"?>\n<manifest>\n  <project name="tools/lint" path="tools/lint" />\n</manifest>\n`,
    );
    const text = `<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment with <project> in it -->
<manifest>
  <remote name="origin" fetch="https://example.test/git/" revision="refs/heads/dev" />
  <remote  name="gh"
           fetch="https://github.example" />
  <default remote="origin" revision="main" sync-j="4" />
  <project name="platform/build" path="build/make" groups="pdk,tools" >
    <linkfile src="core/root.mk" dest="Makefile" />
  </project>
  <project name="kernel" remote="gh" revision="refs/tags/v6.1" groups="kernel notdefault" />
  <project name="docs" />
  <project name="old" />
  <remove-project name="old" />
  <extend-project name="docs" groups="manual" revision="v2" />
  <include name="extra.xml" groups="lint" />
</manifest>
`;
    const r = await readPeerManifest("repo", ctxFor(dir, "default.xml", text));
    expect(r.entries.map(({ path, url, ref, tags }) => ({ path, url, ref, tags }))).toEqual([
      { path: "build/make", url: "https://example.test/git/platform/build", ref: "dev", tags: ["pdk", "tools"] },
      { path: "kernel", url: "https://github.example/kernel", ref: "v6.1", tags: ["kernel", "notdefault"] },
      { path: "docs", url: "https://example.test/git/docs", ref: "v2", tags: ["manual"] },
      { path: "tools/lint", url: "https://example.test/git/tools/lint", ref: "dev", tags: ["lint"] },
    ]);
    expect(r.entries[3]?.at).toBe("extra.xml:3");
    expect(r.notes).toEqual(["default.xml:8: the linkfile of platform/build is not imported; declare it as a symlink action in that pack's pack.yaml."]);
  });
  test("a relative fetch, a nested project, a bad include and broken XML are named by line", async () => {
    expect(await failure("repo", "default.xml", `<manifest>\n  <remote name="r" fetch=".." />\n</manifest>\n`)).toBe(
      "default.xml:2: remote r has the relative fetch '..', which repo resolves against the manifest repository's URL; write the remote's full URL in fetch and import again.",
    );
    expect(await failure("repo", "default.xml", `<manifest>\n  <include name="../etc/x.xml" />\n</manifest>`)).toContain("default.xml:2: the include ../etc/x.xml lies outside the manifest's directory");
    expect(await failure("repo", "default.xml", `<manifest>\n  <include name="missing.xml" />\n</manifest>`)).toContain("default.xml:2: the included manifest missing.xml cannot be read");
    expect(await failure("repo", "default.xml", `<manifest>\n  <project name="a">\n</manifest>`)).toMatch(/^default\.xml:3: is not well-formed XML \(<\/manifest> closes <project>/);
    expect(await failure("repo", "default.xml", `<manifests/>`)).toContain("default.xml:1: the root element is <manifests>");
    const r = await read("repo", "default.xml", `<manifest>\n<remote name="o" fetch="https://x"/>\n<default remote="o"/>\n<project name="a">\n  <project name="b" path="sub"/>\n</project>\n</manifest>`);
    expect(r.problems).toEqual([{ path: "a/sub", error: "default.xml:5: nested projects are not supported; list it as a top-level project" }]);
  });
  test("an include loop stops", async () => {
    const dir = makeTmpDir("peer-loop-");
    writeFileSync(join(dir, "b.xml"), `<manifest>\n<include name="a.xml"/>\n</manifest>`);
    const ctx = ctxFor(dir, "a.xml", `<manifest>\n<include name="b.xml"/>\n</manifest>`);
    await expect(readPeerManifest("repo", ctx)).rejects.toThrow(/b\.xml:2: the include a\.xml includes itself/);
  });
});

describe("gita repos.csv", () => {
  test("csv as Python writes it, origins as urls, groups.csv as tags, paths inside the workspace kept", async () => {
    const dir = makeTmpDir("peer-gita-");
    mkdirSync(join(dir, "libs"));
    writeFileSync(join(dir, "groups.csv"), "front:a b:\nback:b:\n");
    const text = `${join(dir, "a")},a,,\n${join(dir, "libs/b")},b,,\n"${join(dir, "c,d")}",c,,\n/elsewhere/tool,tool,,\n`;
    const origins = { [join(dir, "a")]: "https://x/a.git", [join(dir, "libs/b")]: "https://x/b.git", "/elsewhere/tool": "https://x/tool.git" };
    const r = await readPeerManifest("gita", ctxFor(dir, "repos.csv", text, origins));
    expect(r.entries.map(({ path, url, tags }) => ({ path, url, tags }))).toEqual([
      { path: "a", url: "https://x/a.git", tags: ["front"] },
      { path: "libs/b", url: "https://x/b.git", tags: ["front", "back"] },
      { path: "tool", url: "https://x/tool.git", tags: [] },
    ]);
    expect(r.problems).toEqual([{ path: "c,d", error: `repos.csv:3: ${join(dir, "c,d")} is not a clone with an origin remote, so there is no URL to register` }]);
    expect(r.notes).toEqual(["/elsewhere/tool lies outside the workspace; it is registered as 'tool' and sync clones it there."]);
  });
  test("Python csv quoting", () => {
    expect(parseCsv('a,"b,c","d ""e"""\n\n"multi\nline",x\n', ",")).toEqual([
      { fields: ["a", "b,c", 'd "e"'], line: 1 },
      { fields: ["multi\nline", "x"], line: 3 },
    ]);
  });
});

describe("myrepos .mrconfig", () => {
  test("what `mr register` writes, continuation lines, -b as a pin, sections relative to the file", async () => {
    const dir = makeTmpDir("peer-mr-");
    const text = `# written by mr register
[DEFAULT]
git_gc = git gc "$@"

[${join(dir, "a")}]
checkout = git clone '${join(dir, "..", "up", "a")}' 'a'

[libs/b]
checkout = git clone --depth 1 -b release "https://x/b.git" b &&
    cd b &&
    git checkout -b mine origin/release
chain = true

[svnthing]
checkout = svn checkout svn://x/trunk svnthing

[$HOSTNAME]
checkout = git clone https://x/h h
`;
    const r = await readPeerManifest("mrconfig", ctxFor(dir, ".mrconfig", text));
    expect(r.entries.map(({ path, url, ref }) => ({ path, url, ref }))).toEqual([
      { path: "a", url: join(dir, "..", "up", "a"), ref: null },
      { path: "libs/b", url: "https://x/b.git", ref: "release" },
    ]);
    expect(r.problems.map((p) => p.error)).toEqual([
      ".mrconfig:14: the checkout command is not a git clone (svn checkout); grex manages git repositories only",
      ".mrconfig:17: the section name uses shell expansion, which grex does not run; write the directory out",
    ]);
    expect(r.notes).toEqual([
      ".mrconfig:8: the commands after git clone in the checkout of libs/b are not carried over.",
      ".mrconfig:8: 'chain' is not followed.",
    ]);
  });
  test("shell words and clone commands", () => {
    expect(shellWords(`git clone 'a b' "c\\"d" e\\ f&&x;y`)).toEqual(["git", "clone", "a b", 'c"d', "e f", "&&", "x", ";", "y"]);
    expect(readCloneCommand("git clone --branch=v1 -- https://x/y dir")).toEqual({ url: "https://x/y", ref: "v1", more: false });
    expect(readCloneCommand("git clone -q")).toEqual({ error: "the git clone command names no URL" });
    for (const w of ["plain/path-1.2", "not a url", "it's", "", "$HOME", "a\\b"]) expect(shellWords(shellQuote(w))).toEqual([w]);
  });
});
