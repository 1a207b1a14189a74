// The npm distribution as a user gets it (scripts/pack-npm.ts): the main
// package grex-metarepo (launcher + sources bundled for Bun) and this
// machine's grex-metarepo-<os>-<cpu> (the compiled binary), installed with
// `npm i -g --prefix` from the tarballs, offline and with the registry pointed
// at a closed port, so npm cannot reach the network. Then the installed `grex`
// is run on a PATH holding Node but no Bun: with install scripts, the command
// is the platform binary itself (no Node starts); with --ignore-scripts, the
// Node launcher runs the platform binary; without the platform package, one
// sentence, exit 1, or with Bun on PATH the bundled sources (reading no .env
// or bunfig.toml from the working directory); under Bun itself, and through
// `bun x`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { packHost } from "../../scripts/pack-npm.ts";
import { GIT_ENV, TestWorkspace } from "../helpers/workspace.ts";

const npmPath = Bun.which("npm");
const nodePath = Bun.which("node");
const gitPath = Bun.which("git");
const skip = !npmPath || !nodePath || !gitPath ? "node, npm and git must be on PATH" : "";
const platform = `${process.platform}-${process.arch}`;
const CLOSED_REGISTRY = "http://127.0.0.1:9/";

let t: TestWorkspace;
let main = "";
let platformTgz = "";
/** Node, npm, git, sh, env, mkdir and cat only. */
let nodeTools = "";
/** A directory with `bun` (this test's Bun) and nothing else. */
let bunDir = "";

interface Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Run argv with only the given PATH and no npm_* variables from the run that started the tests. */
function run(argv: string[], cwd: string, PATH: string, extra: Record<string, string> = {}): Run {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(t.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  Object.assign(env, GIT_ENV, { PATH, npm_config_registry: CLOSED_REGISTRY, npm_config_cache: join(t.root, "npm-cache"), npm_config_update_notifier: "false" }, extra);
  const r = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, signal: r.signalCode == null ? null : String(r.signalCode), stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function install(prefix: string, ...args: string[]): Run {
  return run(["npm", "install", "--global", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", ...args], t.root, nodeTools);
}

const pathWith = (prefix: string, ...dirs: string[]) => [join(prefix, "bin"), ...dirs].join(":");

/** Start `argv` (a `grex serve`), wait for its initialize reply, and return what /proc says the started process runs. */
async function serveExe(argv: string[], cwd: string, PATH: string): Promise<string> {
  const p = Bun.spawn(argv, { cwd, env: { HOME: t.home, PATH }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  try {
    p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`);
    p.stdin.flush();
    const reader = p.stdout.getReader();
    await reader.read();
    reader.releaseLock();
    return readlinkSync(`/proc/${p.pid}/exe`);
  } finally {
    p.kill("SIGTERM");
    await p.exited;
  }
}

beforeAll(() => {
  if (skip) return;
  t = new TestWorkspace("grex-npm-install-");
  ({ main, platform: platformTgz } = packHost(join(t.root, "dist-npm")));
  nodeTools = join(t.root, "node-tools");
  bunDir = join(t.root, "bun-dir");
  mkdirSync(nodeTools);
  mkdirSync(bunDir);
  for (const [name, p] of [["node", nodePath], ["npm", npmPath], ["git", gitPath], ["sh", "/bin/sh"], ["env", "/usr/bin/env"], ["mkdir", Bun.which("mkdir")], ["cat", Bun.which("cat")]] as const) {
    symlinkSync(realpathSync(p as string), join(nodeTools, name));
  }
  symlinkSync(process.execPath, join(bunDir, "bun"));
}, 240_000);
afterAll(() => t?.cleanup());

describe.skipIf(skip !== "")(`npm i -g of the packed tarballs${skip ? ` (skipped: ${skip})` : ""}`, () => {
  const prefix = () => join(t.root, "prefix-full");
  const onlyNode = () => pathWith(prefix(), nodeTools);
  const binary = () => join(prefix(), "lib", "node_modules", `${pkg.name}-${platform}`, "bin", "grex");

  test("installs offline on a PATH with Node and no Bun, versions in lockstep", () => {
    expect(Bun.which("bun", { PATH: onlyNode() })).toBeNull();
    expect(main.endsWith(`${pkg.name}-${pkg.version}.tgz`)).toBe(true);
    expect(platformTgz.endsWith(`${pkg.name}-${platform}-${pkg.version}.tgz`)).toBe(true);
    const r = install(prefix(), main, platformTgz);
    expect(r.stderr).not.toContain("ERR");
    expect(r.code).toBe(0);
    expect(existsSync(join(prefix(), "bin", "grex"))).toBe(true);
    expect(existsSync(binary())).toBe(true);
  }, 120_000);

  test("the `grex` command is the platform binary itself (hard link or copy); `grex --which` prints its path", () => {
    const command = realpathSync(join(prefix(), "bin", "grex"));
    expect(command).toBe(realpathSync(join(prefix(), "lib", "node_modules", pkg.name, "bin", "grex.cjs")));
    expect(readFileSync(command).equals(readFileSync(binary()))).toBe(true);
    expect(statSync(command).mode & 0o111).toBe(0o111);
    expect(readFileSync(join(prefix(), "lib", "node_modules", pkg.name, "bin", "launcher.cjs"), "utf8")).toStartWith("#!/usr/bin/env node\n");
    expect(run(["grex", "--version"], t.home, onlyNode())).toEqual({ code: 0, signal: null, stdout: `grex ${pkg.version}\n`, stderr: "" });
    expect(run(["grex", "--which"], t.home, onlyNode())).toEqual({ code: 0, signal: null, stdout: `${command}\n`, stderr: "" });
    expect(run([binary(), "--version"], t.home, onlyNode()).stdout).toBe(`grex ${pkg.version}\n`);
  });

  test.skipIf(process.platform !== "linux")("nothing but grex starts: the process `grex serve` runs is the binary, not Node", async () => {
    expect(await serveExe(["grex", "serve"], t.ws, onlyNode())).toBe(realpathSync(join(prefix(), "bin", "grex")));
  }, 60_000);

  test("init, add of a local repository, sync and status through the installed command", () => {
    for (const name of ["child-a", "child-b"]) t.repo(name);
    const meta = t.repo("meta-basic");
    const grex = (...argv: string[]) => run(["grex", ...argv], t.ws, onlyNode());
    expect(grex("init").code).toBe(0);
    const add = grex("add", meta, "dev-env", "--no-install");
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    const sync = grex("sync");
    expect(sync.stderr).toBe("");
    expect(sync.code).toBe(0);
    expect(readlinkSync(join(t.home, ".child-a", "a.txt"))).toBe(join(t.ws, "dev-env", "child-a", "files", "a.txt"));
    const status = grex("status", "--json", "--fail-on-drift");
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { packs: unknown[] }).packs).toHaveLength(3);
  }, 60_000);

  test("the README's session runs as written", () => {
    const readme = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
    const at = readme.indexOf("<!-- readme-session");
    expect(at).toBeGreaterThan(0);
    const block = /```sh\n([\s\S]*?)\n```\n/.exec(readme.slice(at));
    expect(block).not.toBeNull();
    const dir = join(t.root, "readme-session");
    mkdirSync(dir);
    const r = run(["sh", "-e", "-c", (block as RegExpExecArray)[1] as string], dir, onlyNode());
    expect(r.stderr).not.toContain("grex:"); // git may print hints there
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("linked ~/.config/grex-tour/tour.conf");
    expect(r.stdout).toContain("removed dotfiles");
    expect(existsSync(join(t.home, ".config", "grex-tour"))).toBe(false);
  }, 60_000);
});

describe.skipIf(skip !== "")("npm i -g --ignore-scripts: the Node launcher runs the platform binary", () => {
  const prefix = () => join(t.root, "prefix-noscripts");
  const onlyNode = () => pathWith(prefix(), nodeTools);
  const binary = () => join(prefix(), "lib", "node_modules", `${pkg.name}-${platform}`, "bin", "grex");

  test("installs offline; `grex` stays the launcher, runs the binary and prints its path for --which", () => {
    const r = install(prefix(), "--ignore-scripts", main, platformTgz);
    expect(r.code).toBe(0);
    expect(readFileSync(join(prefix(), "bin", "grex"), "utf8")).toStartWith("#!/usr/bin/env node\n");
    expect(run(["grex", "--version"], t.home, onlyNode())).toEqual({ code: 0, signal: null, stdout: `grex ${pkg.version}\n`, stderr: "" });
    expect(run(["grex", "--which"], t.home, onlyNode())).toEqual({ code: 0, signal: null, stdout: `${binary()}\n`, stderr: "" });
  }, 120_000);

  test.skipIf(process.platform !== "linux")("the process `grex serve` starts as is Node (the launcher)", async () => {
    expect(await serveExe(["grex", "serve"], t.ws, onlyNode())).toBe(realpathSync(nodePath as string));
  }, 60_000);

  test("exit codes and a death by signal come back as the binary's own", () => {
    const ws = join(t.root, "signal-ws");
    mkdirSync(ws);
    const plain = t.repo("plain", { "README.md": "r\n" });
    expect(run(["grex", "init"], ws, onlyNode()).code).toBe(0);
    expect(run(["grex", "add", plain, "plain"], ws, onlyNode()).code).toBe(0);
    for (const argv of [["no-such-verb"], ["exec", "--", "sh", "-c", "exit 3"], ["exec", "--", "sh", "-c", "kill -KILL $PPID"]]) {
      const viaLauncher = run(["grex", ...argv], ws, onlyNode());
      const direct = run([binary(), ...argv], ws, onlyNode());
      expect({ code: viaLauncher.code, signal: viaLauncher.signal }).toEqual({ code: direct.code, signal: direct.signal });
      expect(viaLauncher.stderr).toBe(direct.stderr);
    }
    expect(run(["grex", "no-such-verb"], ws, onlyNode()).code).toBe(2);
    expect(run(["grex", "exec", "--", "sh", "-c", "kill -KILL $PPID"], ws, onlyNode()).signal).toBe("SIGKILL");
  }, 60_000);

  test("SIGTERM to the launcher reaches `grex serve`, which ends as it would alone", async () => {
    const serveOnce = async (argv: string[]) => {
      const env: Record<string, string> = { HOME: t.home, PATH: onlyNode() };
      const p = Bun.spawn(argv, { cwd: t.ws, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
      p.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`);
      p.stdin.flush();
      const reader = p.stdout.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toContain('"protocolVersion"');
      p.kill("SIGTERM");
      await p.exited;
      reader.releaseLock();
      return { code: p.exitCode, signal: p.signalCode };
    };
    // Without forwarding, the launcher would wait for ever on a server whose stdin stays open.
    expect(await serveOnce(["grex", "serve"])).toEqual(await serveOnce([binary(), "serve"]));
  }, 60_000);

  test("the launcher runs under Bun too, and still prefers the binary", () => {
    const launcher = join(prefix(), "lib", "node_modules", pkg.name, "bin", "grex.cjs");
    expect(readFileSync(launcher, "utf8")).toStartWith("#!/usr/bin/env node\n");
    expect(run([process.execPath, launcher, "--which"], t.home, nodeTools).stdout).toBe(`${binary()}\n`);
    expect(run([process.execPath, launcher, "--version"], t.home, nodeTools)).toEqual({ code: 0, signal: null, stdout: `grex ${pkg.version}\n`, stderr: "" });
  });
});

describe.skipIf(skip !== "")("npm i -g --omit=optional: no platform binary", () => {
  const prefix = () => join(t.root, "prefix-omit");

  test("installs offline without the platform package", () => {
    const r = install(prefix(), "--omit=optional", main);
    expect(r.code).toBe(0);
    expect(existsSync(join(prefix(), "lib", "node_modules", `${pkg.name}-${platform}`))).toBe(false);
    expect(readFileSync(join(prefix(), "bin", "grex"), "utf8")).toStartWith("#!/usr/bin/env node\n");
  }, 120_000);

  test("without Bun: one sentence naming the platform and the two ways out, exit 1", () => {
    const r = run(["grex", "--version"], t.home, pathWith(prefix(), nodeTools));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")).toHaveLength(2); // one line, newline-terminated
    expect(r.stderr).toBe(
      `grex: no grex binary for ${platform} is installed (the optional package ${pkg.name}-${platform} is missing) and Bun 1.4 or newer is not on PATH; ` +
        "reinstall grex-metarepo without --omit=optional (or --no-optional), or install Bun 1.4 or newer (https://bun.sh).\n",
    );
    expect(run(["grex", "--which"], t.home, pathWith(prefix(), nodeTools)).code).toBe(1);
  });

  test("with a Bun older than 1.4 on PATH: the same sentence names its version", () => {
    const oldBun = join(t.root, "old-bun");
    mkdirSync(oldBun);
    writeFileSync(join(oldBun, "bun"), "#!/bin/sh\necho 1.3.9\n", { mode: 0o755 });
    const r = run(["grex", "--version"], t.home, pathWith(prefix(), nodeTools, oldBun));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the Bun on PATH is 1.3.9, older than 1.4; reinstall grex-metarepo without --omit=optional");
  });

  test("with Bun on PATH: the bundled sources run (init, add, sync), reading no .env or bunfig.toml from the working directory", () => {
    const PATH = pathWith(prefix(), nodeTools, bunDir);
    expect(run(["grex", "--version"], t.home, PATH)).toEqual({ code: 0, signal: null, stdout: `grex ${pkg.version}\n`, stderr: "" });
    const ws = join(t.root, "bun-ws");
    mkdirSync(ws);
    const marker = join(ws, "preload-ran");
    writeFileSync(join(ws, "bunfig.toml"), 'preload = ["./preload.js"]\n');
    writeFileSync(join(ws, "preload.js"), `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");\n`);
    writeFileSync(join(ws, ".env"), "GREX_UNTRUSTED_PROBE=from-dotenv\n");
    const repo = existsSync(join(t.upstream, "plain")) ? join(t.upstream, "plain") : t.repo("plain", { "README.md": "r\n" });
    const grex = (...argv: string[]) => run(["grex", ...argv], ws, PATH);
    expect(grex("init").code).toBe(0);
    expect(grex("add", repo, "plain").code).toBe(0);
    const sync = grex("sync");
    expect(sync.stderr).toBe("");
    expect(sync.code).toBe(0);
    const probe = grex("exec", "--", "sh", "-c", 'echo "probe=[$GREX_UNTRUSTED_PROBE]"');
    expect(probe.code).toBe(0);
    expect(probe.stdout).toContain("probe=[]");
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(ws, "plain", "README.md"))).toBe(true);
  }, 60_000);

  test("`bun x` of the main tarball runs grex (offline: Bun cannot reach the platform package either)", () => {
    const r = run([process.execPath, "x", `${pkg.name}@${main}`, "--version"], t.home, [nodeTools, bunDir].join(":"), {
      BUN_CONFIG_REGISTRY: CLOSED_REGISTRY,
      BUN_INSTALL_CACHE_DIR: join(t.root, "bun-cache"),
    });
    expect(r.stdout).toBe(`grex ${pkg.version}\n`);
    expect(r.code).toBe(0);
  }, 60_000);
});
