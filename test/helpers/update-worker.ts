// Updates one repository the way `grex sync` does (in-process backend), for
// the crash tests: prints "ready" once loaded, then "done" when finished.
import { inProcess } from "../../src/core/git/in-process.ts";

const [dir, url] = process.argv.slice(2) as [string, string];
await Bun.write(Bun.stdout, "ready\n");
await inProcess.update(dir, url, { ref: null, signal: new AbortController().signal });
await Bun.write(Bun.stdout, "done\n");
