// Issue 34's door: a URL (from a meta pack's pack.yaml, a teammate's
// grex.jsonl, a .gitmodules) holding newlines used to be written into a
// pack's .git/config unescaped, adding `[filter "x"] smudge = <cmd>` or
// `core.fsmonitor` that the user's next plain `git status` ran. Every writer
// grex has — a new repository's config (remote url and fetch refspec, core
// settings), branch tracking, submodule entries, submodule.recurse — goes
// through the config manager; here each writes hostile values and
// `git config --list` must show exactly what grex meant, nothing more.
import { afterAll, afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { initWithOrigin } from "../../src/core/git/init.ts";
import { originUrlSync, readGitdirConfigValue, setTrackingSync } from "../../src/core/git/refs/config.ts";
import { recordRecurse, recordSubmoduleInConfig } from "../../src/core/git/submodules.ts";
import { gitEnv, tempDir } from "../helpers/git-fixtures.ts";

let tmp: { path: string; cleanup: () => void };
beforeEach(() => {
  tmp = tempDir("grex-config-writers-");
});
afterEach(() => tmp.cleanup());

function git(cwd: string, ...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync(["git", ...args], { cwd, env: gitEnv(), stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode ?? -1, out: p.stdout.toString(), err: p.stderr.toString() };
}

function gitList(cwd: string): Array<[string, string]> {
  const r = git(cwd, "config", "--local", "-z", "--list");
  expect(r.code).toBe(0);
  return r.out
    .split("\0")
    .filter((x) => x !== "")
    .map((item) => {
      const nl = item.indexOf("\n");
      return [item.slice(0, nl), item.slice(nl + 1)];
    });
}

// Where an injected command would leave its mark (outside each test's own directory, made before the table).
const markDir = tempDir("grex-config-writers-mark-");
afterAll(() => markDir.cleanup());
const marker = () => join(markDir.path, "PWNED");

/** URLs an attacker would write, each trying to add a section or a key git runs. */
const hostileUrls = () => [
  `https://example.com/a.git\n[filter "x"]\n\tsmudge = touch ${marker()}\n\tclean = touch ${marker()}`,
  `https://example.com/b.git\n[core]\n\tfsmonitor = touch ${marker()}\n\thooksPath = /tmp`,
  `https://example.com/c.git"\n\tsshCommand = touch ${marker()}\n[include]\n\tpath = /etc/passwd`,
  "https://example.com/d.git\r\n[core]\r\n\teditor = evil",
  "https://example.com/e.git\\\n\tfsmonitor = x",
  "https://example.com/f.git ; [core] fsmonitor = x",
  "https://example.com/g.git # \n[core]fsmonitor=x",
  ' "https://example.com/h.git" ',
  "https://example.com/i.git\t\n\t[filter \"y\"] smudge = x",
];

test.each(hostileUrls().map((u, i) => [i, u]))("hostile URL %d: git reads back exactly what grex meant, and nothing runs", (_, url) => {
  const dir = join(tmp.path, "pack");
  mkdirSync(dir);
  const gitdir = initWithOrigin(dir, url as string);
  setTrackingSync(gitdir, 'we"ird\\branch', "origin");
  setTrackingSync(gitdir, "main", "origin");
  recordSubmoduleInConfig(gitdir, 'sub "one"\\x', url as string);
  recordSubmoduleInConfig(gitdir, "plain", "https://example.com/plain.git");
  recordRecurse(dir);
  const intended: Array<[string, string]> = [
    ["core.repositoryformatversion", "0"],
    ["core.filemode", "true"],
    ["core.bare", "false"],
    ["core.logallrefupdates", "true"],
    ["remote.origin.url", url as string],
    ["remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
    ['branch.we"ird\\branch.remote', "origin"],
    ['branch.we"ird\\branch.merge', 'refs/heads/we"ird\\branch'],
    ["branch.main.remote", "origin"],
    ["branch.main.merge", "refs/heads/main"],
    ['submodule.sub "one"\\x.active', "true"],
    ['submodule.sub "one"\\x.url', url as string],
    ["submodule.plain.active", "true"],
    ["submodule.plain.url", "https://example.com/plain.git"],
    ["submodule.recurse", "true"],
  ];
  expect(gitList(dir)).toEqual(intended);
  for (const [name] of gitList(dir)) {
    expect(name.startsWith("filter.") || name.startsWith("include") || ["core.fsmonitor", "core.hookspath", "core.sshcommand", "core.editor"].includes(name)).toBe(false);
  }
  // grex reads the same back, and a second round of writes changes nothing
  expect(originUrlSync(dir)).toBe(url as string);
  expect(readGitdirConfigValue(gitdir, "submodule", 'sub "one"\\x', "url")).toBe(url as string);
  setTrackingSync(gitdir, 'we"ird\\branch', "origin");
  recordSubmoduleInConfig(gitdir, 'sub "one"\\x', url as string);
  recordRecurse(dir);
  expect(gitList(dir)).toEqual(intended);
  // the user's next plain git commands run nothing injected
  Bun.write(join(dir, "f.txt"), "x\n");
  expect(git(dir, "status", "--porcelain").code).toBe(0);
  expect(git(dir, "add", "f.txt").code).toBe(0);
  expect(existsSync(marker())).toBe(false);
});
