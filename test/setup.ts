// Preloaded before every test file: no test may touch the real HOME, and git
// must work on a machine without a configured identity.
import { setDefaultTimeout } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Integration tests spawn real processes and git servers; on a loaded 2-core
// machine 5 s (bun's default) is too little. bunfig's [test] timeout is not
// applied by bun 1.4, so it is set here, where every file gets it.
setDefaultTimeout(60_000);

process.env.HOME = mkdtempSync(join(tmpdir(), "grex-test-home-"));
process.env.GIT_AUTHOR_NAME ??= "grex test";
process.env.GIT_AUTHOR_EMAIL ??= "test@example.invalid";
process.env.GIT_COMMITTER_NAME ??= "grex test";
process.env.GIT_COMMITTER_EMAIL ??= "test@example.invalid";
