// The platforms grex is released for, in one place for scripts/release.ts
// (single-file binaries) and scripts/pack-npm.ts (npm platform packages).
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface Target {
  /** bun build's --target. */
  bun: string;
  /** The runtime file name bun caches for that target. */
  cached: string;
  /** The binary's suffix. */
  exe: string;
  /** npm's name for the platform, `${process.platform}-${process.arch}`: the platform package is grex-metarepo-<npm>. */
  npm: string;
  os: string;
  cpu: string;
}

/** Release name (as in dist/grex-<version>-<name>) → target. */
export const TARGETS: Record<string, Target> = {
  "linux-x64": { bun: "bun-linux-x64", cached: "bun-linux-x64", exe: "", npm: "linux-x64", os: "linux", cpu: "x64" },
  "linux-arm64": { bun: "bun-linux-arm64", cached: "bun-linux-aarch64", exe: "", npm: "linux-arm64", os: "linux", cpu: "arm64" },
  "darwin-x64": { bun: "bun-darwin-x64", cached: "bun-darwin-x64", exe: "", npm: "darwin-x64", os: "darwin", cpu: "x64" },
  "darwin-arm64": { bun: "bun-darwin-arm64", cached: "bun-darwin-aarch64", exe: "", npm: "darwin-arm64", os: "darwin", cpu: "arm64" },
  "windows-x64": { bun: "bun-windows-x64", cached: "bun-windows-x64", exe: ".exe", npm: "win32-x64", os: "win32", cpu: "x64" },
};

/** This machine's release name (a key of TARGETS when grex is released for it). */
export const hostName = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;

/** Whether bun already has `target`'s runtime, so building for it needs no network. */
export function runtimeCached(target: Target): boolean {
  return existsSync(join(process.env.BUN_INSTALL ?? join(homedir(), ".bun"), "install", "cache", `${target.cached}-v${Bun.version}`));
}
