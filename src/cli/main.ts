#!/usr/bin/env bun
// Entry point. `grex --version` answers before anything else is loaded.
import pkg from "../../package.json" with { type: "json" };

const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0] === "--version") {
  process.stdout.write(`grex ${pkg.version}\n`);
} else {
  const { runCli } = await import("./run.ts");
  process.exitCode = await runCli(argv);
}
