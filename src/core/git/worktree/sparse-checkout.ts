// Sparse checkout (`core.sparseCheckout`): which paths belong in the work
// tree. The patterns in `.git/info/sparse-checkout` use .gitignore syntax
// (cone mode writes such patterns too: "/*", "!/*/", "/dir/"); for a path,
// the last pattern matching it decides, else the nearest directory above it
// that some pattern decides; a path nothing decides stays out. An update
// leaves paths outside the patterns out of the work tree and marks their
// index entries skip-worktree, as `git pull` does.
import { configBool, readGitdirConfigValue } from "../refs/config.ts";
import { readRules, type Rule, verdict } from "./ignore-rules.ts";
import { gitPath } from "../layout/layout.ts";

export class SparseCheckout {
  private constructor(private readonly rules: Rule[]) {}

  /** The repository's sparse patterns, or null when it is not a sparse checkout. */
  static of(gitdir: string): SparseCheckout | null {
    // `git sparse-checkout` writes the switch to config.worktree (with extensions.worktreeConfig), else config: the manager reads both.
    if (configBool(readGitdirConfigValue(gitdir, "core", null, "sparsecheckout")) !== true) return null;
    return new SparseCheckout(readRules(gitPath(gitdir, "info/sparse-checkout")));
  }

  /** Does `rel` (a file's path in the work tree) belong in the work tree? */
  includes(rel: string): boolean {
    const own = verdict(this.rules, rel, false);
    if (own !== undefined) return own;
    for (let d = rel.lastIndexOf("/"); d > 0; d = rel.lastIndexOf("/", d - 1)) {
      const v = verdict(this.rules, rel.slice(0, d), true);
      if (v !== undefined) return v;
    }
    return false;
  }
}
