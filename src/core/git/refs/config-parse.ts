// git's config file syntax, read as git's config.c reads it (git_parse_source,
// get_base_var, get_extended_base_var, get_value, parse_value): sections and
// keys case-insensitive, subsections exact with `\x` meaning `x`, values with
// their quotes joined, `\n`, `\t`, `\b`, `\"`, `\\` and line continuations
// applied, unquoted whitespace around them trimmed, comments cut. Unquoted
// whitespace inside a value is kept verbatim, as git 2.46 and later keep it
// (older gits turned each such tab or CR into a space; values grex writes
// never hold one unescaped, so both read them alike). The text is
// taken as bytes (latin1) so an edit can keep every byte it does not touch;
// names and values come out as UTF-8. Used by the config manager (config.ts)
// and for `.gitmodules`; nothing else parses git's config syntax.

/** One `key = value` of a config file, with where it sits in the text. */
export interface ConfigEntry {
  /** Section and key lower-case; the subsection exactly as meant (`[branch "a\"b"]` → `a"b`), null when none. */
  section: string;
  sub: string | null;
  key: string;
  /** The value as git reads it; null for a bare `key` (git's implicit true). */
  value: string | null;
  /** 1-based line of the key. */
  line: number;
  /** Offsets in the byte (latin1) text: the key's first character, and just past the entry's last line. */
  start: number;
  end: number;
}

/** A section header and where the text of its section can take one more line. */
export interface ConfigSection {
  section: string;
  sub: string | null;
  /** Past the header's line, or past the section's last entry. */
  end: number;
}

export interface ParsedConfig {
  entries: ConfigEntry[];
  sections: ConfigSection[];
  /** The 1-based line git would call "bad config line", or null. Entries stop before it. */
  badLine: number | null;
}

const isAlpha = (c: string) => {
  const k = c.charCodeAt(0) | 0x20;
  return k >= 0x61 && k <= 0x7a;
};
const isKeyChar = (c: string) => {
  const k = c.charCodeAt(0);
  return isAlpha(c) || (k >= 0x30 && k <= 0x39) || k === 0x2d;
};
// git's isspace: its own ctype table (space, \t, \n, \r), not the C library's.
const isSpace = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\r";

/** Bytes held in a latin1 string, read back as UTF-8 (ASCII is both already). */
export const fromBytes = (s: string) => (/[\x80-\xff]/.test(s) ? Buffer.from(s, "latin1").toString("utf8") : s);
/** A UTF-8 string as the latin1 string of its bytes. */
export const toBytes = (s: string) => Buffer.from(s, "utf8").toString("latin1");

class Source {
  i = 0;
  line = 1;
  eof = false;
  constructor(readonly s: string) {
    if (s.startsWith("\xef\xbb\xbf")) this.i = 3; // a UTF-8 byte-order mark, skipped as git skips it
  }

  /** get_next_char: `\r\n` is `\n`; the end of the text is one last `\n`. */
  next(): string {
    if (this.i >= this.s.length) {
      if (!this.eof) this.line++;
      this.eof = true;
      return "\n";
    }
    let c = this.s[this.i++] as string;
    if (c === "\r" && this.s[this.i] === "\n") {
      this.i++;
      c = "\n";
    }
    if (c === "\n") this.line++;
    return c;
  }

  /** The characters from here that a value takes as they are (none of `\n \r " \\ ; #`, space, tab), consumed. */
  plainRun(): string {
    const s = this.s;
    const from = this.i;
    let j = from;
    for (; j < s.length; j++) {
      const k = s.charCodeAt(j);
      if (k === 10 || k === 13 || k === 34 || k === 92 || k === 59 || k === 35 || k === 32 || k === 9) break;
    }
    this.i = j;
    return s.slice(from, j);
  }

  /** The letters, digits and `-` from here (and `.` when `dots`), consumed. */
  keyRun(dots: boolean): string {
    const s = this.s;
    const from = this.i;
    let j = from;
    for (; j < s.length; j++) {
      const k = s.charCodeAt(j);
      const l = k | 0x20;
      if (!((l >= 0x61 && l <= 0x7a) || (k >= 0x30 && k <= 0x39) || k === 0x2d || (dots && k === 0x2e))) break;
    }
    this.i = j;
    return s.slice(from, j);
  }
}

/** parse_value: the value after `=`, up to the end of its (last continued) line; null on a bad escape or an open quote. */
function parseValue(src: Source): string | null {
  let out = "";
  let quote = false;
  let comment = false;
  let trim = -1;
  for (;;) {
    const c = src.next();
    if (c === "\n") {
      if (quote) return null;
      return trim >= 0 ? out.slice(0, trim) : out;
    }
    if (comment) continue;
    if (isSpace(c) && !quote) {
      if (trim < 0) trim = out.length;
      if (out.length > 0) out += c;
      continue;
    }
    if (!quote && (c === ";" || c === "#")) {
      comment = true;
      continue;
    }
    trim = -1;
    if (c === "\\") {
      const e = src.next();
      if (e === "\n") continue; // a continued line (or a backslash at the very end, which git ignores)
      if (e === "t") out += "\t";
      else if (e === "b") out += "\b";
      else if (e === "n") out += "\n";
      else if (e === "\\" || e === '"') out += e;
      else return null; // git refuses unknown escapes
      continue;
    }
    if (c === '"') {
      quote = !quote;
      continue;
    }
    out += c + src.plainRun();
  }
}

/** get_base_var and get_extended_base_var: the header after `[`; null when malformed. */
function parseHeader(src: Source): { section: string; sub: string | null } | null {
  let name = src.keyRun(true).toLowerCase();
  for (;;) {
    const c = src.next();
    if (src.eof) return null;
    if (c === "]") break;
    if (isSpace(c)) {
      if (c === "\n") return null;
      let d = src.next();
      while (isSpace(d)) {
        if (d === "\n") return null;
        d = src.next();
      }
      if (d !== '"') return null;
      let sub = "";
      for (;;) {
        let e = src.next();
        if (e === "\n") return null;
        if (e === '"') break;
        if (e === "\\") {
          e = src.next();
          if (e === "\n") return null;
        }
        sub += e;
      }
      if (src.next() !== "]") return null;
      return { section: name, sub: fromBytes(sub) }; // git takes `[ "x"]` too: an empty section name
    }
    if (!isKeyChar(c) && c !== ".") return null;
    name += c.toLowerCase();
  }
  if (name === "") return null;
  // The old `[section.sub]` spelling: git lower-cases the subsection too.
  const dot = name.indexOf(".");
  return dot < 0 ? { section: name, sub: null } : { section: name.slice(0, dot), sub: name.slice(dot + 1) };
}

// The usual lines, read whole by a regular expression (cold code stays fast:
// `status` reads a config per pack); any other line goes through the
// character-by-character reader above, which is git's.
const HEADER_LINE = /^[ \t]*\[([A-Za-z0-9.-]+)(?:[ \t]+"([^"\\]*)")?\][ \t]*(?:[#;].*)?$/;
const ENTRY_LINE = /^[ \t]*([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:(=)[ \t]*((?:[^ \t"\\;#]+[ \t]+)*[^ \t"\\;#]+)?[ \t]*(?:[#;].*)?)?$/;

interface Reading {
  src: Source;
  entries: ConfigEntry[];
  sections: ConfigSection[];
  current: ConfigSection | null;
  /** Where the next CR is (a line holding one is read carefully). */
  cr: number;
  /** The text split at newlines, and which of those lines starts at `lineStart`. */
  lines: string[];
  k: number;
  lineStart: number;
}

/** Read the line starting at `r.src.i` whole when it is a usual one (blank, comment, plain header, plain entry); false to read it carefully. */
function usualLine(r: Reading): boolean {
  const text = r.src.s;
  const from = r.src.i;
  const nl = text.indexOf("\n", from);
  const end = nl < 0 ? text.length : nl;
  const next = nl < 0 ? text.length : nl + 1;
  if (r.cr < from) r.cr = text.indexOf("\r", from) >>> 0; // the next CR (none: 2^32 - 1)
  if (r.cr < end) return false; // CRs: the careful reader
  // The line as its own string from one split of the text: JavaScriptCore matches a
  // regular expression against a slice of a string several times slower.
  while (r.lineStart < from) r.lineStart += (r.lines[r.k++] as string).length + 1;
  const line = r.lines[r.k] as string;
  let ws = from;
  while (ws < end && (text.charCodeAt(ws) === 32 || text.charCodeAt(ws) === 9)) ws++;
  const first = ws < end ? text.charCodeAt(ws) : -1;
  if (first === -1 || first === 35 || first === 59) {
    if (r.current && r.current.end === -1 && nl >= 0) r.current.end = next;
  } else if (first === 91) {
    const m = HEADER_LINE.exec(line);
    if (!m) return false;
    const name = (m[1] as string).toLowerCase();
    const dot = name.indexOf(".");
    const [section, sub] = m[2] !== undefined ? [name, fromBytes(m[2])] : dot < 0 ? [name, null] : [name.slice(0, dot), name.slice(dot + 1)];
    r.current = { section, sub, end: nl >= 0 ? next : -1 };
    r.sections.push(r.current);
  } else {
    const m = r.current === null ? null : ENTRY_LINE.exec(line);
    if (!m || r.current === null) return false;
    const value = m[2] === undefined ? null : fromBytes(m[3] ?? "");
    r.entries.push({ section: r.current.section, sub: r.current.sub, key: (m[1] as string).toLowerCase(), value, line: r.src.line, start: ws, end: next });
    r.current.end = next;
  }
  r.src.i = next;
  if (nl >= 0) r.src.line++;
  return true;
}

/**
 * Every entry and section header of a config file's text (latin1 bytes), in
 * order. `careful` reads every line character by character (the tests
 * compare both ways).
 */
export function parseConfigText(text: string, careful = false): ParsedConfig {
  const src = new Source(text);
  const r: Reading = { src, entries: [], sections: [], current: null, cr: -1, lines: careful ? [] : text.split("\n"), k: 0, lineStart: 0 };
  const { entries, sections } = r;
  let comment = false;
  for (;;) {
    const atLineStart = src.i < text.length && (src.i === 0 || text.charCodeAt(src.i - 1) === 10);
    if (!careful && !comment && atLineStart && usualLine(r)) continue;
    let current = r.current;
    const at = src.i;
    const line = src.line;
    const c = src.next();
    if (c === "\n") {
      if (src.eof) return { entries, sections, badLine: null };
      if (current && current.end === -1) current.end = src.i; // the header's own line ends here
      comment = false;
      continue;
    }
    if (comment || isSpace(c)) continue;
    if (c === "#" || c === ";") {
      comment = true;
      continue;
    }
    if (c === "[") {
      const h = parseHeader(src);
      if (h === null) return { entries, sections, badLine: src.line };
      r.current = { section: h.section, sub: h.sub, end: -1 };
      sections.push(r.current);
      continue;
    }
    if (!isAlpha(c)) return { entries, sections, badLine: line };
    // A key before any section is taken, as git takes it, with no section name (no lookup ever matches it).
    if (current === null) {
      current = r.current = { section: "", sub: null, end: -1 };
      sections.push(current);
    }
    const key = (c + src.keyRun(false)).toLowerCase();
    let d = src.next();
    while (d === " " || d === "\t") d = src.next();
    let value: string | null = null;
    if (d !== "\n") {
      if (d !== "=") return { entries, sections, badLine: src.line };
      value = parseValue(src);
      if (value === null) return { entries, sections, badLine: src.line - 1 };
      value = fromBytes(value);
    }
    entries.push({ section: current.section, sub: current.sub, key, value, line, start: at, end: src.i });
    current.end = src.i;
    if (src.eof) return { entries, sections, badLine: null };
  }
}

/** The sections' insertion points, settled: a header on the file's last line without a newline ends at the end. */
export function sectionEnd(s: ConfigSection, text: string): number {
  return s.end === -1 ? text.length : s.end;
}
