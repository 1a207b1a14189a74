// Mirrors: grex's url.<base>.insteadOf / pushInsteadOf rewrite against git's
// own (`git ls-remote --get-url <url>` for the fetch URL, `git remote get-url
// --push` for the push URL), with the same user configuration: the global
// file(s), GIT_CONFIG_GLOBAL, GIT_CONFIG_COUNT pairs. git is the reference.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/grex-error.ts";
import { checkedFetchUrl, fetchUrlOf, rewritePushUrl, userUrlRewrites } from "../../src/core/git/transport/url-rewrite.ts";
import { gitEnv, tempDir } from "../helpers/git-fixtures.ts";
import { prng } from "../helpers/prng.ts";

let tmp: { path: string; cleanup: () => void };
let home: string;
let work: string;
beforeEach(() => {
  tmp = tempDir("grex-url-rewrite-");
  home = join(tmp.path, "home");
  work = join(tmp.path, "work"); // not a repository: git reads the user's config alone
  mkdirSync(home);
  mkdirSync(work);
});
afterEach(() => tmp.cleanup());

/** The user's environment for both git and grex: HOME here, no system file, plus `extra`. */
function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { ...gitEnv(), HOME: home, XDG_CONFIG_HOME: join(home, ".config"), GIT_CONFIG_NOSYSTEM: "1", ...extra };
}

function gitOut(cwd: string, env: Record<string, string>, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString().trim()}`);
  return p.stdout.toString().replace(/\n$/, "");
}

const gitFetchUrl = (url: string, env: Record<string, string>) => gitOut(work, env, "ls-remote", "--get-url", "--", url);

function gitPushUrl(url: string, env: Record<string, string>): string {
  const repo = join(tmp.path, "push-probe");
  mkdirSync(repo, { recursive: true });
  gitOut(repo, env, "init", "-q");
  gitOut(repo, env, "config", "remote.origin.url", url);
  return gitOut(repo, env, "remote", "get-url", "--push", "origin");
}

/** Both answers for every URL: grex's must be git's. */
function expectSame(urls: string[], env: Record<string, string>) {
  const rewrites = userUrlRewrites(env);
  for (const url of urls) {
    expect({ url, fetch: fetchUrlOf(url, env) }).toEqual({ url, fetch: gitFetchUrl(url, env) });
    expect({ url, push: rewritePushUrl(url, rewrites) }).toEqual({ url, push: gitPushUrl(url, env) });
  }
}

describe("url.<base>.insteadOf as git applies it", () => {
  test("a simple mirror; no match leaves the URL alone", () => {
    writeFileSync(join(home, ".gitconfig"), '[url "/srv/mirror/"]\n\tinsteadOf = https://github.com/\n');
    expectSame(["https://github.com/a/b.git", "https://gitlab.com/a/b.git", "https://github.co", "git@github.com:a/b.git"], userEnv());
  });

  test("the longest matching prefix wins, whichever base it belongs to", () => {
    writeFileSync(
      join(home, ".gitconfig"),
      [
        '[url "https://mirror-a.example/"]',
        "\tinsteadOf = https://github.com/",
        '[url "https://mirror-b.example/org/"]',
        "\tinsteadOf = https://github.com/org/",
        '[url "ssh://git@short.example/"]',
        "\tinsteadOf = https://",
      ].join("\n"),
    );
    expectSame(["https://github.com/org/x.git", "https://github.com/other/x.git", "https://example.org/x.git", "http://github.com/org/x"], userEnv());
  });

  test("several insteadOf values for one base; a rewrite is not applied to its own result", () => {
    writeFileSync(
      join(home, ".gitconfig"),
      [
        '[url "https://b.example/"]',
        "\tinsteadOf = https://a.example/",
        "\tinsteadOf = git@a.example:",
        '[url "https://c.example/"]',
        "\tinsteadOf = https://b.example/",
      ].join("\n"),
    );
    expectSame(["https://a.example/r.git", "git@a.example:r.git", "https://b.example/r.git"], userEnv());
  });

  test("a tie goes to the base configured first; subsections are case-sensitive", () => {
    writeFileSync(
      join(home, ".gitconfig"),
      [
        '[url "https://first.example/"]',
        "\tinsteadOf = https://x.example/",
        '[url "https://second.example/"]',
        "\tinsteadOf = https://x.example/",
        '[url "https://first.example/"]',
        "\tinsteadOf = https://y.example/",
        '[url "https://Case.example/"]',
        "\tinsteadOf = https://z.example/",
        '[url "https://case.example/"]',
        "\tinsteadOf = https://z.example/q",
      ].join("\n"),
    );
    expectSame(["https://x.example/r", "https://y.example/r", "https://z.example/r", "https://z.example/q/r"], userEnv());
  });

  test("pushInsteadOf changes only the push URL, and wins over insteadOf there", () => {
    writeFileSync(
      join(home, ".gitconfig"),
      [
        '[url "git@push.example:"]',
        "\tpushInsteadOf = https://push.example/",
        '[url "https://fetch-mirror.example/"]',
        "\tinsteadOf = https://push.example/",
        "\tinsteadOf = https://only-fetch.example/",
      ].join("\n"),
    );
    expectSame(["https://push.example/r.git", "https://only-fetch.example/r.git"], userEnv());
  });

  test("the XDG file, then ~/.gitconfig, then GIT_CONFIG_COUNT pairs; GIT_CONFIG_GLOBAL replaces both files", () => {
    mkdirSync(join(home, ".config", "git"), { recursive: true });
    writeFileSync(join(home, ".config", "git", "config"), '[url "https://xdg.example/"]\n\tinsteadOf = https://h.example/\n');
    writeFileSync(join(home, ".gitconfig"), '[url "https://home.example/"]\n\tinsteadOf = https://h.example/\n\tinsteadOf = https://h.example/long/\n');
    const urls = ["https://h.example/r", "https://h.example/long/r", "https://env.example/r"];
    expectSame(urls, userEnv());
    const counted = { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "url.https://from-env.example/.insteadOf", GIT_CONFIG_VALUE_0: "https://env.example/" };
    expectSame(urls, userEnv(counted));
    const global = join(tmp.path, "global.cfg");
    writeFileSync(global, '[url "/local/mirror/"]\n\tinsteadOf = https://h.example/long\n');
    expectSame(urls, userEnv({ GIT_CONFIG_GLOBAL: global }));
  });

  test("seeded: random prefixes and URLs over a small alphabet agree with git (30 URLs)", () => {
    const rand = prng(38);
    const pick = (s: string, n: number) => Array.from({ length: n }, () => s[Math.floor(rand() * s.length)]).join("");
    const lines: string[] = [];
    for (let b = 0; b < 5; b++) {
      lines.push(`[url "https://m${b}.example/${pick("ab", 1)}"]`);
      for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) lines.push(`\t${rand() < 0.3 ? "pushInsteadOf" : "insteadOf"} = h:${pick("ab/", 1 + Math.floor(rand() * 4))}`);
    }
    writeFileSync(join(home, ".gitconfig"), `${lines.join("\n")}\n`);
    const env = userEnv();
    const rewrites = userUrlRewrites(env);
    for (let i = 0; i < 30; i++) {
      const url = `h:${pick("ab/", 1 + Math.floor(rand() * 6))}`;
      expect({ url, fetch: fetchUrlOf(url, env) }).toEqual({ url, fetch: gitFetchUrl(url, env) });
      if (i % 3 === 0) expect({ url, push: rewritePushUrl(url, rewrites) }).toEqual({ url, push: gitPushUrl(url, env) });
    }
  });

  test("an empty insteadOf prefixes every URL; old-style [url.B] is lower-cased; [url] alone rewrites nothing", () => {
    writeFileSync(join(home, ".gitconfig"), '[url "https://e.example/"]\n\tinsteadOf =\n[url.B]\n\tinsteadOf = https://a/\n[url]\n\tinsteadOf = https://z/\n');
    expectSame(["https://a/x", "https://z/x", "ssh://q/x"], userEnv());
  });

  test("an insteadOf without a value stops git; grex refuses to fetch in one sentence", () => {
    writeFileSync(join(home, ".gitconfig"), '[url "https://b/"]\n\tinsteadOf\n');
    const p = Bun.spawnSync(["git", "ls-remote", "--get-url", "https://a/x"], { cwd: work, env: userEnv(), stdout: "pipe", stderr: "pipe" });
    expect(p.exitCode).not.toBe(0);
    expect(p.stderr.toString()).toContain("missing value");
    expect(() => checkedFetchUrl("https://a/x", userEnv())).toThrow(/url\.https:\/\/b\/\.insteadOf is set without a value/);
  });

  test("a rewrite to a URL with a control character or a leading '-' is refused in one sentence", () => {
    const env = { HOME: home, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_COUNT: "2", GIT_CONFIG_KEY_0: "url.-oProxyCommand=x .insteadOf", GIT_CONFIG_VALUE_0: "ssh://evil/", GIT_CONFIG_KEY_1: "url.https://a\tb/.insteadOf", GIT_CONFIG_VALUE_1: "https://tab/" };
    for (const url of ["ssh://evil/r", "https://tab/r"]) {
      let err: unknown;
      try {
        checkedFetchUrl(url, env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GrexError);
      expect((err as GrexError).kind).toBe("pack_op");
      expect((err as GrexError).message.split(". ").length).toBe(1);
    }
    expect(checkedFetchUrl("https://other/r", env)).toBe("https://other/r");
  });
});
