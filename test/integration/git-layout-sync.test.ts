// A pack whose `.git` is a file (`gitdir: <relative path>`, as `git clone
// --separate-git-dir` or `git submodule absorbgitdirs` leave it): sync finds
// its repository through the file, and writes the children's exclude block
// into that repository's `info/exclude` (where `git rev-parse --git-path
// info/exclude` says), never into a `<pack>/.git/info/exclude` that cannot
// exist. git then sees the pack clean.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-layout-sync-");
afterAll(() => t.cleanup());

describe("a parent pack whose .git is a file", () => {
  test("children's exclude block goes to the repository the file names; git status stays clean", async () => {
    t.repo("child-a");
    t.repo("child-b");
    const url = t.repo("meta-basic");
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", url)).code).toBe(0);
    const dir = join(t.ws, "meta-basic");

    // Move the repository out, leaving a .git file with a relative gitdir (and no exclude blocks yet).
    const separate = join(t.root, "separate", "meta-basic.git");
    mkdirSync(join(t.root, "separate"), { recursive: true });
    renameSync(join(dir, ".git"), separate);
    writeFileSync(join(dir, ".git"), "gitdir: ../../separate/meta-basic.git\n");
    rmSync(join(separate, "info", "exclude"), { force: true });
    const exclude = git(dir, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude");
    expect(exclude).toBe(join(separate, "info", "exclude"));
    expect(git(dir, "status", "--porcelain")).not.toBe(""); // the children show as untracked until excluded

    const r = await t.grex("sync", "--json");
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect((r.json.warnings as string[]) ?? []).toEqual([]);
    const text = readFileSync(exclude, "utf8");
    expect(text).toContain("/child-a/");
    expect(text).toContain("/second/");
    expect(statSync(join(dir, ".git")).isFile()).toBe(true); // never turned back into a directory
    expect(existsSync(join(dir, ".git", "info"))).toBe(false);
    expect(git(dir, "status", "--porcelain")).toBe("");
    const status = await t.grex("status", "--json");
    expect((status.json.packs as Array<{ drift: string }>).map((p) => p.drift)).toEqual(["clean", "clean", "clean"]);
  }, 120_000);
});
