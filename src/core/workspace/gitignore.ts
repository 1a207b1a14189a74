// Managed blocks in .gitignore / .git/info/exclude (SPEC §2.3):
//
//   # >>> grex:<id> >>>
//   /<path>/
//   # <<< grex:<id> <<<
//
// Everything outside blocks is kept byte for byte, the file's line ending
// (LF or CRLF, taken from its first line break) is kept, a new block goes at
// the end, and writing the same block again returns the same text.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { integrityError } from "../base/errors.ts";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { withFileLockSync } from "../locks/locks.ts";
import { eolOf, joinLines, type Line, splitLines } from "../base/lines.ts";

const OPEN = /^# >>> grex:(\S+) >>>[ \t]*$/;
const CLOSE = /^# <<< grex:(\S+) <<<[ \t]*$/;
const openMarker = (id: string) => `# >>> grex:${id} >>>`;
const closeMarker = (id: string) => `# <<< grex:${id} <<<`;

export interface BlockProblem {
  /** 1-based line of the offending marker. */
  line: number;
  id: string;
  problem: "unclosed" | "unopened" | "duplicate";
}

/** A complete block: opener at `start`, closer at `end` (line indexes). */
interface Span {
  id: string;
  start: number;
  end: number;
  /** Indexes of stray closers (other ids) inside the block; not content. */
  strays: number[];
}

interface Scan {
  lines: Line[];
  spans: Span[];
  problems: BlockProblem[];
  /** Line indexes `repairBlocks` drops: unclosed openers and unopened closers. */
  broken: Set<number>;
}

// Markers do not nest. An opener while a block is open leaves that block
// unclosed; a closer for another id inside a block is a stray (unopened) and
// the block goes on; a closer outside any block is unopened.
function scan(text: string): Scan {
  const lines = splitLines(text);
  const spans: Span[] = [];
  const problems: BlockProblem[] = [];
  const broken = new Set<number>();
  const complete = new Set<string>();
  let open: { id: string; start: number; strays: number[] } | null = null;
  const unclosed = (o: { id: string; start: number; strays: number[] }) => {
    problems.push({ line: o.start + 1, id: o.id, problem: "unclosed" });
    broken.add(o.start);
  };
  lines.forEach((l, i) => {
    const o = OPEN.exec(l.text);
    if (o) {
      if (open) unclosed(open);
      open = { id: o[1] as string, start: i, strays: [] };
      return;
    }
    const c = CLOSE.exec(l.text);
    if (!c) return;
    const id = c[1] as string;
    if (open && open.id === id) {
      if (complete.has(id)) problems.push({ line: open.start + 1, id, problem: "duplicate" });
      complete.add(id);
      spans.push({ id, start: open.start, end: i, strays: open.strays });
      open = null;
      return;
    }
    problems.push({ line: i + 1, id, problem: "unopened" });
    broken.add(i);
    if (open) open.strays.push(i);
  });
  if (open) unclosed(open);
  problems.sort((a, b) => a.line - b.line);
  return { lines, spans, problems, broken };
}

/** Blocks by id (first copy wins for duplicates) and every marker problem. */
export function parseBlocks(text: string): { blocks: Map<string, string[]>; problems: BlockProblem[] } {
  const { lines, spans, problems } = scan(text);
  const blocks = new Map<string, string[]>();
  for (const s of spans) {
    if (blocks.has(s.id)) continue;
    const body: string[] = [];
    for (let i = s.start + 1; i < s.end; i++) if (!s.strays.includes(i)) body.push((lines[i] as Line).text);
    blocks.set(s.id, body);
  }
  return { blocks, problems };
}

function checkId(id: string): void {
  if (!/^\S+$/.test(id)) throw new Error(`invalid grex block id ${JSON.stringify(id)}`);
}

/** Scan for an edit: an unclosed opener makes the block extents unknowable, so refuse. */
function scanForEdit(text: string, where: string): Scan {
  const s = scan(text);
  const bad = s.problems.find((p) => p.problem === "unclosed");
  if (bad) {
    throw integrityError(
      `${where} line ${bad.line} opens grex block '${bad.id}' but never closes it; run \`grex doctor --fix\` to repair it.`,
      { file: where, line: bad.line, id: bad.id },
    );
  }
  return s;
}

/** Line indexes covered by `spans`, markers included. */
function spanLines(spans: Span[]): Set<number> {
  const out = new Set<number>();
  for (const s of spans) for (let i = s.start; i <= s.end; i++) out.add(i);
  return out;
}

/**
 * Set block `id` to `body`. An existing block is rewritten in place (later
 * duplicates of it removed); a new one is appended at the end, after a line
 * break if the text does not end with one.
 */
export function upsertBlock(text: string, id: string, body: string[], where = ".gitignore"): string {
  const eol = eolOf(text);
  const block = blockLines(id, body, eol);
  const { lines, spans } = scanForEdit(text, where);
  const mine = spans.filter((s) => s.id === id);
  const first = mine[0];
  if (first) {
    // Keep whatever line ending followed the old closer (possibly none at EOF).
    (block[block.length - 1] as Line).eol = (lines[first.end] as Line).eol;
    const dupes = spanLines(mine.slice(1));
    const rest = lines.slice(first.end + 1).filter((_, k) => !dupes.has(first.end + 1 + k));
    const next = joinLines([...lines.slice(0, first.start), ...block, ...rest]);
    return next === text ? text : next;
  }
  const prefix = text === "" || text.endsWith("\n") ? text : text + eol;
  return prefix + joinLines(block);
}

/** Block `id` with `body`, its markers and every line ending in `eol`; throws on an id or a line a block cannot hold. */
function blockLines(id: string, body: string[], eol: string): Line[] {
  checkId(id);
  for (const l of body) if (/[\r\n]/.test(l)) throw new Error(`grex block line ${JSON.stringify(l)} contains a line break`);
  return [openMarker(id), ...body, closeMarker(id)].map((t) => ({ text: t, eol }));
}

/** Remove every copy of block `id`; the text is unchanged when there is none. */
export function removeBlock(text: string, id: string, where = ".gitignore"): string {
  checkId(id);
  const { lines, spans } = scanForEdit(text, where);
  const mine = spans.filter((s) => s.id === id);
  if (mine.length === 0) return text;
  const drop = spanLines(mine);
  return joinLines(lines.filter((_, i) => !drop.has(i)));
}

/**
 * Make the markers well formed again (for `grex doctor --fix`), never losing a
 * user's line:
 * - an opener that is never closed is dropped; the lines after it become
 *   ordinary lines (capturing them into a block could later delete a user's
 *   pattern; the next sync writes a proper block);
 * - a closer without its opener (including a closer for another id inside a
 *   block) is dropped;
 * - a repeated block is dropped whole; the first copy stays.
 */
export function repairBlocks(text: string): string {
  const { lines, spans, broken } = scan(text);
  const seen = new Set<string>();
  const dupes: Span[] = [];
  for (const s of spans) {
    if (seen.has(s.id)) dupes.push(s);
    seen.add(s.id);
  }
  const drop = spanLines(dupes);
  for (const i of broken) drop.add(i);
  if (drop.size === 0) return text;
  return joinLines(lines.filter((_, i) => !drop.has(i)));
}

function readText(path: string): { text: string; encoding: "utf8" | "latin1" } {
  const bytes = readFileSync(path);
  try {
    return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes), encoding: "utf8" };
  } catch {
    // Not UTF-8: latin1 maps every byte to one char and back, so user bytes survive.
    return { text: bytes.toString("latin1"), encoding: "latin1" };
  }
}

/**
 * Set (`lines`) or remove (`null`) block `id` in an ignore file; writes
 * atomically and only when the content changes. Returns whether it changed.
 * A missing file counts as empty; removing from a missing file creates nothing.
 */
export function updateIgnoreFile(path: string, id: string, lines: string[] | null): boolean {
  return updateIgnoreBlocks(path, [[id, lines]]);
}

/**
 * Several blocks of one ignore file in one locked read-modify-write (a sync
 * of N packs: one pass over the file, not N). Blocks already as wanted cost
 * nothing; the file is written once, only if it changes.
 */
export function updateIgnoreBlocks(path: string, updates: Array<[id: string, lines: string[] | null]>): boolean {
  if (updates.every(([, lines]) => lines === null) && !existsSync(path)) return false;
  const what = `its block ${updates.map(([id]) => `'${id}'`).join(", ")}`;
  return editIgnoreFile(path, what, (text) => applyBlocks(text, updates, path));
}

const sameLines = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((l, i) => l === b[i]);

function applyBlocks(text: string, updates: ReadonlyArray<[string, string[] | null]>, path: string): string {
  // Well-formed markers: skip the blocks that are already right (each edit below rescans the text).
  const { blocks, problems } = parseBlocks(text);
  const pending =
    problems.length > 0
      ? updates
      : updates.filter(([id, lines]) => {
          const cur = blocks.get(id);
          return lines === null ? cur !== undefined : cur === undefined || !sameLines(cur, lines);
        });
  // Only new blocks, on well-formed markers (a new workspace's, or packs added): appended in one pass, as upsertBlock
  // appends each one (it rescans the whole text, so n new blocks would cost n scans); the line ending is the text's throughout.
  if (problems.length === 0 && pending.length > 1 && new Set(pending.map(([id]) => id)).size === pending.length && pending.every(([id, lines]) => lines !== null && !blocks.has(id))) {
    const eol = eolOf(text);
    const tail = pending.map(([id, lines]) => joinLines(blockLines(id, lines as string[], eol))).join("");
    return (text === "" || text.endsWith("\n") ? text : text + eol) + tail;
  }
  let next = text;
  for (const [id, lines] of pending) next = lines === null ? removeBlock(next, id, path) : upsertBlock(next, id, lines, path);
  return next;
}

/**
 * The one way to rewrite an ignore file: `edit` maps its text to the new text
 * under a lock on the file (several grex processes, parallel imports say, may
 * edit it; read-modify-write without it loses blocks), writing through a
 * symlink to its target (the link stays a link), atomically, only on change.
 */
export function editIgnoreFile(path: string, what: string, edit: (text: string) => string): boolean {
  return withFileLockSync(path, () => editLocked(path, what, edit));
}

function editLocked(path: string, what: string, edit: (text: string) => string): boolean {
  const target = realpathSync(path); // write through a symlinked ignore file, not over the link
  const { text, encoding } = readText(target);
  const next = edit(text);
  if (next === text) return false;
  if (encoding === "latin1" && /[^\x00-\xff]/.test(next)) {
    throw integrityError(`${path} is not UTF-8 text, so grex cannot write ${what} there; convert the file to UTF-8.`);
  }
  atomicWriteFile(target, Buffer.from(next, encoding));
  return true;
}

/** Ids of the well-formed blocks in an ignore file ([] when it is missing). */
export function blockIdsIn(path: string): string[] {
  if (!existsSync(path)) return [];
  return [...parseBlocks(readText(path).text).blocks.keys()];
}

/**
 * The block body that ignores a pack directory: one anchored directory
 * pattern, `/` separators, with gitignore's glob characters escaped.
 */
export function ignoreLinesFor(relPath: string): string[] {
  const p = relPath
    .replaceAll("\\", "/")
    .replace(/^(\.\/)+/, "")
    .replace(/^\/+|\/+$/g, "");
  if (p === "") throw new Error(`ignoreLinesFor needs a relative path, got ${JSON.stringify(relPath)}`);
  return [`/${p.replace(/[*?[]/g, (c) => `\\${c}`)}/`];
}
