// pack.yaml loading and validation (SPEC §3): real files in temp dirs.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { currentOs } from "../../src/core/base/os.ts";
import { checkDuplicateSymlinkDst, loadPackYaml } from "../../src/core/pack/load.ts";
import type { PackManifest } from "../../src/core/pack/schema.ts";

const root = mkdtempSync(join(tmpdir(), "grex-pack-load-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A pack directory holding the given files (paths relative to the pack). */
function pack(files: Record<string, string | Uint8Array>): string {
  const dir = join(root, `p${n++}`);
  mkdirSync(dir);
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  return dir;
}

const HEAD = 'schema_version: "1"\nname: demo\ntype: declarative\n';

async function failure(p: Promise<unknown>): Promise<GrexError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    return err as GrexError;
  }
  throw new Error("expected a GrexError, got success");
}

function billionLaughs(): string {
  const lines = ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
  for (let i = 1; i <= 9; i++) {
    const refs = Array.from({ length: 9 }, () => `*l${i - 1}`).join(", ");
    lines.push(`lol${i}: &l${i} [${refs}]`);
  }
  return `${lines.join("\n")}\n`;
}

interface Bad {
  name: string;
  yaml: string | Uint8Array;
  kind?: "integrity" | "plugin";
  /** Substrings the message must contain (besides the file path). */
  says: string[];
  /** Extra files in the pack (e.g. a target override). */
  extra?: Record<string, string>;
  /** The file the message must name, relative to the pack (default .grex/pack.yaml). */
  file?: string;
}

const bad: Bad[] = [
  { name: "alias bomb (billion laughs)", yaml: billionLaughs(), says: ["anchor &l0", "alias-bomb"] },
  { name: "a single alias", yaml: `${HEAD}x-base: &base { a: 1 }\nx-copy: *base\n`, says: ["line 4", "anchor &base"] },
  { name: "an alias to an undefined anchor", yaml: `${HEAD}x-copy: *nowhere\n`, says: ["alias *nowhere"] },
  { name: "an anchor without alias", yaml: `${HEAD}version: &v "1.0"\n`, says: ["anchor &v"] },
  { name: "unknown top-level key", yaml: `${HEAD}colour: blue\n`, says: [": colour is not a pack.yaml field", "x-"] },
  { name: "typo of a known key", yaml: `${HEAD}acitons: []\n`, says: ["acitons", "did you mean actions?"] },
  { name: "actions_replace outside an override", yaml: `${HEAD}actions_replace: true\n`, says: ["actions_replace", "targets"] },
  { name: "bad name", yaml: 'schema_version: "1"\nname: Bad Name\ntype: meta\n', says: [": name 'Bad Name'"] },
  { name: "name with a leading digit", yaml: 'schema_version: "1"\nname: 1pack\ntype: meta\n', says: [": name '1pack'"] },
  { name: "missing name", yaml: 'schema_version: "1"\ntype: meta\n', says: [": name is missing"] },
  { name: "missing type", yaml: 'schema_version: "1"\nname: demo\n', says: [": type is missing"] },
  { name: "missing schema_version", yaml: "name: demo\ntype: meta\n", says: [": schema_version is missing"] },
  { name: "schema_version 2", yaml: 'schema_version: "2"\nname: demo\ntype: meta\n', says: [': schema_version is "2"'] },
  { name: "schema_version unquoted", yaml: "schema_version: 1\nname: demo\ntype: meta\n", says: [": schema_version must be the string"] },
  { name: "unknown type", yaml: 'schema_version: "1"\nname: demo\ntype: magic\n', kind: "plugin", says: [": type 'magic'"] },
  {
    name: "unknown action key",
    yaml: `${HEAD}actions:\n  - mkdir: { path: /tmp/a }\n  - mkdir: { path: /tmp/b }\n  - symlnk: { src: a, dst: b }\n`,
    kind: "plugin",
    says: [": actions[2].symlnk is not a known action", "did you mean symlink?"],
  },
  { name: "unknown action in teardown", yaml: `${HEAD}teardown:\n  - frobnicate: {}\n`, kind: "plugin", says: [": teardown[0].frobnicate"] },
  { name: "action item with two keys", yaml: `${HEAD}actions:\n  - mkdir: { path: a }\n    rmdir: { path: b }\n`, says: [": actions[0] has 2 keys"] },
  { name: "action item with no key", yaml: `${HEAD}actions:\n  - {}\n`, says: [": actions[0] has no action key"] },
  { name: "action item that is a string", yaml: `${HEAD}actions:\n  - mkdir\n`, says: [": actions[0] must be a mapping"] },
  { name: "actions not a list", yaml: `${HEAD}actions: { mkdir: { path: a } }\n`, says: [": actions must be a list"] },
  { name: "child path ../x", yaml: `${HEAD}children:\n  - url: https://h/x.git\n    path: ../x\n`, says: [": children[0].path '../x'"] },
  { name: "child path a/b", yaml: `${HEAD}children:\n  - url: https://h/x.git\n    path: a/b\n`, says: [": children[0].path 'a/b'"] },
  { name: "child path a\\b", yaml: `${HEAD}children:\n  - url: https://h/x.git\n    path: 'a\\b'\n`, says: [": children[0].path 'a\\b'"] },
  { name: "child path .", yaml: `${HEAD}children:\n  - url: https://h/x.git\n    path: .\n`, says: [": children[0].path '.'"] },
  { name: "child path ..", yaml: `${HEAD}children:\n  - url: https://h/ok.git\n  - url: https://h/x.git\n    path: ..\n`, says: [": children[1].path '..'"] },
  { name: "child default path unusable", yaml: `${HEAD}children:\n  - url: https://h/..\n`, says: [": children[0].url", "add path"] },
  { name: "child without url", yaml: `${HEAD}children:\n  - path: x\n`, says: [": children[0].url is missing"] },
  { name: "child with unknown field", yaml: `${HEAD}children:\n  - url: https://h/x.git\n    branch: main\n`, says: [": children[0].branch is not a known field"] },
  { name: "two children in one directory", yaml: `${HEAD}children:\n  - url: https://h/a/x.git\n  - url: https://h/b/X\n`, says: [": children[1].path 'X'", "children[0]"] },
  { name: "depends_on not a list", yaml: `${HEAD}depends_on: base\n`, says: [": depends_on must be a list"] },
  { name: "depends_on item not a string", yaml: `${HEAD}depends_on:\n  - { name: base }\n`, says: [": depends_on[0] must be a string"] },
  { name: "version neither a string nor a number", yaml: `${HEAD}version: true\n`, says: [": version must be a string or a number"] },
  { name: "non-YAML", yaml: "name: [unclosed\n  type: {\n", says: ["is not valid YAML"] },
  { name: "duplicate key", yaml: `${HEAD}name: again\n`, says: ["line 4 is not valid YAML"] },
  { name: "two YAML documents", yaml: `${HEAD}---\n${HEAD}`, says: ["is not valid YAML"] },
  { name: "not UTF-8", yaml: new Uint8Array([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0xff, 0xfe, 0x0a]), says: ["not UTF-8"] },
  { name: "a list, not a mapping", yaml: "- schema_version: '1'\n- name: demo\n", says: ["must be a mapping of pack.yaml fields (got a list)"] },
  { name: "a scalar, not a mapping", yaml: "just text\n", says: ["must be a mapping of pack.yaml fields"] },
  { name: "empty file", yaml: "", says: ["is empty"] },
  { name: "only comments", yaml: "# nothing here\n", says: ["is empty"] },
  { name: "2 MiB file", yaml: `${HEAD}${"# padding padding padding padding padding padding padding\n".repeat(37_000)}`, says: ["1 MiB"] },
  {
    name: "unknown action in a target override",
    yaml: HEAD,
    extra: { ".grex/targets/linux.yaml": "actions:\n  - mkdri: { path: a }\n" },
    file: ".grex/targets/linux.yaml",
    kind: "plugin",
    says: [": actions[0].mkdri"],
  },
  {
    name: "unknown key in a target override",
    yaml: HEAD,
    extra: { ".grex/targets/linux.yaml": "colour: red\n" },
    file: ".grex/targets/linux.yaml",
    says: [": colour is not a pack.yaml field"],
  },
  {
    name: "actions_replace not a boolean",
    yaml: HEAD,
    extra: { ".grex/targets/linux.yaml": "actions_replace: yes\n" },
    file: ".grex/targets/linux.yaml",
    says: [": actions_replace must be true or false"],
  },
  {
    name: "a target override that is a list",
    yaml: HEAD,
    extra: { ".grex/targets/linux.yaml": "- mkdir: { path: a }\n" },
    file: ".grex/targets/linux.yaml",
    says: ["must be a mapping"],
  },
  {
    name: "a target override child clashing with a base child",
    yaml: `${HEAD}children:\n  - url: https://h/themes.git\n`,
    extra: { ".grex/targets/linux.yaml": "children:\n  - url: https://other/themes\n" },
    file: ".grex/targets/linux.yaml",
    says: [": children[0].path 'themes' is the same directory as children[0]"],
  },
];

describe("bad pack.yaml documents give one-sentence GrexErrors", () => {
  for (const b of bad) {
    test(b.name, async () => {
      const dir = pack({ ".grex/pack.yaml": b.yaml, ...b.extra });
      const err = await failure(loadPackYaml(dir, { os: "linux" }));
      const kind = b.kind ?? "integrity";
      expect(err.kind).toBe(kind);
      expect(err.exitCode).toBe(kind === "plugin" ? 8 : 3);
      expect(err.message).not.toContain("\n");
      expect(err.message).not.toMatch(/\bat .+:\d+:\d+/); // no stack frames
      expect(err.message).not.toContain("Invalid type"); // no raw valibot text
      expect(err.message.startsWith(join(dir, b.file ?? ".grex/pack.yaml"))).toBe(true);
      expect(err.message.endsWith(".")).toBe(true);
      expect(err.message).toContain("; "); // reason; what to do
      for (const s of b.says) expect(err.message).toContain(s);
    });
  }
});

const minimalExpected: PackManifest = {
  schema_version: "1",
  name: "demo",
  type: "declarative",
  version: null,
  depends_on: [],
  children: [],
  actions: [],
  teardown: null,
  extensions: {},
};

describe("good pack.yaml documents", () => {
  test("no pack.yaml (or no .grex at all) is null", async () => {
    expect(await loadPackYaml(pack({ "README.md": "hi\n" }))).toBeNull();
    expect(await loadPackYaml(pack({ ".grex/hooks/setup.sh": "true\n" }))).toBeNull();
    expect(await loadPackYaml(pack({ ".grex": "a file, not a directory\n" }))).toBeNull();
  });

  test("minimal", async () => {
    expect(await loadPackYaml(pack({ ".grex/pack.yaml": HEAD }), { os: "linux" })).toEqual(minimalExpected);
  });

  test("empty actions list and null lists are valid", async () => {
    const m = await loadPackYaml(pack({ ".grex/pack.yaml": `${HEAD}actions: []\nchildren:\ndepends_on: []\nteardown: []\n` }));
    expect(m).toEqual({ ...minimalExpected, teardown: [] });
  });

  test("full document with every field", async () => {
    const yaml = `# every field
schema_version: "1"
name: dev-env
type: meta
version: "2.1.0"
depends_on:
  - base-tools
  - https://example.com/org/fonts.git
children:
  - url: https://example.com/org/themes.git
  - url: git@example.com:org/tools.git
    ref: v1.2.0
  - url: ../sibling/
    path: sib.dir_1
    ref: ~
actions:
  - mkdir: { path: $HOME/.config/dev, mode: "700" }
  - symlink: { src: files/rc, dst: $HOME/.rc }
  - when:
      os: linux
      actions:
        - exec: { cmd: [true] }
teardown:
  - rmdir: { path: $HOME/.config/dev }
x-owner: platform-team
x-notes: { reviewed: true }
`;
    const m = await loadPackYaml(pack({ ".grex/pack.yaml": yaml }), { os: "windows" });
    expect(m).toEqual({
      schema_version: "1",
      name: "dev-env",
      type: "meta",
      version: "2.1.0",
      depends_on: ["base-tools", "https://example.com/org/fonts.git"],
      children: [
        { url: "https://example.com/org/themes.git", path: "themes", ref: null },
        { url: "git@example.com:org/tools.git", path: "tools", ref: "v1.2.0" },
        { url: "../sibling/", path: "sib.dir_1", ref: null },
      ],
      actions: [
        { mkdir: { path: "$HOME/.config/dev", mode: "700" } },
        { symlink: { src: "files/rc", dst: "$HOME/.rc" } },
        { when: { os: "linux", actions: [{ exec: { cmd: [true] } }] } },
      ],
      teardown: [{ rmdir: { path: "$HOME/.config/dev" } }],
      extensions: { "x-owner": "platform-team", "x-notes": { reviewed: true } },
    });
  });

  test("an x- key is accepted and kept", async () => {
    const m = await loadPackYaml(pack({ ".grex/pack.yaml": `${HEAD}x-team: infra\n` }));
    expect(m?.extensions).toEqual({ "x-team": "infra" });
  });

  test("a file of exactly 1 MiB is read", async () => {
    const pad = "#".repeat(1024 * 1024 - HEAD.length - 1);
    const m = await loadPackYaml(pack({ ".grex/pack.yaml": `${HEAD}${pad}\n` }));
    expect(m?.name).toBe("demo");
  });

  test("every contract fixture in test/fixtures loads and passes the symlink check", async () => {
    const fixtures = join(import.meta.dir, "..", "fixtures");
    for (const name of readdirSync(fixtures)) {
      const m = await loadPackYaml(join(fixtures, name));
      if (!m) continue;
      expect(m.name).toBe(name);
      checkDuplicateSymlinkDst(m, join(fixtures, name, ".grex/pack.yaml"));
    }
  });
});

describe("platform overrides (.grex/targets/<os>.yaml)", () => {
  const base = `schema_version: "1"
name: demo
type: declarative
version: "1"
depends_on: [base]
children:
  - url: https://h/one.git
actions:
  - mkdir: { path: /tmp/a }
teardown:
  - rmdir: { path: /tmp/a }
x-keep: base
x-over: base
`;

  test("scalars replace, lists append after the base, x- keys merge", async () => {
    const dir = pack({
      ".grex/pack.yaml": base,
      ".grex/targets/linux.yaml": `version: "1-linux"
depends_on: [linux-base]
children:
  - url: https://h/two.git
actions:
  - mkdir: { path: /tmp/linux }
x-over: linux
`,
    });
    const m = await loadPackYaml(dir, { os: "linux" });
    expect(m).toEqual({
      schema_version: "1",
      name: "demo",
      type: "declarative",
      version: "1-linux",
      depends_on: ["base", "linux-base"],
      children: [
        { url: "https://h/one.git", path: "one", ref: null },
        { url: "https://h/two.git", path: "two", ref: null },
      ],
      actions: [{ mkdir: { path: "/tmp/a" } }, { mkdir: { path: "/tmp/linux" } }],
      teardown: [{ rmdir: { path: "/tmp/a" } }],
      extensions: { "x-keep": "base", "x-over": "linux" },
    });
  });

  test("actions_replace: true replaces actions; other lists still append", async () => {
    const dir = pack({
      ".grex/pack.yaml": base,
      ".grex/targets/macos.yaml": "actions_replace: true\nactions:\n  - mkdir: { path: /tmp/mac }\ndepends_on: [brew]\n",
    });
    const m = await loadPackYaml(dir, { os: "macos" });
    expect(m?.actions).toEqual([{ mkdir: { path: "/tmp/mac" } }]);
    expect(m?.depends_on).toEqual(["base", "brew"]);
    expect(m?.children.map((c) => c.path)).toEqual(["one"]);
  });

  test("a linux override with actions_replace: true replaces the base actions (os: linux)", async () => {
    const dir = pack({
      ".grex/pack.yaml": base,
      ".grex/targets/linux.yaml": "actions_replace: true\nactions:\n  - symlink: { src: files/rc, dst: /tmp/rc }\n  - mkdir: { path: /tmp/l }\n",
      ".grex/targets/macos.yaml": 'version: "mac"\n',
    });
    const m = await loadPackYaml(dir, { os: "linux" });
    expect(m?.actions).toEqual([{ symlink: { src: "files/rc", dst: "/tmp/rc" } }, { mkdir: { path: "/tmp/l" } }]);
    expect(m?.teardown).toEqual([{ rmdir: { path: "/tmp/a" } }]);
    expect(m?.version).toBe("1");
    expect(m?.children.map((c) => c.path)).toEqual(["one"]);
  });

  test("actions_replace: true without actions leaves none; teardown in an override replaces", async () => {
    const dir = pack({
      ".grex/pack.yaml": base,
      ".grex/targets/windows.yaml": "actions_replace: true\nteardown: []\ntype: scripted\n",
    });
    const m = await loadPackYaml(dir, { os: "windows" });
    expect(m?.actions).toEqual([]);
    expect(m?.teardown).toEqual([]);
    expect(m?.type).toBe("scripted");
  });

  test("only the override of the requested OS applies; the default is this machine's OS", async () => {
    const files = {
      ".grex/pack.yaml": base,
      ".grex/targets/linux.yaml": 'version: "linux"\n',
      ".grex/targets/macos.yaml": 'version: "macos"\n',
      ".grex/targets/windows.yaml": 'version: "windows"\n',
    };
    const dir = pack(files);
    expect((await loadPackYaml(dir, { os: "macos" }))?.version).toBe("macos");
    expect((await loadPackYaml(dir))?.version).toBe(currentOs());
    const onlyLinux = pack({ ".grex/pack.yaml": base, ".grex/targets/linux.yaml": 'version: "linux"\n' });
    expect((await loadPackYaml(onlyLinux, { os: "windows" }))?.version).toBe("1");
  });

  test("an empty override changes nothing", async () => {
    const plain = await loadPackYaml(pack({ ".grex/pack.yaml": base }), { os: "linux" });
    const withEmpty = await loadPackYaml(pack({ ".grex/pack.yaml": base, ".grex/targets/linux.yaml": "# nothing yet\n" }), { os: "linux" });
    expect(withEmpty).toEqual(plain);
  });

  test("an invalid base is reported against pack.yaml even when an override exists", async () => {
    const dir = pack({ ".grex/pack.yaml": 'schema_version: "1"\ntype: meta\n', ".grex/targets/linux.yaml": "name: demo\n" });
    const err = await failure(loadPackYaml(dir, { os: "linux" }));
    expect(err.message).toStartWith(`${join(dir, ".grex/pack.yaml")}: name is missing`);
  });
});

describe("duplicate symlink dst (plan-phase check)", () => {
  async function check(actions: string): Promise<GrexError | null> {
    const file = "/x/.grex/pack.yaml";
    const m = await loadPackYaml(pack({ ".grex/pack.yaml": `${HEAD}actions:\n${actions}` }));
    if (!m) throw new Error("no manifest");
    try {
      checkDuplicateSymlinkDst(m, file);
      return null;
    } catch (err) {
      expect(err).toBeInstanceOf(GrexError);
      return err as GrexError;
    }
  }

  test("same dst after normalisation is an integrity error naming both actions", async () => {
    const err = await check(
      "  - symlink: { src: files/a, dst: $HOME/.config/app/ }\n  - mkdir: { path: /tmp/x }\n  - symlink: { src: files/b, dst: $HOME/.config/./app }\n",
    );
    expect(err?.kind).toBe("integrity");
    expect(err?.exitCode).toBe(3);
    expect(err?.message).toBe(
      "/x/.grex/pack.yaml: actions[2].symlink.dst '$HOME/.config/./app' is the same target as actions[0].symlink.dst ('$HOME/.config/app/' names the same path); give each symlink its own dst or remove one of them.",
    );
  });

  test("different dst strings pass when no expansion is given (the sync engine gives one: see day-to-day.test.ts)", async () => {
    expect(await check("  - symlink: { src: a, dst: $HOME/x }\n  - symlink: { src: b, dst: '${HOME}/x' }\n  - symlink: { src: c, dst: $HOME/y }\n")).toBeNull();
  });

  test("a symlink inside a when block clashes with a top-level one", async () => {
    const err = await check("  - symlink: { src: a, dst: /t/x }\n  - when:\n      os: linux\n      actions:\n        - symlink: { src: b, dst: /t//x }\n");
    expect(err?.message).toContain("actions[1].when.actions[0].symlink.dst '/t//x' is the same target as actions[0].symlink.dst");
  });

  test("symlinks in two different when blocks may share a dst (their conditions can exclude each other)", async () => {
    const whenBlock = (os: string, src: string) => `  - when:\n      os: ${os}\n      actions:\n        - symlink: { src: ${src}, dst: /t/x }\n`;
    expect(await check(whenBlock("linux", "a") + whenBlock("macos", "b"))).toBeNull();
  });

  test("two symlinks in the same when block clash", async () => {
    const err = await check("  - when:\n      os: linux\n      actions:\n        - symlink: { src: a, dst: /t/x }\n        - symlink: { src: b, dst: /t/x }\n");
    expect(err?.message).toContain("actions[0].when.actions[1].symlink.dst");
  });

  test("actions and teardown are checked separately", async () => {
    const m = await loadPackYaml(
      pack({ ".grex/pack.yaml": `${HEAD}actions:\n  - symlink: { src: a, dst: /t/x }\nteardown:\n  - symlink: { src: b, dst: /t/x }\n` }),
    );
    expect(() => checkDuplicateSymlinkDst(m as PackManifest, "f")).not.toThrow();
  });
});
