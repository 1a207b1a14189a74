// What `git worktree add` hands a new linked worktree from the worktree it is
// run in (git 2.36 and later): that worktree's sparse-checkout patterns when it
// is a sparse checkout, and its per-worktree config (`config.worktree`, read
// when the repository has `extensions.worktreeConfig`) minus `core.bare` and
// `core.worktree`, so the new worktree behaves as the one it came from. A task
// workspace's pack is made from the source pack's worktree, so a source that
// is a sparse checkout gives sparse task workspaces.
import * as fs from "node:fs";
import { dirname } from "node:path";
import { atomicWriteFile } from "../../fs/fsutil.ts";
import { gitPath } from "../layout/layout.ts";
import { configBool, gitdirConfigReader } from "../refs/config.ts";
import { parseConfigText } from "../refs/config-parse.ts";

/** Copy the worktree state git's `worktree add` copies from the worktree of `fromGitdir` into the new one's admin directory `admin`. */
export function inheritWorktreeState(fromGitdir: string, admin: string): void {
  const config = gitdirConfigReader(fromGitdir);
  if (configBool(config("extensions", null, "worktreeconfig")) === true) {
    const own = worktreeConfigText(gitPath(fromGitdir, "config.worktree"));
    if (own !== null) atomicWriteFile(gitPath(admin, "config.worktree"), own);
  }
  if (configBool(config("core", null, "sparsecheckout")) === true) {
    let patterns: Buffer | null = null;
    try {
      patterns = fs.readFileSync(gitPath(fromGitdir, "info/sparse-checkout"));
    } catch {
      // sparse with no patterns file: git's copy skips it too
    }
    if (patterns !== null) {
      const to = gitPath(admin, "info/sparse-checkout");
      fs.mkdirSync(dirname(to), { recursive: true });
      atomicWriteFile(to, patterns);
    }
  }
}

/**
 * A `config.worktree` file as git's copy leaves it: the same text without
 * the lines of `core.bare` and `core.worktree` (each entry cut from its
 * line's start to the end of its last line); null when there is no file.
 */
function worktreeConfigText(path: string): Buffer | null {
  let text: string;
  try {
    text = fs.readFileSync(path, "latin1");
  } catch {
    return null;
  }
  let out = "";
  let at = 0;
  for (const e of parseConfigText(text).entries) {
    if (e.section !== "core" || e.sub !== null || (e.key !== "bare" && e.key !== "worktree")) continue;
    let from = e.start;
    while (from > at && (text[from - 1] === " " || text[from - 1] === "\t")) from--; // the line's indentation goes with it
    out += text.slice(at, from);
    at = e.end;
  }
  return Buffer.from(out + text.slice(at), "latin1");
}
