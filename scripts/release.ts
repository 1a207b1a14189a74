// `npm run release`: build the single-file binary for this host and verify it:
// version, the README demo with no bun on PATH, and an MCP handshake.
// `npm run release -- --all`: also build linux-x64, linux-arm64, darwin-x64,
// darwin-arm64 and windows-x64 into dist/, with dist/SHA256SUMS. Bun fetches
// each foreign platform's runtime once (network needed) and caches it in
// ~/.bun/install/cache; `--offline` builds only the targets already cached.
// `--all` also writes the npm packages into dist/npm/ (scripts/pack-npm.ts):
// grex-metarepo and one grex-metarepo-<os>-<cpu> per binary built.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { grexBuildCommand } from "./compile.ts";
import { packMain, packPlatform } from "./pack-npm.ts";
import { hostName, runtimeCached, TARGETS } from "./targets.ts";

const root = resolve(import.meta.dir, "..");
const dist = resolve(root, "dist");
const all = process.argv.includes("--all");
const offline = process.argv.includes("--offline");

function step(name: string, ok: boolean, detail = ""): void {
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `  (${detail})` : ""}\n`);
  if (!ok) process.exit(1);
}

function compile(out: string, target?: string): void {
  const build = Bun.spawnSync(grexBuildCommand(out, target), { cwd: root, stdout: "pipe", stderr: "pipe" });
  step(`bun build --compile${target ? ` --target=${target}` : ""}`, build.exitCode === 0, build.exitCode === 0 ? out : build.stderr.toString().trim());
}

const out = resolve(dist, "grex");
compile(out);

const version = Bun.spawnSync([out, "--version"], { stdout: "pipe" }).stdout.toString().trim();
step("grex --version", version === `grex ${pkg.version}`, version);

const demo = Bun.spawnSync([process.execPath, "scripts/demo.ts"], {
  cwd: root,
  env: { ...process.env, GREX_BIN: out },
  stdout: "pipe",
  stderr: "pipe",
});
step("demo with the binary and no bun on PATH", demo.exitCode === 0, demo.exitCode === 0 ? "" : demo.stderr.toString());

const serve = Bun.spawn([out, "serve"], { cwd: root, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
serve.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "release", version: "1" } } })}\n`);
serve.stdin.end();
const reply = await new Response(serve.stdout).text();
await serve.exited;
step("grex serve handshake", reply.includes('"protocolVersion":"2025-06-18"') && reply.includes('"name":"grex"'));

if (all) {
  const built: string[] = [];
  const npmOut = join(dist, "npm");
  for (const [name, t] of Object.entries(TARGETS)) {
    const file = join(dist, `grex-${pkg.version}-${name}${t.exe}`);
    if (offline && name !== hostName && !runtimeCached(t)) {
      process.stdout.write(`skip ${name}  (--offline and bun's ${t.cached} runtime is not cached)\n`);
      continue;
    }
    compile(file, t.bun);
    built.push(file);
    step(`npm package for ${name}`, true, packPlatform(t, file, npmOut));
  }
  step("npm main package", true, packMain(npmOut));
  const sums = built.map((f) => `${createHash("sha256").update(readFileSync(f)).digest("hex")}  ${basename(f)}\n`).join("");
  writeFileSync(join(dist, "SHA256SUMS"), sums);
  step("dist/SHA256SUMS", built.length > 0, `${built.length} binaries`);
}
