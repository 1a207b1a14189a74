#!/usr/bin/env -S bun --no-env-file --config=/dev/null
// Entry point. `grex --version` answers before anything else is loaded, and a
// plain `grex serve` starts the MCP server without loading the CLI adapter or
// the verb table's CLI side (the first reply is what agents wait for).
import pkg from "../../package.json" with { type: "json" };
import { stderr, stdout } from "../core/base/stdio-native.ts";

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  stdout.write(`grex ${pkg.version}\n`);
} else if (argv.length === 1 && argv[0] === "--which" && import.meta.path.startsWith("/$bunfs/")) {
  // The compiled binary's own path (where an npm install made `grex` the
  // binary itself, the launcher is not there to answer; npm/install.cjs).
  stdout.write(`${process.execPath}\n`);
} else {
  const served = argv[0] === "serve" ? await (await import("../mcp/serve-argv.ts")).serveFromArgv(argv) : undefined;
  if (served !== undefined) process.exitCode = served;
  else {
    const { runCli } = await import("./run.ts");
    const code = await runCli(argv);
    // Out as soon as everything written has reached the OS: a command's work is
    // done when runCli returns, and leaving the way a script ends (waiting for
    // the event loop to empty, then tearing the runtime down) costs another
    // millisecond or two, which a short command like `ls` notices.
    await Promise.all([stdout.flush(), stderr.flush()]);
    process.exit(code);
  }
}
