// The system-git backend (used for ssh URLs). No SSH server is available in
// tests, so it is driven with file:// URLs, which the git program handles the
// same way apart from the connection.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CancelledError, GrexError } from "../../src/core/base/errors.ts";
import { transferBackendFor, readHeadSync, systemGitBackend as sys } from "../../src/core/git/backend.ts";
import { parseLsRemote } from "../../src/core/git/system-git.ts";
import { commit, git, headSha, makeRepo, tag, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
let work: string;
let url: string;

beforeEach(() => {
  tmp = tempDir("grex-git-system-");
  work = join(tmp.path, "up");
  makeRepo(work, { "a.txt": "1\n" });
  tag(work, "v1", "one");
  commit(work, { "a.txt": "2\n" }, "two");
  url = `file://${work}`;
});
afterEach(() => tmp.cleanup());

describe("system git backend", () => {
  test("ssh URLs pick it", () => {
    expect(transferBackendFor("ssh://git@example.com/x/y.git")).toBe(sys);
    expect(transferBackendFor("git@example.com:x/y.git")).toBe(sys);
  });

  test("clones the default branch and a tag", async () => {
    const d1 = join(tmp.path, "d1");
    expect(await sys.clone(url, d1, { ref: null, signal: never() })).toEqual({ sha: headSha(work), branch: "main" });
    expect(readHeadSync(d1)).toEqual({ sha: headSha(work), branch: "main" });
    const d2 = join(tmp.path, "d2");
    const h = await sys.clone(url, d2, { ref: "v1", signal: never() });
    expect(h).toEqual({ sha: git(work, "rev-parse", "v1^{commit}"), branch: null });
    expect(readFileSync(join(d2, "a.txt"), "utf8")).toBe("1\n");
    expect(await sys.remoteUrl(d2)).toBe(url);
  });

  test("update fast-forwards, is a no-op when nothing changed, and refuses diverged history", async () => {
    const d = join(tmp.path, "d");
    const first = await sys.clone(url, d, { ref: null, signal: never() });
    expect(await sys.update(d, url, { ref: null, signal: never() })).toEqual({ before: first, after: first });
    const next = commit(work, { "b.txt": "b\n" }, "three");
    tag(work, "v3");
    const r = await sys.update(d, url, { ref: null, signal: never() });
    expect(r.after).toEqual({ sha: next, branch: "main" });
    expect(readFileSync(join(d, "b.txt"), "utf8")).toBe("b\n");
    expect(git(d, "rev-parse", "v3")).toBe(next);
    expect(await sys.isDirty(d)).toBe(false);

    const mine = commit(d, { "a.txt": "mine\n" }, "mine");
    commit(work, { "a.txt": "theirs\n" }, "theirs");
    try {
      await sys.update(d, url, { ref: null, signal: never() });
      throw new Error("expected a diverged error");
    } catch (err) {
      expect(err).toBeInstanceOf(GrexError);
      expect((err as GrexError).message).toMatch(/diverged/);
    }
    expect(readHeadSync(d)).toEqual({ sha: mine, branch: "main" });
  });

  test("a failed or cancelled clone leaves no directory", async () => {
    const d = join(tmp.path, "ws", "d");
    await expect(sys.clone(`file://${tmp.path}/missing`, d, { ref: null, signal: never() })).rejects.toThrow(/git clone from .* failed/);
    expect(existsSync(join(tmp.path, "ws"))).toBe(false);
    const ac = new AbortController();
    ac.abort();
    await expect(sys.clone(url, d, { ref: null, signal: ac.signal })).rejects.toBeInstanceOf(CancelledError);
    expect(existsSync(join(tmp.path, "ws"))).toBe(false);
  });

  test("without git on PATH the error says ssh URLs need git", async () => {
    const saved = process.env.PATH;
    process.env.PATH = join(tmp.path, "empty-bin");
    try {
      await sys.clone("ssh://git@example.invalid/x.git", join(tmp.path, "d"), { ref: null, signal: never() });
      throw new Error("expected an error");
    } catch (err) {
      expect(err).toBeInstanceOf(GrexError);
      expect((err as GrexError).kind).toBe("pack_op");
      expect((err as GrexError).message).toMatch(/^ssh URLs like ssh:\/\/git@example\.invalid\/x\.git need git installed/);
    } finally {
      process.env.PATH = saved;
    }
    expect(existsSync(join(tmp.path, "d"))).toBe(false);
  });

  test("parseLsRemote reads branches, tags and HEAD's symref", () => {
    const r = parseLsRemote(
      [
        "ref: refs/heads/trunk\tHEAD",
        `${"a".repeat(40)}\tHEAD`,
        `${"a".repeat(40)}\trefs/heads/trunk`,
        `${"b".repeat(40)}\trefs/heads/dev`,
        `${"c".repeat(40)}\trefs/tags/v1`,
        `${"a".repeat(40)}\trefs/tags/v1^{}`,
        `${"d".repeat(40)}\trefs/pull/1/head`,
      ].join("\n"),
    );
    expect(r.defaultBranch).toBe("trunk");
    expect([...r.branches]).toEqual([
      ["trunk", "a".repeat(40)],
      ["dev", "b".repeat(40)],
    ]);
    expect([...r.tags]).toEqual([["v1", "c".repeat(40)]]);
  });
});
