// Append-only JSON-lines files (grex.jsonl, grex.lock.jsonl): what both need
// to append safely — a torn last line (a crash mid-append) is cut away before
// the next append, a complete last line missing its newline gets one, and
// every line is one write + fsync. The callers hold the manifest lock.
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from "node:fs";
import { basename } from "node:path";
import { errnoCode } from "../base/errors.ts";
import { appendDurable } from "../fs/fsutil.ts";

export interface WarnSink {
  warn(message: string): void;
}

/** Cut everything after byte `keep` (a torn write of `dropped` bytes) and make the cut durable. */
export function truncateTornTail(path: string, keep: number, dropped: number, opts: WarnSink | undefined): void {
  const fd = openSync(path, "r+");
  try {
    ftruncateSync(fd, keep);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  opts?.warn(`${basename(path)} ended in a partly written line (${dropped} bytes from an interrupted write); removed it and continued.`);
}

/**
 * Make an append-only JSON-lines file ready for appending (caller holds the
 * manifest lock). Returns the prefix the first appended line needs: "", or
 * "\n" when the last line is complete JSON missing its newline (hand edit).
 * A torn tail is truncated first (with a warning). Null when the file does
 * not exist.
 */
export function prepareJsonlAppend(path: string, opts?: WarnSink): string | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return null;
    throw err;
  }
  let tail: Buffer;
  let size: number;
  try {
    size = fstatSync(fd).size;
    if (size === 0) return "";
    const lastByte = Buffer.alloc(1);
    readSync(fd, lastByte, 0, 1, size - 1);
    if (lastByte[0] === 0x0a) return "";
    tail = readTail(fd, size);
  } finally {
    closeSync(fd);
  }
  const text = tail.toString("utf8");
  if (text.trim() === "") return "\n";
  try {
    JSON.parse(text);
    return "\n";
  } catch {
    truncateTornTail(path, size - tail.length, tail.length, opts);
    return "";
  }
}

/** The bytes after the last newline of an fd of `size` bytes, read backwards in chunks. */
function readTail(fd: number, size: number): Buffer {
  const chunks: Buffer[] = [];
  let pos = size;
  while (pos > 0) {
    const n = Math.min(4096, pos);
    pos -= n;
    const chunk = Buffer.alloc(n);
    readSync(fd, chunk, 0, n, pos);
    const nl = chunk.lastIndexOf(0x0a);
    if (nl !== -1) {
      chunks.unshift(chunk.subarray(nl + 1));
      break;
    }
    chunks.unshift(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Append whole lines (each ending in a newline) to a JSON-lines file. False
 * (nothing written) when the file does not exist and `create` is false.
 */
export function appendJsonlLines(path: string, lines: readonly string[], create: boolean, opts?: WarnSink): boolean {
  const prefix = prepareJsonlAppend(path, opts) ?? (create ? "" : null);
  if (prefix === null) return false;
  // One write(2) and one fsync for all of them: a kill or a power cut leaves at
  // worst a torn last line, which the next append cuts away (prepareJsonlAppend).
  if (lines.length > 0) appendDurable(path, prefix + lines.join(""));
  return true;
}

/** What `eachJsonLine` hands over for a line that is not JSON. */
export const NOT_JSON: unique symbol = Symbol("not JSON");

/**
 * Each non-blank line of JSON-lines text, parsed, in order: `visit(value,
 * lineNo, last)`, with NOT_JSON for a line that does not parse and `last`
 * for a final line with no newline after it (a possibly torn append). A
 * leading BOM (an editor's) is skipped; a trailing \r parses (CRLF files).
 * `visit` returning false stops the pass.
 */
export function eachJsonLine(text: string, visit: (value: unknown, lineNo: number, last: boolean) => boolean | void): void {
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let lineNo = 0;
  const len = text.length;
  while (start < len) {
    let end = text.indexOf("\n", start);
    const last = end === -1;
    if (last) end = len;
    lineNo++;
    if (end > start) {
      const line = text.slice(start, end);
      let value: unknown;
      try {
        value = JSON.parse(line); // parsed first: trimming every line cost more than the rare blank one
      } catch {
        value = line.trim() === "" ? undefined : NOT_JSON;
      }
      if (value !== undefined && visit(value, lineNo, last) === false) return;
    }
    start = end + 1;
  }
}
