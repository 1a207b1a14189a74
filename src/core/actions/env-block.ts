// The env action's managed blocks as text: find, read, set and drop the
// `# >>> grex:env:NAME >>>` ... `# <<< grex:env:NAME <<<` block of one
// variable, keeping every other line (and its line ending) as it was. Kept
// apart from the action itself: `status` reads blocks (checks.ts) without
// loading the action's argument schema.
import { eolOf, joinLines, type Line, splitLines } from "../base/lines.ts";

export const openMarker = (name: string) => `# >>> grex:env:${name} >>>`;
export const closeMarker = (name: string) => `# <<< grex:env:${name} <<<`;

export class UnclosedBlock extends Error {}

/** Line indexes of the block's markers, or null when there is none. */
function findBlock(lines: Line[], name: string): { start: number; end: number } | null {
  const start = lines.findIndex((l) => l.text.trimEnd() === openMarker(name));
  if (start === -1) return null;
  const rel = lines.slice(start + 1).findIndex((l) => l.text.trimEnd() === closeMarker(name));
  if (rel === -1) throw new UnclosedBlock(`line ${start + 1}`);
  return { start, end: start + 1 + rel };
}

export function blockBody(text: string, name: string): string[] | null {
  const lines = splitLines(text);
  const b = findBlock(lines, name);
  return b ? lines.slice(b.start + 1, b.end).map((l) => l.text) : null;
}

/** Set the block's body; a new block goes at the end. `addedEol`: a line break had to be added before it. */
export function setBlock(text: string, name: string, body: string[]): { text: string; addedEol: boolean } {
  const lines = splitLines(text);
  const eol = eolOf(text);
  const b = findBlock(lines, name);
  if (b) {
    const bodyLines = body.map((t) => ({ text: t, eol }));
    return { text: joinLines([...lines.slice(0, b.start + 1), ...bodyLines, ...lines.slice(b.end)]), addedEol: false };
  }
  const addedEol = text !== "" && !text.endsWith("\n");
  const block = [openMarker(name), ...body, closeMarker(name)].map((t) => t + eol).join("");
  return { text: (addedEol ? text + eol : text) + block, addedEol };
}

/** Take the block out; `stripEol`: also drop the line break setBlock added before it (when it is still last). */
export function dropBlock(text: string, name: string, stripEol: boolean): string {
  const lines = splitLines(text);
  const b = findBlock(lines, name);
  if (!b) return text;
  const last = b.end === lines.length - 1;
  const out = joinLines([...lines.slice(0, b.start), ...lines.slice(b.end + 1)]);
  if (stripEol && last) return out.replace(/\r?\n$/, "");
  return out;
}
