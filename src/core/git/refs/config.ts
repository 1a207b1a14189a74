// The config manager: the one reader and writer of git's config files in
// grex. Which files git reads and in what order (system, the user's XDG file
// and ~/.gitconfig or GIT_CONFIG_GLOBAL, the repository's, config.worktree,
// GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT) is decided here, as git's config.c decides it;
// the syntax is read by config-parse.ts and written by config-write.ts. Every
// write goes through git's own `config.lock` (created exclusively, fsync'd,
// renamed over the file), deciding on what the file holds once the lock is
// taken, so a `git config` running beside grex is never overwritten.
// `include`/`includeIf` are not followed (grex's documented limit).
import { readFileSync } from "node:fs";
import { updateThroughLock, writeThroughLock } from "../layout/git-lock.ts";
import { type ConfigEntry, parseConfigText, toBytes } from "./config-parse.ts";
import { applySet, type ConfigSet, renderConfig } from "./config-write.ts";
import { gitdirOf } from "./refs.ts";
import { commonDirOf, configPath, gitPath } from "../layout/layout.ts";

export type { ConfigEntry } from "./config-parse.ts";
export type { ConfigSet } from "./config-write.ts";
export { configSectionHeader, escapeConfigValue } from "./config-write.ts";

type Env = NodeJS.ProcessEnv;

// ---- where git's config files are ----------------------------------------

/** The repository's common directory (where `config` lives): the layout manager decides (`commondir`). */
export const configCommonDir = (gitdir: string): string => commonDirOf(gitdir);

/** `<common dir>/config`: the repository's own config file. */
export const repoConfigPath = (gitdir: string): string => configPath(gitdir);

/** git_env_bool (GIT_CONFIG_NOSYSTEM, GIT_ATTR_NOSYSTEM): unset is `dflt`; a value git could not read as a boolean counts as true (git would stop). */
export function envBool(v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  return configBool(v) ?? true;
}

/** interpolate_path: `~` and `~/…` from HOME, `~user/…` from the password file; null when git could not expand it. */
export function expandConfigPath(path: string, env: Env = process.env): string | null {
  if (!path.startsWith("~")) return path;
  const slash = path.indexOf("/");
  const user = slash < 0 ? path.slice(1) : path.slice(1, slash);
  const rest = slash < 0 ? "" : path.slice(slash);
  if (user === "") return env.HOME === undefined ? null : env.HOME + rest;
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const f = line.split(":");
      if (f[0] === user && f[5] !== undefined) return f[5] + rest;
    }
  } catch {
    // no password file: as an unknown user
  }
  return null;
}

/** xdg_config_home(name): `$XDG_CONFIG_HOME/git/<name>` (when set and not empty), else `$HOME/.config/git/<name>`; null without either. */
export function xdgConfigPath(name: string, env: Env = process.env): string | null {
  if (env.XDG_CONFIG_HOME) return `${env.XDG_CONFIG_HOME}/git/${name}`;
  return env.HOME === undefined ? null : `${env.HOME}/.config/git/${name}`;
}

export interface ConfigFile {
  scope: "system" | "global" | "local" | "worktree";
  path: string;
}

/**
 * The user's config files git reads, lowest precedence first
 * (do_git_config_sequence): the system file unless GIT_CONFIG_NOSYSTEM is
 * true (GIT_CONFIG_SYSTEM names it; empty means none), then either
 * GIT_CONFIG_GLOBAL alone (empty: no global config at all) or the XDG file
 * and `~/.gitconfig`.
 */
export function userConfigFiles(env: Env = process.env): ConfigFile[] {
  const out: ConfigFile[] = [];
  if (!envBool(env.GIT_CONFIG_NOSYSTEM, false)) {
    const system = env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig";
    if (system !== "") out.push({ scope: "system", path: system });
  }
  if (env.GIT_CONFIG_GLOBAL !== undefined) {
    if (env.GIT_CONFIG_GLOBAL !== "") out.push({ scope: "global", path: env.GIT_CONFIG_GLOBAL });
    return out;
  }
  const xdg = xdgConfigPath("config", env);
  if (xdg !== null) out.push({ scope: "global", path: xdg });
  if (env.HOME !== undefined) out.push({ scope: "global", path: `${env.HOME}/.gitconfig` });
  return out;
}

// ---- reading ---------------------------------------------------------------

// The last parse of each file, reused while the file's text is the same: one
// `status` reads a pack's config for several settings and the user's files
// for every pack.
const parsed = new Map<string, { text: string; entries: readonly ConfigEntry[] }>();

/** The entries of one config file; none when it is missing or unreadable, and those before a line git would refuse. */
export function readConfigEntries(path: string): readonly ConfigEntry[] {
  let text: string;
  try {
    text = readFileSync(path, "latin1");
  } catch {
    return [];
  }
  const last = parsed.get(path);
  if (last !== undefined && last.text === text) return last.entries;
  const entries = parseConfigText(text).entries;
  if (parsed.size >= 4096) parsed.clear();
  parsed.set(path, { text, entries });
  return entries;
}

/** Every entry of a config file's text (`.gitmodules` read from a tree, say), parsed as git parses it. */
export function parseConfig(text: string): ConfigEntry[] {
  return parseConfigText(toBytes(text)).entries;
}

const lastValue = (entries: readonly ConfigEntry[], section: string, sub: string | null, key: string): string | null => {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as ConfigEntry;
    if (e.key === key && e.section === section && e.sub === sub) return e.value ?? "true"; // a bare key is git's true
  }
  return null;
};

/** `key` (lower-case) in `[section "sub"]` of one config file, or null. The last one wins, as in git. */
export function readConfigFileValue(path: string, section: string, sub: string | null, key: string): string | null {
  return lastValue(readConfigEntries(path), section, sub, key);
}

/** The repository's own entries: its config, then config.worktree when `extensions.worktreeConfig` is on. */
function repoEntries(gitdir: string): readonly ConfigEntry[] {
  const entries = readConfigEntries(repoConfigPath(gitdir));
  if (configBool(lastValue(entries, "extensions", null, "worktreeconfig")) !== true) return entries;
  return [...entries, ...readConfigEntries(gitPath(gitdir, "config.worktree"))];
}

/** `key` in the repository's own config (its config file and config.worktree), or null. */
export function readGitdirConfigValue(gitdir: string, section: string, sub: string | null, key: string): string | null {
  return lastValue(repoEntries(gitdir), section, sub, key);
}

/** `readGitdirConfigValue` for several keys of one repository: its config files read once. */
export function gitdirConfigReader(gitdir: string): (section: string, sub: string | null, key: string) => string | null {
  const entries = repoEntries(gitdir);
  return (section, sub, key) => lastValue(entries, section, sub, key);
}

/** As `readGitdirConfigValue`, for the repository whose work tree (or bare directory) is `dir`. */
export function readConfigValueSync(dir: string, section: string, sub: string | null, key: string): string | null {
  const gitdir = gitdirOf(dir);
  return gitdir ? readGitdirConfigValue(gitdir, section, sub, key) : null;
}

/** `remote.origin.url`, or null. */
export function originUrlSync(dir: string): string | null {
  return readConfigValueSync(dir, "remote", "origin", "url");
}

/** git_config_parse_key: `section[.sub].key` split and checked (section and key lower-cased), or null when git would refuse it. */
function splitConfigKey(name: string, value: string | null): ConfigEntry | null {
  const first = name.indexOf(".");
  const last = name.lastIndexOf(".");
  if (first <= 0 || last === name.length - 1) return null;
  const section = name.slice(0, first);
  const key = name.slice(last + 1);
  const sub = first === last ? null : name.slice(first + 1, last);
  if (!/^[A-Za-z0-9-]+$/.test(section) || !/^[A-Za-z][A-Za-z0-9-]*$/.test(key) || (sub !== null && sub.includes("\n"))) return null;
  return { section: section.toLowerCase(), sub, key: key.toLowerCase(), value, line: 0, start: 0, end: 0 };
}

/** sq_dequote_step: one single-quoted word (`'\''` and `'\!'` inside) from `at`; null when malformed. */
function sqWord(s: string, at: number): { word: string; next: number } | null {
  if (s[at] !== "'") return null;
  let word = "";
  let i = at + 1;
  for (;;) {
    if (i >= s.length) return null;
    const c = s[i++] as string;
    if (c !== "'") {
      word += c;
      continue;
    }
    if (s[i] === "\\" && (s[i + 1] === "'" || s[i + 1] === "!") && s[i + 2] === "'") {
      word += s[i + 1];
      i += 3;
      continue;
    }
    return { word, next: i };
  }
}

const isSpaceChar = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r";

/** GIT_CONFIG_PARAMETERS (what `git -c` hands its children): `'key'='value'` or the old `'key=value'` words; none when git would refuse the list. */
function parameterEntries(text: string): ConfigEntry[] {
  const out: ConfigEntry[] = [];
  let i = 0;
  while (i < text.length) {
    const k = sqWord(text, i);
    if (k === null) return [];
    i = k.next;
    let e: ConfigEntry | null;
    if (i >= text.length || isSpaceChar(text[i])) {
      const eq = k.word.indexOf("=");
      e = splitConfigKey((eq < 0 ? k.word : k.word.slice(0, eq)).trim(), eq < 0 ? null : k.word.slice(eq + 1));
    } else if (text[i] === "=") {
      i++;
      if (text[i] === "'") {
        const v = sqWord(text, i);
        if (v === null || (v.next < text.length && !isSpaceChar(text[v.next]))) return [];
        i = v.next;
        e = splitConfigKey(k.word, v.word);
      } else if (i >= text.length || isSpaceChar(text[i])) e = splitConfigKey(k.word, null);
      else return [];
    } else return [];
    if (e === null) return [];
    out.push(e);
    while (isSpaceChar(text[i])) i++;
  }
  return out;
}

/** The command-line level: GIT_CONFIG_PARAMETERS, then GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>. */
function envEntries(env: Env): ConfigEntry[] {
  const out = env.GIT_CONFIG_PARAMETERS ? parameterEntries(env.GIT_CONFIG_PARAMETERS) : [];
  const count = env.GIT_CONFIG_COUNT;
  if (count === undefined || !/^\d+$/.test(count)) return out;
  const counted: ConfigEntry[] = [];
  for (let i = 0; i < Number(count); i++) {
    const name = env[`GIT_CONFIG_KEY_${i}`];
    const value = env[`GIT_CONFIG_VALUE_${i}`];
    const e = name === undefined || value === undefined ? null : splitConfigKey(name, value);
    if (e === null) return out; // git refuses the whole list
    counted.push(e);
  }
  return [...out, ...counted];
}

/** git's configuration as git layers it: the user's files, the repository's, then the environment's pairs; later wins. */
export class LayeredConfig {
  /** `repo`: where the repository's own entries lie in `entries` ([start, end)), so userOnly() can leave them out. */
  private constructor(
    readonly entries: ConfigEntry[],
    private readonly repo: readonly [number, number] = [entries.length, entries.length],
  ) {}

  /** The user's files, then the repository's own (null: the user's files alone), then GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT pairs. */
  static load(gitdir: string | null, env: Env = process.env): LayeredConfig {
    const entries: ConfigEntry[] = [];
    for (const f of userConfigFiles(env)) entries.push(...readConfigEntries(f.path));
    const start = entries.length;
    if (gitdir !== null) entries.push(...repoEntries(gitdir));
    const end = entries.length;
    entries.push(...envEntries(env));
    return new LayeredConfig(entries, [start, end]);
  }

  /** The user's own settings alone (files and `git -c`): what a repository's `.git/config` (which a pack's upstream may have shaped) cannot add to. */
  userOnly(): LayeredConfig {
    const [start, end] = this.repo;
    if (start === end) return this;
    const kept = [...this.entries.slice(0, start), ...this.entries.slice(end)];
    return new LayeredConfig(kept, [start, start]);
  }

  /** The last value of `section[.sub].key` (section and key lower-case), or null; a bare key reads "true". */
  get(section: string, sub: string | null, key: string): string | null {
    return lastValue(this.entries, section, sub, key);
  }

  /** Whether any `section.sub.*` key is set (git: the driver "exists"). */
  hasSubsection(section: string, sub: string): boolean {
    return this.entries.some((e) => e.section === section && e.sub === sub);
  }
}

/** git's boolean spelling (true/yes/on, false/no/off/empty, or an integer); null when the value is not one. */
export function configBool(v: string | null): boolean | null {
  if (v === null) return null;
  const s = v.toLowerCase();
  if (s === "true" || s === "yes" || s === "on") return true;
  if (s === "false" || s === "no" || s === "off" || s === "") return false;
  const n = /^[-+]?(\d+)[kmg]?$/.exec(s);
  return n ? Number(n[1]) !== 0 : null;
}

// ---- writing ---------------------------------------------------------------

const LOCK = { timeoutMs: 100, fsync: true, keepMode: true } as const;

/**
 * Set values in the repository's config under `config.lock`: "set" replaces
 * the value git reads (or adds it), "if-absent" adds only names not set yet.
 * Returns whether the file changed. Values are escaped as `git config` writes
 * them, so a URL with a newline stays one value.
 */
export function setRepoConfig(gitdir: string, sets: readonly ConfigSet[], mode: "set" | "if-absent" = "set"): boolean {
  const path = repoConfigPath(gitdir);
  return updateThroughLock(
    path,
    () => {
      let text: string;
      try {
        text = readFileSync(path, "latin1");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        text = "";
      }
      let changed = false;
      for (const s of sets) {
        const next = applySet(text, s, mode, path);
        if (next !== null) {
          text = next;
          changed = true;
        }
      }
      return changed ? Buffer.from(text, "latin1") : null;
    },
    { ...LOCK, where: configCommonDir(gitdir) },
  );
}

/** A new repository's whole config file (what `git init` + `git remote add` write), through `config.lock`. */
export function writeNewRepoConfig(gitdir: string, sets: readonly ConfigSet[]): void {
  const path = repoConfigPath(gitdir);
  writeThroughLock(path, renderConfig(sets, path), { ...LOCK, where: configCommonDir(gitdir) });
}

/** Record that local `branch` tracks `remote`'s branch of the same name, unless something is recorded already. */
export function setTrackingSync(gitdir: string, branch: string, remote: string): void {
  if (readGitdirConfigValue(gitdir, "branch", branch, "remote") !== null) return;
  setRepoConfig(
    gitdir,
    [
      { section: "branch", sub: branch, key: "remote", value: remote },
      { section: "branch", sub: branch, key: "merge", value: `refs/heads/${branch}` },
    ],
    "if-absent",
  );
}
