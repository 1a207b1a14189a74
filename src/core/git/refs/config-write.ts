// Writing git's config syntax as git's config.c writes it: a value as
// write_pair escapes it, a section header as store_create_section quotes it,
// a name checked as git_config_parse_key checks it. Pure text functions; the
// config manager (config.ts) owns the files and their locks.
import { packOpError } from "../../base/grex-error.ts";
import { type ParsedConfig, parseConfigText, sectionEnd, toBytes } from "./config-parse.ts";

/** One `section[.sub].key = value` to write. */
export interface ConfigSet {
  section: string;
  sub: string | null;
  key: string;
  value: string;
}

/** The name as `git config` would spell it, for messages. */
export const configName = (s: { section: string; sub: string | null; key: string }) =>
  s.sub === null ? `${s.section}.${s.key}` : `${s.section}.${s.sub}.${s.key}`;

/**
 * git_config_parse_key's rules: a section of letters, digits and `-`; a key
 * starting with a letter; a subsection without a newline (nor NUL, which a C
 * string cannot hold); a value without NUL. Anything else is refused, never
 * written in some other shape.
 */
export function checkConfigSet(s: ConfigSet, file: string): void {
  const refuse = (what: string) => packOpError(`refusing to write ${what} into '${file}': git could not read it back as written.`, { file });
  if (!/^[A-Za-z0-9-]+$/.test(s.section)) throw refuse(`the config section ${JSON.stringify(s.section)}`);
  if (!/^[A-Za-z][A-Za-z0-9-]*$/.test(s.key)) throw refuse(`the config key ${JSON.stringify(s.key)}`);
  if (s.sub !== null && /[\n\0]/.test(s.sub)) throw refuse(`a newline or NUL in the subsection of ${JSON.stringify(configName(s))}`);
  if (s.value.includes("\0")) throw refuse(`a NUL byte in the value of ${JSON.stringify(configName(s))}`);
}

/**
 * write_pair: `"`, `\` escaped, newline and tab as `\n`, `\t`; the whole value
 * in double quotes when it starts or ends with a space or holds `;`, `#` or a
 * carriage return, so the reader keeps them.
 */
export function escapeConfigValue(value: string): string {
  const quote = value.startsWith(" ") || value.endsWith(" ") || /[;#\r]/.test(value) ? '"' : "";
  let out = quote;
  for (const c of value) {
    if (c === "\n") out += "\\n";
    else if (c === "\t") out += "\\t";
    else if (c === '"' || c === "\\") out += `\\${c}`;
    else out += c;
  }
  return out + quote;
}

/** store_create_section: `[section]` or `[section "sub"]` with `"` and `\` escaped in the subsection. */
export function configSectionHeader(section: string, sub: string | null): string {
  return sub === null ? `[${section}]` : `[${section} "${sub.replace(/["\\]/g, (c) => `\\${c}`)}"]`;
}

/** A whole config file holding `sets` in order, grouped under their sections as `git config` would add them. */
export function renderConfig(sets: readonly ConfigSet[], file: string): string {
  let text = "";
  for (const s of sets) text = applySet(text, s, "set", file) ?? text;
  return Buffer.from(text, "latin1").toString("utf8");
}

function badFile(file: string, line: number) {
  return packOpError(`'${file}' line ${line} is not valid git config, so grex will not edit it; fix that line (git reports the same) and try again.`, { file, line });
}

/**
 * `text` (latin1 bytes) with `s` applied: "set" replaces the value of the last
 * entry of that name (the one git reads) or adds it; "if-absent" adds it only
 * when no entry of that name exists. A new entry goes at the end of the last
 * section of its name, or into a new section at the end of the file. Returns
 * null when nothing changes.
 */
export function applySet(text: string, s: ConfigSet, mode: "set" | "if-absent", file: string): string | null {
  checkConfigSet(s, file);
  const parsed: ParsedConfig = parseConfigText(text);
  if (parsed.badLine !== null) throw badFile(file, parsed.badLine);
  const section = s.section.toLowerCase();
  const key = s.key.toLowerCase();
  const same = (e: { section: string; sub: string | null }) => e.section === section && e.sub === s.sub;
  const line = `\t${s.key} = ${toBytes(escapeConfigValue(s.value))}\n`;
  const existing = parsed.entries.filter((e) => same(e) && e.key === key);
  const last = existing[existing.length - 1];
  if (last !== undefined) {
    if (mode === "if-absent" || last.value === s.value) return null;
    // From the key to the end of its (continued) line: indentation before it stays.
    return text.slice(0, last.start) + line.slice(1) + text.slice(last.end);
  }
  const home = parsed.sections.filter(same).pop();
  const at = home === undefined ? text.length : sectionEnd(home, text);
  const sep = at > 0 && text[at - 1] !== "\n" ? "\n" : "";
  const add = home === undefined ? `${sep}${toBytes(configSectionHeader(s.section, s.sub))}\n${line}` : `${sep}${line}`;
  return text.slice(0, at) + add + text.slice(at);
}
