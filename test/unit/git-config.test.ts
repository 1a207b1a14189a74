// The config manager against git itself: what grex writes, `git config`
// reads back exactly; what git writes (or a person types), grex reads as git
// does; and the round trip grex → git → grex. Every value kind git's
// write_pair treats specially is covered, and the subsections it quotes.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type Dirent, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfigText } from "../../src/core/git/refs/config-parse.ts";
import {
  LayeredConfig,
  configBool,
  envBool,
  escapeConfigValue,
  expandConfigPath,
  readGitdirConfigValue,
  repoConfigPath,
  setRepoConfig,
  setTrackingSync,
  userConfigFiles,
  writeNewRepoConfig,
} from "../../src/core/git/refs/config.ts";
import { GrexError } from "../../src/core/base/grex-error.ts";
import { gitEnv, tempDir } from "../helpers/git-fixtures.ts";
import { prng } from "../helpers/prng.ts";

let tmp: { path: string; cleanup: () => void };
let repo: string;
let gitdir: string;
beforeEach(() => {
  tmp = tempDir("grex-git-config-");
  repo = join(tmp.path, "r");
  mkdirSync(repo);
  run(repo, "init", "-q");
  gitdir = join(repo, ".git");
});
afterEach(() => tmp.cleanup());

function run(cwd: string, ...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync(["git", ...args], { cwd, env: gitEnv(), stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode ?? -1, out: p.stdout.toString(), err: p.stderr.toString() };
}

/** `git config -z --list` of one file as [name, value | null] pairs (null: a bare key). */
function gitList(file: string): Array<[string, string | null]> | "bad" {
  const r = run(tmp.path, "config", "-f", file, "-z", "--list");
  if (r.code !== 0) return "bad";
  return r.out
    .split("\0")
    .filter((x) => x !== "")
    .map((item) => {
      const nl = item.indexOf("\n");
      return nl < 0 ? [item, null] : [item.slice(0, nl), item.slice(nl + 1)];
    });
}

/** grex's parse of the same file, in the same shape. */
function grexList(file: string): Array<[string, string | null]> | "bad" {
  const parsed = parseConfigText(readFileSync(file, "latin1"));
  if (parsed.badLine !== null) return "bad";
  // git names a key before any section by the key alone
  return parsed.entries.map((e) => [e.section === "" && e.sub === null ? e.key : `${e.section}.${e.sub === null ? "" : `${e.sub}.`}${e.key}`, e.value]);
}

/** git 2.46 and later keep unquoted whitespace inside a value verbatim. */
function gitIsModern(): boolean {
  const [major, minor] = (/(\d+)\.(\d+)/.exec(run(tmp.path, "--version").out) ?? []).slice(1).map(Number);
  return (major ?? 0) > 2 || ((major ?? 0) === 2 && (minor ?? 0) >= 46);
}

/** Every value kind write_pair escapes or quotes. */
const VALUES: Array<[string, string]> = [
  ["plain", "https://example.com/a.git"],
  ["empty", ""],
  ["double quote", 'say "hi"'],
  ["backslash", "C:\\path\\x"],
  ["tab", "a\tb"],
  ["newline", "one\ntwo"],
  ["leading space", "  lead"],
  ["trailing space", "trail  "],
  ["only spaces", "   "],
  ["semicolon", "a;b"],
  ["hash", "a#b"],
  ["carriage return", "a\rb"],
  ["trailing carriage return", "a\r"],
  ["backspace", "a\bb"],
  ["every kind", ' x;#"\\\t\n\r y '],
  ["utf-8", "naïve ☃"],
  ["brackets", "[core]"],
  ["equals", "a = b"],
];

/** Subsections with what store_create_section escapes. */
const SUBS: string[] = ['a"b', "a\\b", 'q"\\"', "with space", "dots.in.it", "ÜTF", "x]y", "tab\there", "#;"];

describe("grex writes, git reads, grex reads", () => {
  test.each(VALUES)("value: %s", (_, value) => {
    setRepoConfig(gitdir, [{ section: "test", sub: null, key: "value", value }]);
    const r = run(repo, "config", "-z", "--get", "test.value");
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${value}\0`);
    expect(readGitdirConfigValue(gitdir, "test", null, "value")).toBe(value);
    expect(gitList(repoConfigPath(gitdir))).toEqual(grexList(repoConfigPath(gitdir)));
  });

  test.each(SUBS)("subsection: %s", (sub) => {
    setRepoConfig(gitdir, [{ section: "branch", sub, key: "remote", value: "origin" }]);
    const r = run(repo, "config", "-z", "--get", `branch.${sub}.remote`);
    expect(r.code).toBe(0);
    expect(r.out).toBe("origin\0");
    expect(readGitdirConfigValue(gitdir, "branch", sub, "remote")).toBe("origin");
  });

  test("a second set replaces the value git reads; if-absent leaves it", () => {
    setRepoConfig(gitdir, [{ section: "remote", sub: "origin", key: "url", value: "one" }]);
    setRepoConfig(gitdir, [{ section: "remote", sub: "origin", key: "url", value: "two\nthree" }]);
    expect(run(repo, "config", "-z", "--get-all", "remote.origin.url").out).toBe("two\nthree\0");
    expect(setRepoConfig(gitdir, [{ section: "remote", sub: "origin", key: "url", value: "four" }], "if-absent")).toBe(false);
    expect(readGitdirConfigValue(gitdir, "remote", "origin", "url")).toBe("two\nthree");
  });

  test("a new key joins the existing section; git's own entries are kept", () => {
    run(repo, "config", "remote.origin.url", "https://x/y");
    setRepoConfig(gitdir, [{ section: "remote", sub: "origin", key: "fetch", value: "+refs/heads/*:refs/remotes/origin/*" }]);
    const text = readFileSync(repoConfigPath(gitdir), "utf8");
    expect(text.match(/\[remote "origin"\]/g)?.length).toBe(1);
    expect(run(repo, "config", "--get", "remote.origin.url").out.trim()).toBe("https://x/y");
    expect(run(repo, "config", "--get", "core.bare").out.trim()).toBe("false");
  });

  test('[branch "a\\"b"] is recognised again: setTracking writes it once (the re-append bug)', () => {
    for (let i = 0; i < 3; i++) setTrackingSync(gitdir, 'a"b', "origin");
    expect(run(repo, "config", "-z", "--get-all", 'branch.a"b.remote').out).toBe("origin\0");
    expect(run(repo, "config", "-z", "--get-all", 'branch.a"b.merge').out).toBe('refs/heads/a"b\0');
    expect(readFileSync(repoConfigPath(gitdir), "utf8").split('[branch "a\\"b"]').length).toBe(2);
  });

  test("a whole new config file is what git init + remote add would leave", () => {
    writeNewRepoConfig(gitdir, [
      { section: "core", sub: null, key: "bare", value: "false" },
      { section: "remote", sub: "origin", key: "url", value: "https://h/p;x" },
      { section: "remote", sub: "origin", key: "fetch", value: "+refs/heads/*:refs/remotes/origin/*" },
    ]);
    expect(gitList(repoConfigPath(gitdir))).toEqual([
      ["core.bare", "false"],
      ["remote.origin.url", "https://h/p;x"],
      ["remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
    ]);
    expect(run(repo, "status", "--porcelain").code).toBe(0);
  });
});

test("a file read again is parsed again when its text changed (the parse is reused only for the same text)", () => {
  const path = repoConfigPath(gitdir);
  writeFileSync(path, "[t]\n\tv = one\n");
  expect(readGitdirConfigValue(gitdir, "t", null, "v")).toBe("one");
  writeFileSync(path, "[t]\n\tv = two\n"); // same size, same second
  expect(readGitdirConfigValue(gitdir, "t", null, "v")).toBe("two");
  run(repo, "config", "t.v", "three");
  expect(readGitdirConfigValue(gitdir, "t", null, "v")).toBe("three");
});

describe("git writes, grex reads", () => {
  test.each(VALUES)("value: %s", (_, value) => {
    expect(run(repo, "config", "test.value", value).code).toBe(0);
    expect(readGitdirConfigValue(gitdir, "test", null, "value")).toBe(value);
  });

  test.each(SUBS)("subsection: %s", (sub) => {
    expect(run(repo, "config", `submodule.${sub}.url`, "https://x/y").code).toBe(0);
    expect(readGitdirConfigValue(gitdir, "submodule", sub, "url")).toBe("https://x/y");
    // and grex adding to git's section finds it, instead of writing a second one
    setRepoConfig(gitdir, [{ section: "submodule", sub, key: "active", value: "true" }]);
    expect(gitList(repoConfigPath(gitdir))).toEqual(grexList(repoConfigPath(gitdir)));
    const text = readFileSync(repoConfigPath(gitdir), "latin1");
    expect(parseConfigText(text).sections.filter((s) => s.sub === sub).length).toBe(1);
  });
});

describe("the parser reads what git reads (git config -f <file> --list)", () => {
  const TEXTS: Array<[string, string]> = [
    ["comments and blank lines", "# c\n; c\n\n[core]\n\t# inside\n\tbare = false ; trailing\n\tx = \"a ; b\" # c\n"],
    ["case", "[CoRe]\n\tBaRe = TRUE\n[Remote \"Origin\"]\n\tURL = u\n"],
    ["old subsection spelling", "[branch.Main]\n\tremote = origin\n"],
    ["continued lines", "[a]\n\tb = one \\\n two\n\tc = \"x\\\ny\"\n"],
    ["bare key and empty value", "[a]\n\tbare\n\tempty =\n\tspaces =   \n"],
    ["key on the header's line", "[core] bare = true\n[x]y=z\n"],
    ["CRLF", "[core]\r\n\tbare = false\r\n\tv = a b \r\n"],
    ["quotes joined", "[a]\n\tb = x\" y \"z\n"],
    ["escapes", "[a]\n\tb = \\t\\n\\b\\\\\\\"\n"],
    ["subsection escapes", "[a \"x\\\"y\\\\z\\q\"]\n\tk = v\n"],
    ["spaces before the subsection", "[a   \"s\"]\n\tk = v\n"],
    ["BOM", "\ufeff[a]\n\tk = v\n"],
    ["no final newline", "[a]\n\tk = v"],
    ["no final newline, bare key", "[a]\n\tk"],
    ["backslash at the end", "[a]\n\tk = v\\"],
    ["dashes and digits", "[a-1]\n\tk-2 = v\n"],
    ["tabs around =", "[a]\n\tk\t=\tv\t\n"],
    ["bad: unknown escape", "[a]\n\tk = \\q\n"],
    ["bad: open quote", "[a]\n\tk = \"x\n"],
    ["key before any section", "k = v\n[a]\n\tb = c\n"],
    ["bad: header without ]", "[a\n\tk = v\n"],
    ["bad: subsection not closed", "[a \"x]\n"],
    ["bad: junk after a key", "[a]\n\tk v\n"],
    ["bad: key starting with a digit", "[a]\n\t1k = v\n"],
    ["bad: text after the subsection", "[a \"x\" y]\n"],
  ];
  test.each(TEXTS)("%s", (_, text) => {
    const file = join(tmp.path, "cfg");
    writeFileSync(file, text);
    expect(grexList(file)).toEqual(gitList(file));
  });

  test("unquoted whitespace inside a value is kept verbatim (git 2.46+; older gits made it a space)", () => {
    const file = join(tmp.path, "cfg");
    writeFileSync(file, "[core]\n\tv = a\rb\n\tt = a\tb\n\tw = trailing\r \n");
    const modern: Array<[string, string]> = [
      ["core.v", "a\rb"],
      ["core.t", "a\tb"],
      ["core.w", "trailing"],
    ];
    expect(grexList(file)).toEqual(modern);
    const older: Array<[string, string]> = [["core.v", "a b"], ["core.t", "a b"], ["core.w", "trailing"]];
    expect(gitList(file)).toEqual(gitIsModern() ? modern : older);
  });
});

describe("random config texts (seeded)", () => {
  const TOKENS = ["[a]", "[Sec]", '[b "x\\"y"]', '[c "p q"]', "[d.E]", "[", "]", "\tk = v", "key=", "bare", "Key2 = a b", " ; c", "# c", '"q;#"', "\\\n", "\\t", "\\q", "\r\n", "\n", "\n", "\n", " ", "\t", "=", "x", "\r", "\xc3\xa9"];
  const text = (rnd: () => number) => {
    let t = "";
    const n = 1 + Math.floor(rnd() * 30);
    for (let i = 0; i < n; i++) t += TOKENS[Math.floor(rnd() * TOKENS.length)];
    return t;
  };
  test("the line-at-once reader and the character reader agree on 3,000 texts", () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const t = text(prng(seed));
      const fast = parseConfigText(t);
      const careful = parseConfigText(t, true);
      if (JSON.stringify(fast) !== JSON.stringify(careful)) expect({ seed, t, fast }).toEqual({ seed, t, fast: careful });
    }
  });
  // Mostly well-formed: a header, then lines of entries whose values mix every piece git treats specially.
  const PIECES = ["v", "a b", '"q ; # "', "\\t", "\\n", "\\\\", '\\"', " ", "  ", ";c", "#c", "\\\n", "\xc3\xa9", "x=y", "[z]"];
  const HEADS = ["[a]", "[Sec]", '[b "x\\"y"]', '[c "p q"]', "[d.E]", '[e  "s"] k = v', "[a-1]"];
  const shaped = (rnd: () => number) => {
    const pick = <T,>(xs: T[]) => xs[Math.floor(rnd() * xs.length)] as T;
    let t = pick(HEADS);
    const lines = 1 + Math.floor(rnd() * 8);
    for (let l = 0; l < lines; l++) {
      t += rnd() < 0.2 ? "\r\n" : "\n";
      const r = rnd();
      if (r < 0.1) t += pick(HEADS);
      else if (r < 0.2) t += pick(["", "# c", " ; c", "\t"]);
      else {
        t += `${pick(["", "\t", "  "])}${pick(["k", "Key2", "a-b"])}${pick(["", " ", "\t"])}`;
        if (rnd() < 0.9) {
          t += `=${pick(["", " "])}`;
          const n = Math.floor(rnd() * 4);
          for (let i = 0; i < n; i++) t += pick(PIECES);
        }
      }
    }
    return rnd() < 0.5 ? `${t}\n` : t;
  };
  test("and git reads 80 of them as grex does", () => {
    for (let seed = 1; seed <= 80; seed++) {
      const file = join(tmp.path, `cfg${seed}`);
      const t = seed % 4 === 0 ? text(prng(seed * 7919)) : shaped(prng(seed * 7919));
      writeFileSync(file, Buffer.from(t, "latin1"));
      const theirs = gitList(file);
      // where git's older whitespace rule and the newer one differ, only git 2.46+ is compared
      // (the shaped texts hold a tab only where both rules agree: indentation and around `=`)
      if (seed % 4 === 0 && theirs !== "bad" && /[\t\r]/.test(t) && !gitIsModern()) continue;
      expect({ seed, t, list: grexList(file) }).toEqual({ seed, t, list: theirs });
    }
  });
});

describe("writing refuses what git refuses", () => {
  const refused = (sets: Parameters<typeof setRepoConfig>[1]) => {
    const before = readFileSync(repoConfigPath(gitdir), "utf8");
    let err: unknown;
    try {
      setRepoConfig(gitdir, sets);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).message.split(". ").length).toBe(1);
    expect(readFileSync(repoConfigPath(gitdir), "utf8")).toBe(before);
    expect(existsSync(`${repoConfigPath(gitdir)}.lock`)).toBe(false);
  };
  test("a newline in a subsection", () => refused([{ section: "branch", sub: "a\n[core]", key: "remote", value: "o" }]));
  test("a key that is not a key", () => refused([{ section: "core", sub: null, key: "x\nfsmonitor", value: "o" }]));
  test("a section that is not a section", () => refused([{ section: 'filter "x', sub: null, key: "smudge", value: "o" }]));
  test("a NUL in a value", () => refused([{ section: "a", sub: null, key: "b", value: "x\0y" }]));
  test("a file git cannot read is not edited", () => {
    writeFileSync(repoConfigPath(gitdir), "[core]\n\tbare = \"open\n");
    refused([{ section: "a", sub: null, key: "b", value: "c" }]);
  });
});

describe("config.lock", () => {
  test("a lock git holds is never overwritten: the write waits briefly, then says so in one sentence", () => {
    const path = repoConfigPath(gitdir);
    writeFileSync(`${path}.lock`, "[held]\n\tby = git\n");
    let err: unknown;
    try {
      setRepoConfig(gitdir, [{ section: "a", sub: null, key: "b", value: "c" }]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).kind).toBe("lock");
    expect((err as GrexError).message).toContain(`${path}.lock`);
    expect(readFileSync(`${path}.lock`, "utf8")).toBe("[held]\n\tby = git\n");
    expect(readGitdirConfigValue(gitdir, "a", null, "b")).toBeNull();
    // and git refuses in the same situation
    expect(run(repo, "config", "a.b", "c").code).not.toBe(0);
  });

  test("the file keeps its mode, and no lock or temp file is left", () => {
    const path = repoConfigPath(gitdir);
    Bun.spawnSync(["chmod", "600", path]);
    setRepoConfig(gitdir, [{ section: "a", sub: null, key: "b", value: "c" }]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  test("a linked worktree's config is the common one", () => {
    run(repo, "commit", "-q", "--allow-empty", "-m", "x");
    const wt = join(tmp.path, "wt");
    expect(run(repo, "worktree", "add", "-q", wt).code).toBe(0);
    const wtGitdir = join(gitdir, "worktrees", "wt");
    setRepoConfig(wtGitdir, [{ section: "a", sub: null, key: "b", value: "from the worktree" }]);
    expect(run(repo, "config", "--get", "a.b").out.trim()).toBe("from the worktree");
    expect(readGitdirConfigValue(wtGitdir, "a", null, "b")).toBe("from the worktree");
  });
});

describe("escapeConfigValue is write_pair", () => {
  test.each(VALUES)("%s: byte for byte what git config writes", (_, value) => {
    run(repo, "config", "test.value", value);
    const text = readFileSync(repoConfigPath(gitdir), "utf8");
    const line = text.slice(text.indexOf("[test]\n") + "[test]\n".length);
    expect(line).toBe(`\tvalue = ${escapeConfigValue(value)}\n`);
  });
});

describe("which files git reads", () => {
  const env = (over: Record<string, string | undefined>) => ({ HOME: "/h", ...over }) as NodeJS.ProcessEnv;
  test.each<[string, Record<string, string | undefined>, string[]]>([
    ["defaults", {}, ["/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"]],
    ["XDG_CONFIG_HOME", { XDG_CONFIG_HOME: "/x" }, ["/etc/gitconfig", "/x/git/config", "/h/.gitconfig"]],
    ["empty XDG_CONFIG_HOME is unset", { XDG_CONFIG_HOME: "" }, ["/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"]],
    ["GIT_CONFIG_GLOBAL replaces both", { GIT_CONFIG_GLOBAL: "/g" }, ["/etc/gitconfig", "/g"]],
    ["empty GIT_CONFIG_GLOBAL: no global config at all", { GIT_CONFIG_GLOBAL: "" }, ["/etc/gitconfig"]],
    ["GIT_CONFIG_NOSYSTEM=1", { GIT_CONFIG_NOSYSTEM: "1" }, ["/h/.config/git/config", "/h/.gitconfig"]],
    ["GIT_CONFIG_NOSYSTEM=false reads it", { GIT_CONFIG_NOSYSTEM: "false" }, ["/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"]],
    ["GIT_CONFIG_NOSYSTEM empty reads it", { GIT_CONFIG_NOSYSTEM: "" }, ["/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"]],
    ["GIT_CONFIG_SYSTEM", { GIT_CONFIG_SYSTEM: "/s" }, ["/s", "/h/.config/git/config", "/h/.gitconfig"]],
    ["no HOME", { HOME: undefined }, ["/etc/gitconfig"]],
  ])("%s", (_, over, files) => {
    expect(userConfigFiles(env(over)).map((f) => f.path)).toEqual(files);
  });

  test("the layers against git: system < global < local < GIT_CONFIG_COUNT", () => {
    const home = join(tmp.path, "home");
    mkdirSync(join(home, ".config", "git"), { recursive: true });
    const sys = join(tmp.path, "sys");
    writeFileSync(sys, "[t]\n\ta = system\n\tb = system\n\tc = system\n\td = system\n\te = system\n");
    writeFileSync(join(home, ".config", "git", "config"), "[t]\n\tb = xdg\n\tc = xdg\n\td = xdg\n\te = xdg\n");
    writeFileSync(join(home, ".gitconfig"), "[t]\n\tc = global\n\td = global\n\te = global\n");
    writeFileSync(repoConfigPath(gitdir), `${readFileSync(repoConfigPath(gitdir), "utf8")}[t]\n\td = local\n\te = local\n`);
    const e: Record<string, string> = { ...gitEnv(), HOME: home, GIT_CONFIG_SYSTEM: sys, GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "t.e", GIT_CONFIG_VALUE_0: "env" };
    delete e.XDG_CONFIG_HOME;
    delete e.GIT_CONFIG_NOSYSTEM;
    const cfg = LayeredConfig.load(gitdir, e);
    for (const k of ["a", "b", "c", "d", "e"]) {
      const p = Bun.spawnSync(["git", "config", "--get", `t.${k}`], { cwd: repo, env: e, stdout: "pipe" });
      expect(cfg.get("t", null, k)).toBe(p.stdout.toString().trim());
    }
    // GIT_CONFIG_GLOBAL="" drops both user files, as git does
    const noGlobal = { ...e, GIT_CONFIG_GLOBAL: "" };
    const p = Bun.spawnSync(["git", "config", "--get", "t.c"], { cwd: repo, env: noGlobal, stdout: "pipe" });
    expect(LayeredConfig.load(gitdir, noGlobal).get("t", null, "c")).toBe(p.stdout.toString().trim());
    expect(p.stdout.toString().trim()).toBe("system");
  });

  test("GIT_CONFIG_PARAMETERS as git -c hands it to a child, read as git reads it", () => {
    const alias = "alias.env=!printf '%s' \"$GIT_CONFIG_PARAMETERS\"";
    const cs = ["t.a=x y", "t.q=it's!", "t.flag", "T.Sub.Key=v=w", "t.e=", "t.a=second"];
    const p = Bun.spawnSync(["git", "-c", alias, ...cs.flatMap((c) => ["-c", c]), "env"], { cwd: repo, env: gitEnv(), stdout: "pipe" });
    const params = p.stdout.toString();
    expect(params).toContain("'t.q'=");
    const e = { ...gitEnv(), GIT_CONFIG_GLOBAL: "", GIT_CONFIG_PARAMETERS: params };
    const cfg = LayeredConfig.load(gitdir, e);
    for (const [sub, key] of [[null, "a"], [null, "q"], [null, "flag"], ["Sub", "key"], [null, "e"]] as const) {
      const name = sub === null ? `t.${key}` : `t.${sub}.${key}`;
      const g = Bun.spawnSync(["git", "config", "--get", name], { cwd: repo, env: e, stdout: "pipe" });
      expect(g.exitCode).toBe(0);
      const theirs = g.stdout.toString().replace(/\n$/, "");
      // a bare `-c t.flag` is git's implicit true, which `git config --get` prints as an empty line
      expect(key === "flag" ? "true" : theirs).toBe(cfg.get("t", sub, key) as string);
    }
    // the old spelling, and a list git refuses
    expect(LayeredConfig.load(null, { GIT_CONFIG_PARAMETERS: "'t.x=1' 't.y=2'" }).get("t", null, "y")).toBe("2");
    expect(LayeredConfig.load(null, { GIT_CONFIG_PARAMETERS: "'t.x'='1' bogus" }).get("t", null, "x")).toBeNull();
  });

  test("paths in config values: ~ and ~/ from HOME, ~user from the password file", () => {
    expect(expandConfigPath("~", { HOME: "/h" })).toBe("/h");
    expect(expandConfigPath("~/x/y", { HOME: "/h" })).toBe("/h/x/y");
    expect(expandConfigPath("~/x", {})).toBeNull();
    expect(expandConfigPath("/abs/~x", { HOME: "/h" })).toBe("/abs/~x");
    expect(expandConfigPath("~root/x", {})).toBe("/root/x");
    expect(expandConfigPath("~no-such-user-here/x", {})).toBeNull();
  });

  test("git's environment booleans (GIT_CONFIG_NOSYSTEM, GIT_ATTR_NOSYSTEM)", () => {
    expect(envBool(undefined, false)).toBe(false);
    for (const t of ["1", "true", "yes", "2"]) expect(envBool(t, false)).toBe(true);
    for (const f of ["0", "false", "", "off"]) expect(envBool(f, true)).toBe(false);
  });

  test("git's booleans", () => {
    for (const t of ["true", "YES", "on", "1", "2", "-1", "1k"]) expect(configBool(t)).toBe(true);
    for (const f of ["false", "No", "off", "0", ""]) expect(configBool(f)).toBe(false);
    expect(configBool("maybe")).toBeNull();
  });
});

describe("one owner", () => {
  const SRC = join(import.meta.dir, "..", "..", "src");
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e: Dirent) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []));
  const rel = (f: string) => f.slice(SRC.length + 1);

  test("only the config manager names a git config file, and nothing in the git rooms appends to one", () => {
    const offenders: string[] = [];
    for (const f of files(SRC)) {
      const text = readFileSync(f, "utf8");
      const r = rel(f);
      if (!r.startsWith("core/git/refs/config") && /join\([^)]*["'`]config(?:\.worktree)?["'`]\s*\)/.test(text)) offenders.push(`${r}: joins a config path`);
      if (r.startsWith("core/git/") && /appendFileSync|appendDurable/.test(text)) offenders.push(`${r}: appends to a file`);
    }
    expect(offenders).toEqual([]);
  });

  // One maker of git lock files (lockfile.ts `createLock`); git-lock.ts names `<path>.lock` for its waits,
  // local-transport names one in a message.
  // The layout room (core/git/layout/) owns git's lock files; besides it, only these.
  const LOCK_OWNERS = new Set(["core/git/transport/local-transport.ts"]);
  test("only the layout room makes a git `.lock` file (core/locks' own flock files aside)", () => {
    const offenders = files(SRC)
      .filter((f) => !rel(f).startsWith("core/locks/") && !rel(f).startsWith("core/git/layout/") && !LOCK_OWNERS.has(rel(f)))
      .filter((f) => /\}\.lock`|\+ "\.lock"/.test(readFileSync(f, "utf8")))
      .map(rel);
    expect(offenders).toEqual([]);
  });
});
