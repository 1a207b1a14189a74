// `npm run release`: build the single-file binary for this host and verify it:
// version, the README demo with no bun on PATH, and an MCP handshake.
import { resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = resolve(import.meta.dir, "..");
const out = resolve(root, "dist", "grex");

function step(name: string, ok: boolean, detail = ""): void {
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `  (${detail})` : ""}\n`);
  if (!ok) process.exit(1);
}

const build = Bun.spawnSync(
  [process.execPath, "build", "--compile", "--minify", "--bytecode", "--format=esm", "src/cli/main.ts", "--outfile", out],
  { cwd: root, stdout: "pipe", stderr: "pipe" },
);
step("bun build --compile", build.exitCode === 0, build.exitCode === 0 ? out : build.stderr.toString());

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
