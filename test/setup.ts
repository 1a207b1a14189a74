// Preloaded before every test file: no test may touch the real HOME, and git
// must work on a machine without a configured identity.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.env.HOME = mkdtempSync(join(tmpdir(), "grex-test-home-"));
process.env.GIT_AUTHOR_NAME ??= "grex test";
process.env.GIT_AUTHOR_EMAIL ??= "test@example.invalid";
process.env.GIT_COMMITTER_NAME ??= "grex test";
process.env.GIT_COMMITTER_EMAIL ??= "test@example.invalid";
