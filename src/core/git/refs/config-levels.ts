// git's configuration as git itself layers it, for the settings that change
// what a file looks like on disk (core.autocrlf, core.eol,
// core.attributesFile, filter.<driver>.*): the system file, the user's
// XDG file, ~/.gitconfig, then the repository's own config, later files
// winning. `include`/`includeIf` are not followed (grex's documented limit).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { configPath } from "../layout/layout.ts";

export interface ConfigEntry {
  /** Section and key lower-case; the subsection exactly as written (`[filter "lfs"]`). */
  section: string;
  sub: string | null;
  key: string;
  value: string;
}

/** A config value as git reads it: quotes joined, escapes (\n, \t, \b; others literal) applied, a comment cut. */
export function unquote(raw: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === '"') quoted = !quoted;
    else if (c === "\\" && i + 1 < raw.length) {
      const n = raw[++i] as string;
      out += n === "n" ? "\n" : n === "t" ? "\t" : n === "b" ? "\b" : n;
    } else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return out.trim();
}

/** Every `key = value` of a config file's text, in order (later ones win). */
export function parseConfig(text: string): ConfigEntry[] {
  const out: ConfigEntry[] = [];
  let section = "";
  let sub: string | null = null;
  for (const raw of text.split("\n")) {
    let line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1] as string;
      const dot = name.indexOf(".");
      // The old `[section.sub]` spelling: the subsection is lower-cased, as git does.
      if (head[2] === undefined && dot > 0) {
        section = name.slice(0, dot).toLowerCase();
        sub = name.slice(dot + 1).toLowerCase();
      } else {
        section = name.toLowerCase();
        sub = head[2] === undefined ? null : head[2].replace(/\\(.)/g, "$1");
      }
      line = (head[3] as string).trim();
      if (line === "") continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (kv && section !== "") out.push({ section, sub, key: (kv[1] as string).toLowerCase(), value: kv[2] === undefined ? "true" : unquote(kv[2]) });
  }
  return out;
}

/** git's user-level config files, lowest precedence first. */
export function userConfigFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const files: string[] = [];
  if (!env.GIT_CONFIG_NOSYSTEM) files.push(env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig");
  if (env.GIT_CONFIG_GLOBAL !== undefined) {
    files.push(env.GIT_CONFIG_GLOBAL);
    return files;
  }
  const home = env.HOME ?? "";
  files.push(join(env.XDG_CONFIG_HOME || join(home, ".config"), "git", "config"));
  files.push(join(home, ".gitconfig"));
  return files;
}

/** The default `core.attributesFile`, as git finds it. */
export function defaultAttributesFile(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME ?? "";
  return join(env.XDG_CONFIG_HOME || join(home, ".config"), "git", "attributes");
}

/** A `~/` path in a config value, expanded as git does. */
export function expandHome(path: string, env: NodeJS.ProcessEnv = process.env): string {
  return path === "~" || path.startsWith("~/") ? join(env.HOME ?? "", path.slice(1)) : path;
}

export class LayeredConfig {
  private constructor(readonly entries: ConfigEntry[]) {}

  /** The user's files, then `<gitdir>/config` (null: the user's files alone). */
  static load(gitdir: string | null, env: NodeJS.ProcessEnv = process.env): LayeredConfig {
    const entries: ConfigEntry[] = [];
    const files = userConfigFiles(env);
    if (gitdir !== null) files.push(configPath(gitdir));
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(f, "utf8");
      } catch {
        continue; // a missing file is no configuration
      }
      entries.push(...parseConfig(text));
    }
    return new LayeredConfig(entries);
  }

  /** The last value of `section[.sub].key` (key lower-case), or null. */
  get(section: string, sub: string | null, key: string): string | null {
    let v: string | null = null;
    for (const e of this.entries) if (e.section === section && e.sub === sub && e.key === key) v = e.value;
    return v;
  }

  /** Whether any `section.sub.*` key is set (git: the driver "exists"). */
  hasSubsection(section: string, sub: string): boolean {
    return this.entries.some((e) => e.section === section && e.sub === sub);
  }
}

/** git's boolean spelling; null when the value is not one. */
export function configBool(v: string | null): boolean | null {
  if (v === null) return null;
  const s = v.toLowerCase();
  if (s === "true" || s === "yes" || s === "on" || s === "1") return true;
  if (s === "false" || s === "no" || s === "off" || s === "0" || s === "") return false;
  return null;
}
