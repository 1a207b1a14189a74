// The install step of the npm package grex-metarepo (its `postinstall`,
// installed as bin/install.cjs by scripts/pack-npm.ts). Plain CommonJS for
// Node 18+ and Bun, no dependencies, never a download.
//
// The package's `grex` command, bin/grex.cjs, starts as a copy of the Node
// launcher (bin/launcher.cjs). Where the platform package is installed, its
// binary answers `--version` with this package's version, and the platform
// runs a binary from a bin link (everywhere but Windows, where npm's .cmd shim
// runs the file with Node), this step puts that binary in place of
// bin/grex.cjs — a hard link, else a copy, written beside it and renamed over
// it — so `grex` starts grex itself and no Node at all. Anything else, and any
// failure on the way, leaves the launcher in place: it stays the fallback
// (installs with --ignore-scripts, Windows, no platform package), and this
// step never fails an install.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const own = require("../package.json");
const command = path.join(__dirname, "grex.cjs");
const launcher = path.join(__dirname, "launcher.cjs");

/** The platform package's binary, or undefined when that package is not installed. */
function platformBinary() {
  try {
    const manifest = require.resolve(`${own.name}-${process.platform}-${process.arch}/package.json`);
    return path.join(path.dirname(manifest), "bin", "grex");
  } catch {
    return undefined;
  }
}

/** Whether `file` runs and says it is this version of grex. */
function answers(file) {
  const r = spawnSync(file, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 15000 });
  return r.status === 0 && r.stdout === `grex ${own.version}\n`;
}

/** Put `source` at `target` by a hard link or else a copy, atomically (temp + rename). */
function place(source, target) {
  const temp = path.join(path.dirname(target), `.grex-install-${process.pid}`);
  fs.rmSync(temp, { force: true });
  try {
    fs.linkSync(source, temp);
  } catch {
    fs.copyFileSync(source, temp);
    fs.chmodSync(temp, 0o755);
  }
  try {
    fs.renameSync(temp, target);
  } catch (e) {
    fs.rmSync(temp, { force: true });
    throw e;
  }
}

function main() {
  if (process.platform === "win32") return "Windows runs bin links through Node";
  if (process.env.GREX_NPM_KEEP_LAUNCHER === "1") return "GREX_NPM_KEEP_LAUNCHER=1";
  const binary = platformBinary();
  if (binary === undefined) return "no platform package";
  if (!answers(binary)) return `${binary} does not run here`;
  place(binary, command);
  if (answers(command)) return undefined;
  place(launcher, command); // the binary did not run from there: back to the launcher
  return `${command} did not run the binary`;
}

try {
  const kept = main();
  // npm shows install-script output only with --foreground-scripts or on failure.
  if (kept !== undefined) process.stderr.write(`grex-metarepo: keeping the Node launcher for \`grex\` (${kept}).\n`);
} catch (e) {
  process.stderr.write(`grex-metarepo: keeping the Node launcher for \`grex\` (${e && e.message ? e.message : String(e)}).\n`);
}
