// git is the reference for which paths a checkout may write: every name here
// is put to `git update-index --add --cacheinfo` (git's verify_path) with
// core.protectNTFS and core.protectHFS on, and grex's rule must agree, except
// for the few names grex refuses on purpose where git on Linux accepts them
// (listed, with the reason, in docs/cli.md).
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { pathProblem } from "../../src/core/git/objects/path-verify.ts";
import { emptyRepo } from "../helpers/crafted-tree.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-paths-");
afterAll(() => t.cleanup());

const FILES = [
  "README",
  ".git",
  ".GIT",
  ".Git/config",
  "x/.git/hooks/post-checkout",
  "git~1",
  "GIT~1/hooks/post-checkout",
  "git~2",
  "git~1x",
  ".git.",
  ".git ",
  ".git . .",
  ".git. /config",
  ".git::$INDEX_ALLOCATION",
  ".git::$INDEX_ALLOCATION/config",
  ".git:stream",
  ".gitx",
  ".gitignore",
  ".gitmodules",
  ".g\u200cit",
  ".\u200dgit/config",
  ".git\ufeff",
  ".gi\u200ft/hooks",
  "\u200c.git",
  "a\\.git",
  "a\\git~1",
  "a\\b",
  "..",
  ".",
  "a/../b",
  "a/./b",
  "dir/file",
  "\u00e9t\u00e9",
];
const LINKS = [".gitmodules", ".GITMODULES", ".gitmodules ", "gitmod~1", "GI7EBA~1", "gi7eba~9", ".gitmodules:x", "x/.gitmodules", "gitmodules", ".gitmodulesx"];
// grex refuses these on every platform where git on Linux accepts them: a drive prefix, and a backslash that
// makes `..` or an empty component on Windows.
const STRICTER = new Set(["C:x", "a\\..", "a\\"]);

function gitAccepts(repo: string, mode: string, path: string): boolean {
  const blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
  const r = Bun.spawnSync(["git", "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true", "update-index", "--add", "--cacheinfo", `${mode},${blob},${path}`], { cwd: repo, stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0;
}

test("grex's path rule agrees with git's verify_path (protectNTFS + protectHFS) on files and links", () => {
  const repo = emptyRepo(join(t.upstream, "ref.git"));
  const disagree: string[] = [];
  for (const [mode, names] of [["100644", FILES], ["120000", LINKS]] as const) {
    for (const path of names) {
      const ours = pathProblem(path.split("/"), mode) === null;
      if (ours !== gitAccepts(repo, mode, path)) disagree.push(`${mode} ${JSON.stringify(path)}: grex ${ours ? "accepts" : "refuses"}`);
    }
  }
  expect(disagree).toEqual([]);
});

test("the names grex refuses beyond git's rule on Linux", () => {
  const repo = emptyRepo(join(t.upstream, "stricter.git"));
  for (const path of STRICTER) {
    expect(pathProblem(path.split("/"), "100644")).not.toBeNull();
    expect(gitAccepts(repo, "100644", path)).toBe(true);
  }
});

test("modes: only git's canonical ones", () => {
  for (const mode of ["100644", "100755", "120000", "040000", "160000"]) expect(pathProblem(["x"], mode)).toBeNull();
  for (const mode of ["100664", "1000000000000000755", "100000", "0100644", "20000", "755"]) expect(pathProblem(["x"], mode)).not.toBeNull();
});
