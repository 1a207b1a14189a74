// The npm package as a user gets it: `npm pack`, then `npm install -g` of the
// tarball into a temp prefix, and the installed `grex` run from a directory
// with no checkout around it (only bun on PATH, as the README asks); and
// `bun x` of the same tarball. The install works from npm's cache (--offline)
// and falls back to the registry; with neither, the tests are skipped and say why.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

const ROOT = resolve(import.meta.dir, "..", "..");
const t = new TestWorkspace("grex-package-");
afterAll(() => t.cleanup());

const npm = Bun.which("npm");
const tmp = join(t.root, "pack");
const prefix = join(t.root, "prefix");
const bunDir = join(t.root, "bun-only");
mkdirSync(tmp);
mkdirSync(bunDir);
symlinkSync(process.execPath, join(bunDir, "bun"));
/** PATH with bun and the installed bin only (plus the system dirs for git and sh). */
const PATH = [bunDir, join(prefix, "bin"), "/usr/bin", "/bin"].join(":");

function run(argv: string[], cwd: string, env: Record<string, string | undefined> = {}) {
  const r = Bun.spawnSync(argv, { cwd, env: { ...t.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function packAndInstall(): { tarball: string; skip: string } {
  if (!npm) return { tarball: "", skip: "npm is not on PATH" };
  const packed = run([npm, "pack", "--silent", "--pack-destination", tmp], ROOT);
  if (packed.code !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const tarball = join(tmp, packed.stdout.trim().split("\n").at(-1) as string);
  const install = (mode: string) =>
    run([npm, "install", "-g", mode, "--no-audit", "--no-fund", "--prefix", prefix, tarball], tmp, { npm_config_update_notifier: "false" });
  let r = install("--offline");
  if (r.code !== 0 && /ENOTCACHED/.test(r.stderr)) r = install("--prefer-offline");
  if (r.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH/.test(r.stderr)) {
    return { tarball, skip: "the npm registry is unreachable and npm's cache lacks the dependencies" };
  }
  if (r.code !== 0) throw new Error(`npm install -g of the tarball failed: ${r.stderr}`);
  return { tarball, skip: "" };
}

const { tarball, skip } = packAndInstall();
const bin = join(prefix, "bin", "grex");

describe(`npm package ${pkg.name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test.skipIf(skip !== "")("the tarball installs a `grex` bin that runs outside any checkout", () => {
    expect(existsSync(bin)).toBe(true);
    expect(resolve(join(prefix, "bin"), readlinkSync(bin)).startsWith(join(prefix, "lib", "node_modules", pkg.name))).toBe(true);
    const r = run(["grex", "--version"], t.home, { PATH });
    expect(r).toEqual({ code: 0, stdout: `grex ${pkg.version}\n`, stderr: "" });
  });

  test.skipIf(skip !== "")("a demo sync through the installed bin: init, add a meta pack with children, sync, status", () => {
    for (const name of ["child-a", "child-b"]) t.repo(name);
    const meta = t.repo("meta-basic");
    const grex = (...argv: string[]) => run(["grex", ...argv], t.ws, { PATH });
    expect(grex("init").code).toBe(0);
    expect(grex("add", meta, "dev-env", "--no-install").code).toBe(0);
    const sync = grex("sync");
    expect(sync.stderr).toBe("");
    expect(sync.code).toBe(0);
    expect(readlinkSync(join(t.home, ".child-a", "a.txt"))).toBe(join(t.ws, "dev-env", "child-a", "files", "a.txt"));
    const status = grex("status", "--json", "--fail-on-drift");
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { packs: unknown[] }).packs).toHaveLength(3);
  });

  test.skipIf(skip !== "")(
    "`bun x` of the tarball runs grex",
    () => {
      // Tests never touch the real HOME, so bun's install cache starts empty: this one needs the registry.
      const r = run([process.execPath, "x", `${pkg.name}@${tarball}`, "--version"], t.home, { PATH });
      if (r.code !== 0 && /ConnectionRefused|ENOTFOUND|EAI_AGAIN|NetworkUnreachable|Timeout/i.test(r.stderr)) {
        process.stderr.write(`bun x test not run: the registry is unreachable and bun's cache lacks the dependencies (${r.stderr.trim()})\n`);
        return;
      }
      expect(r.stdout).toBe(`grex ${pkg.version}\n`);
      expect(r.code).toBe(0);
    },
    120_000,
  );
});
