// Workspace discovery and the fixed layout of grex's files inside it.
import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { usageError } from "./errors.ts";

export const MANIFEST_FILE = "grex.jsonl";
export const LOCK_FILE = "grex.lock.jsonl";
export const STATE_DIR = join(".grex", ".state");

export interface Workspace {
  /** Absolute path of the workspace directory. */
  root: string;
  /** `<root>/grex.jsonl` (intent log). */
  manifestPath: string;
  /** `<root>/grex.lock.jsonl` (resolved state). */
  lockPath: string;
  /** `<root>/.grex/.state` (runtime locks and caches; never committed). */
  stateDir: string;
}

export function workspaceAt(root: string): Workspace {
  const abs = resolve(root);
  return {
    root: abs,
    manifestPath: join(abs, MANIFEST_FILE),
    lockPath: join(abs, LOCK_FILE),
    stateDir: join(abs, STATE_DIR),
  };
}

/**
 * The workspace for a command: the directory of `--manifest` when given,
 * else the nearest directory at or above `cwd` holding `grex.jsonl`.
 */
export function findWorkspace(cwd: string, manifest?: string): Workspace {
  if (manifest !== undefined) {
    if (manifest.trim() === "") {
      throw usageError("--manifest is empty; pass the path of a grex.jsonl (or of its directory), or leave the flag out.", { field: "manifest" });
    }
    const path = resolve(cwd, manifest);
    const isDir = existsSync(path) && statSync(path).isDirectory();
    const file = isDir ? join(path, MANIFEST_FILE) : path;
    if (!existsSync(file)) {
      throw usageError(`No manifest at ${file}; run \`grex init\` there or pass an existing --manifest.`);
    }
    return workspaceAt(dirname(file));
  }
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, MANIFEST_FILE))) return workspaceAt(dir);
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw usageError(
    `No grex workspace found at or above ${resolve(cwd)}; run \`grex init\` first or pass --manifest <path>.`,
  );
}
