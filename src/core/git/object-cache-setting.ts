// Where the shared object cache is, for the call running now: the
// environment's GREX_OBJECT_CACHE, else the workspace's `.grex/object-cache`
// file (one line: a directory; `~/` is the home directory, a relative path is
// taken from the workspace). The invoke path resolves it once per call and
// runs the verb inside it (AsyncLocalStorage), so two MCP calls for two
// workspaces in one process never see each other's. Small on purpose: `ls`
// loads it and nothing else of the git code.
import type { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";

export const OBJECT_CACHE_ENV = "GREX_OBJECT_CACHE";
/** The workspace setting's file, relative to the workspace root. */
export const OBJECT_CACHE_FILE = join(".grex", "object-cache");

let scope: AsyncLocalStorage<string | null> | undefined;

/** The cache directory for `root` (a workspace; null: none) and `env`, or null when no cache is set up. */
export function objectCacheSetting(root: string | null, env: Record<string, string | undefined>): string | null {
  const home = env.HOME ?? "";
  const expand = (p: string, from: string) => {
    const t = p.trim();
    if (t === "") return null;
    const tilde = t === "~" || t.startsWith("~/") ? join(home, t.slice(1)) : t;
    return isAbsolute(tilde) ? resolve(tilde) : resolve(from, tilde);
  };
  const fromEnv = env[OBJECT_CACHE_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== "") return fromEnv.trim() === "off" ? null : expand(fromEnv, process.cwd());
  if (root === null) return null;
  let text: string;
  try {
    text = readFileSync(join(root, OBJECT_CACHE_FILE), "utf8");
  } catch {
    return null; // no setting (the usual case)
  }
  const line = text.split(/\r?\n/).find((l) => l.trim() !== "" && !l.trim().startsWith("#"));
  return line === undefined ? null : expand(line, root);
}

/** Run `fn` with `dir` as the object cache of everything it does (null: none). */
export function withObjectCache<T>(dir: string | null, fn: () => T): T {
  // The usual case (no cache anywhere in this process) costs nothing: no context is made or carried.
  if (dir === null && scope === undefined) return fn();
  scope ??= new (import.meta.require("node:async_hooks") as typeof import("node:async_hooks")).AsyncLocalStorage();
  return scope.run(dir, fn);
}

/**
 * The object cache of the call running now: the one its invoke set up, else
 * GREX_OBJECT_CACHE (a caller outside the invoke path: tests, a script).
 */
export function currentObjectCache(): string | null {
  const set = scope?.getStore();
  if (set !== undefined) return set;
  const env = process.env[OBJECT_CACHE_ENV];
  if (env === undefined || env.trim() === "" || env.trim() === "off") return null;
  return resolve(env.trim());
}
