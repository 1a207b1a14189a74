// Setup-drift checks: for each action kind that records an expectation
// (its `expect`), the cheap test `status` runs later to see whether that
// still holds: a stat, a readlink or a file read, never a re-run. They live
// apart from the actions so that a report loads neither the actions' argument
// schemas nor their apply and undo code.
import { readlinkSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { blockBody, closeMarker, openMarker } from "./env-block.ts";
import { lstatOrNull, statOrNull } from "./paths.ts";
import type { Expectation } from "./types.ts";

/**
 * What differs from the recorded expectation, or null when it still holds.
 * Files are read through `read` (a file's text, or null when it does not
 * exist), shared by the checks of one report.
 */
export type Check = (fact: Expectation, read: (path: string) => string | null) => string | null;

/** Where the link at `dst` points (resolved), or null when dst is not a link. */
export function linkTarget(dst: string): string | null {
  if (!lstatOrNull(dst)?.isSymbolicLink()) return null;
  return resolve(dirname(dst), readlinkSync(dst));
}

export function describeExisting(dst: string): string {
  const st = lstatOrNull(dst);
  if (st?.isSymbolicLink()) return `a link to ${readlinkSync(dst)}`;
  return st?.isDirectory() ? "a directory" : "a file";
}

const mkdir: Check = (fact) => {
  if (statOrNull(fact.path)?.isDirectory()) return null;
  return lstatOrNull(fact.path) ? "exists but is not a directory" : "directory is missing";
};

const symlink: Check = (fact) => {
  const src = String(fact.src);
  const points = linkTarget(fact.path);
  if (points === src) return null;
  if (points !== null) return `links to ${points} instead of ${src}`;
  return lstatOrNull(fact.path) ? `is ${describeExisting(fact.path)}, not a link to ${src}` : `link to ${src} is missing`;
};

const env: Check = (fact, readText) => {
  const name = String(fact.name);
  for (const [file, line] of Object.entries(fact.files as Record<string, string>)) {
    const text = readText(file);
    if (text === null) return `${file} is missing (it held the ${name} block)`;
    // The common case in one search: the whole block, exactly as apply writes it.
    const block = [openMarker(name), line, closeMarker(name)];
    if (text.includes(block.join("\n")) || text.includes(block.join("\r\n"))) continue;
    let body: string[] | null;
    try {
      body = blockBody(text, name);
    } catch {
      return `${file} has an unclosed ${name} block`;
    }
    if (body === null) return `${file} has no ${name} block`;
    if (body.length !== 1 || body[0] !== line) return `${file} sets ${name} differently (${body.join(" ")})`;
  }
  return null;
};

/** The check of every action kind with an `expect` (a test holds the two lists level). */
export const CHECKS: Readonly<Record<string, Check>> = { mkdir, symlink, env };
