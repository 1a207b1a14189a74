// Line-level text editing that keeps every byte outside the edited lines,
// including each line's own ending (LF or CRLF) and a missing final newline.

export interface Line {
  /** The line without its ending. */
  text: string;
  /** "\n", "\r\n", or "" for a last line without a newline. */
  eol: string;
}

export function splitLines(text: string): Line[] {
  const out: Line[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    if (nl === -1) {
      out.push({ text: text.slice(start), eol: "" });
      break;
    }
    const crlf = nl > start && text[nl - 1] === "\r";
    out.push({ text: text.slice(start, crlf ? nl - 1 : nl), eol: crlf ? "\r\n" : "\n" });
    start = nl + 1;
  }
  return out;
}

export const joinLines = (lines: readonly Line[]): string => lines.map((l) => l.text + l.eol).join("");

/** The file's line ending: that of its first line break; LF for a file without one. */
export function eolOf(text: string): string {
  const nl = text.indexOf("\n");
  return nl > 0 && text[nl - 1] === "\r" ? "\r\n" : "\n";
}
