// `npm run release`: build the single-file binary for this host and verify it:
// version, the README demo with no bun on PATH, and an MCP handshake.
// `npm run release -- --all`: also build linux-x64, linux-arm64, darwin-x64,
// darwin-arm64 and windows-x64 into dist/, with dist/SHA256SUMS. Bun fetches
// each foreign platform's runtime once (network needed) and caches it in
// ~/.bun/install/cache; `--offline` builds only the targets already cached.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { grexBuildCommand } from "./compile.ts";

const root = resolve(import.meta.dir, "..");
const dist = resolve(root, "dist");
const all = process.argv.includes("--all");
const offline = process.argv.includes("--offline");

/** Release name → bun's --target (and the runtime file name bun caches). */
const TARGETS: Record<string, { bun: string; cached: string; exe: string }> = {
  "linux-x64": { bun: "bun-linux-x64", cached: "bun-linux-x64", exe: "" },
  "linux-arm64": { bun: "bun-linux-arm64", cached: "bun-linux-aarch64", exe: "" },
  "darwin-x64": { bun: "bun-darwin-x64", cached: "bun-darwin-x64", exe: "" },
  "darwin-arm64": { bun: "bun-darwin-arm64", cached: "bun-darwin-aarch64", exe: "" },
  "windows-x64": { bun: "bun-windows-x64", cached: "bun-windows-x64", exe: ".exe" },
};
const hostName = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;

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
  for (const [name, t] of Object.entries(TARGETS)) {
    const file = join(dist, `grex-${pkg.version}-${name}${t.exe}`);
    const cached = existsSync(join(process.env.BUN_INSTALL ?? join(homedir(), ".bun"), "install", "cache", `${t.cached}-v${Bun.version}`));
    if (offline && name !== hostName && !cached) {
      process.stdout.write(`skip ${name}  (--offline and bun's ${t.cached} runtime is not cached)\n`);
      continue;
    }
    compile(file, t.bun);
    built.push(file);
  }
  const sums = built.map((f) => `${createHash("sha256").update(readFileSync(f)).digest("hex")}  ${basename(f)}\n`).join("");
  writeFileSync(join(dist, "SHA256SUMS"), sums);
  step("dist/SHA256SUMS", built.length > 0, `${built.length} binaries`);
}
