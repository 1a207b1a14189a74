#!/usr/bin/env node
// The `grex` command of the npm package grex-metarepo (installed as
// bin/grex.cjs by scripts/pack-npm.ts). Plain CommonJS that Node 18+ and Bun
// run, with no dependencies. It runs, in this order:
//   1. the compiled binary of the platform package grex-metarepo-<os>-<cpu>,
//      which npm installs as an optional dependency on that platform;
//   2. the bundled sources (lib/main.js) with Bun 1.4 or newer from PATH (or
//      the Bun running this file), told to read no .env and no bunfig.toml
//      from the working directory, which is often someone else's pack;
//   3. neither: one sentence on stderr, exit 1.
// Arguments and stdio pass through; grex's exit code or signal becomes ours.
// `grex --which` prints the binary's path, for MCP clients that should spawn
// it directly.
"use strict";

const { spawn, spawnSync } = require("node:child_process");
const path = require("node:path");

const target = `${process.platform}-${process.arch}`;
const platformPackage = `grex-metarepo-${target}`;
const SUPPORTED = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];
const argv = process.argv.slice(2);

function fail(sentence) {
  process.stderr.write(`grex: ${sentence}\n`);
  process.exit(1);
}

/** The platform package's binary, or undefined when that package is not installed. */
function nativeBinary() {
  let manifest;
  try {
    manifest = require.resolve(`${platformPackage}/package.json`);
  } catch {
    return undefined;
  }
  return path.join(path.dirname(manifest), "bin", process.platform === "win32" ? "grex.exe" : "grex");
}

/** Bun's path and version: the Bun running this file, else `bun` on PATH. */
function findBun() {
  if (process.versions.bun) return { command: process.execPath, version: process.versions.bun };
  const r = spawnSync("bun", ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], windowsHide: true });
  if (r.error || r.status !== 0) return undefined;
  return { command: "bun", version: r.stdout.trim() };
}

function bunIsRecent(version) {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m !== null && (Number(m[1]) > 1 || (Number(m[1]) === 1 && Number(m[2]) >= 4));
}

function noWayToRun(bun) {
  const noBun = bun === undefined ? "Bun 1.4 or newer is not on PATH" : `the Bun on PATH is ${bun.version || "of unknown version"}, older than 1.4`;
  if (!SUPPORTED.includes(target)) {
    fail(`grex-metarepo has no binary for ${target} and ${noBun}; install Bun 1.4 or newer (https://bun.sh) to run grex from its sources.`);
  }
  fail(
    `no grex binary for ${target} is installed (the optional package ${platformPackage} is missing) and ${noBun}; ` +
      "reinstall grex-metarepo without --omit=optional (or --no-optional), or install Bun 1.4 or newer (https://bun.sh).",
  );
}

const binary = nativeBinary();

if (argv.length === 1 && argv[0] === "--which") {
  if (binary === undefined) {
    fail(`no grex binary for ${target} is installed (the optional package ${platformPackage} is missing), so there is no path to print; register the \`grex\` command itself with your MCP client.`);
  }
  process.stdout.write(`${binary}\n`);
  process.exit(0);
}

let command;
let args;
if (binary !== undefined) {
  command = binary;
  args = argv;
} else {
  const bun = findBun();
  if (bun === undefined || !bunIsRecent(bun.version)) noWayToRun(bun);
  command = bun.command;
  args = ["--no-env-file", `--config=${require("node:os").devNull}`, path.join(__dirname, "..", "lib", "main.js"), ...argv];
}

const child = spawn(command, args, { stdio: "inherit" });

// A terminal sends SIGINT and SIGQUIT to its whole foreground process group,
// grex included, so they are not forwarded (grex reads a second Ctrl-C as
// "stop now"); this process only waits for grex to finish. SIGTERM and SIGHUP
// usually come to this process alone (an MCP client closing its server, a
// supervisor), so grex gets them too.
const FORWARDED = ["SIGTERM", "SIGHUP"];
const SHARED = process.platform === "win32" ? ["SIGINT"] : ["SIGINT", "SIGQUIT"];
const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const s of FORWARDED) process.on(s, forward);
for (const s of SHARED) process.on(s, () => {});

child.on("error", (e) => {
  const why = e.code || e.message;
  if (binary !== undefined) fail(`could not start the grex binary ${command} (${why}); reinstall grex-metarepo.`);
  fail(`could not start Bun (${command}: ${why}); check the Bun on PATH, or reinstall grex-metarepo without --omit=optional.`);
});

child.on("exit", (code, signal) => {
  if (signal === null) process.exit(code === null ? 1 : code);
  // Die of the same signal, so our parent sees what grex's would have.
  for (const s of [...FORWARDED, ...SHARED]) process.removeAllListeners(s);
  process.kill(process.pid, signal);
  const number = require("node:os").constants.signals[signal];
  // Only reached when that signal is ignored here (Node ignores SIGPIPE).
  setTimeout(() => process.exit(128 + (number || 1)), 200);
});
