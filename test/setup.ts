// Preloaded once per `bun test` run, before every test file: no test may touch
// the real HOME, git must work on a machine without a configured identity, and
// the run must leave no temp directory behind.
//
// Everything lives in one private run directory: HOME is <run>/home and
// TMPDIR is <run>/tmp, so os.tmpdir() in every test and every process a test
// starts points there. The global afterAll below (hooks in a preload apply to
// the whole run, once, after the last file; `process.on("exit")` never fires
// under bun test) removes the run directory and fails the run if anything was
// left in <run>/tmp: each test removes what it made. Because the directory is
// private to this run, other processes' temp files can never make it fail.
import { afterAll } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const run = mkdtempSync(join(tmpdir(), "grex-test-run-"));
const home = join(run, "home");
const tmp = join(run, "tmp");
mkdirSync(home);
mkdirSync(tmp);
// Like /tmp: tests that run grex as an unprivileged user must reach their workspaces.
chmodSync(run, 0o755);
chmodSync(tmp, 0o1777);

process.env.HOME = home;
process.env.TMPDIR = tmp;
/** The run directory, for helpers that need a directory living as long as the run (git-fixtures). */
process.env.GREX_TEST_RUN_DIR = run;
process.env.GIT_AUTHOR_NAME ??= "grex test";
process.env.GIT_AUTHOR_EMAIL ??= "test@example.invalid";
process.env.GIT_COMMITTER_NAME ??= "grex test";
process.env.GIT_COMMITTER_EMAIL ??= "test@example.invalid";

afterAll(() => {
  const left = readdirSync(tmp).sort();
  rmSync(run, { recursive: true, force: true });
  if (left.length === 0) return;
  const what = `${left.length} temp entr${left.length === 1 ? "y" : "ies"} (${left.join(", ")})`;
  throw new Error(`the tests left ${what} behind; the test that makes each must remove it in afterEach/afterAll.`);
});
