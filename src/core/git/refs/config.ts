// A small synchronous reader for .git/config values grex needs cheaply
// (origin's URL for `ls`, `doctor`, `import`). Handles sections in any case,
// quoted values and trailing comments; includes are not followed.
import { appendFileSync, readFileSync } from "node:fs";
import { gitdirOf } from "./refs.ts";
import { unquote } from "./config-levels.ts";
import { configPath } from "../layout/layout.ts";


/** `key` (lower-case) in section `[section "sub"]` of the repository's config, or null. */
export function readConfigValueSync(dir: string, section: string, sub: string | null, key: string): string | null {
  const gitdir = gitdirOf(dir);
  return gitdir ? readGitdirConfigValue(gitdir, section, sub, key) : null;
}

export function readGitdirConfigValue(gitdir: string, section: string, sub: string | null, key: string): string | null {
  return readConfigFileValue(configPath(gitdir), section, sub, key);
}

/** `key` in one config file (any of git's: the repository's, the global, the system one), or null. */
export function readConfigFileValue(path: string, section: string, sub: string | null, key: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  let inSection = false;
  let value: string | null = null;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const head = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$/.exec(line);
    if (head) {
      inSection = (head[1] as string).toLowerCase() === section && (head[2] ?? null) === sub;
      continue;
    }
    if (!inSection) continue;
    const kv = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (kv && (kv[1] as string).toLowerCase() === key) value = unquote(kv[2] ?? "true"); // last one wins, as in git
  }
  return value;
}

/** `remote.origin.url`, or null. */
export function originUrlSync(dir: string): string | null {
  return readConfigValueSync(dir, "remote", "origin", "url");
}

/** A config value, quoted and escaped when git would otherwise misread it. */
export function configValue(v: string): string {
  return /^[^\s"\\;#]([^"\\;#]*[^\s"\\;#])?$/.test(v) ? v : `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Record that local `branch` tracks origin's branch of the same name, unless something is recorded already. */
export function setTrackingSync(gitdir: string, branch: string, remote: string): void {
  if (readGitdirConfigValue(gitdir, "branch", branch, "remote") !== null) return;
  const path = configPath(gitdir);
  let sep = "";
  try {
    sep = readFileSync(path, "utf8").endsWith("\n") ? "" : "\n";
  } catch {
    // no config yet: appendFileSync creates it
  }
  appendFileSync(
    path,
    `${sep}[branch "${branch.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"]\n\tremote = ${configValue(remote)}\n\tmerge = ${configValue(`refs/heads/${branch}`)}\n`,
  );
}
