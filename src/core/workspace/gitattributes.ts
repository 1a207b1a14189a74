// The workspace's `.gitattributes` lines that make git merge grex.jsonl and
// grex.lock.jsonl as unions: both are sets of lines (an event log folded in
// one pass, and last-line-wins lock entries), so when two branches each add
// lines, keeping both sides is the merge the user wants. Conflicting changes
// to the same pack are then found by `grex doctor` (manifest-conflicts.ts,
// lockfile.ts lockConflicts) instead of by git's conflict markers.
// The workspace's .gitignore too: `grex add` appends the new pack's block at
// its end, so two branches adding packs touch the same spot; an ignore file
// is a list of patterns, and keeping both sides' lines is right there as well
// (a block both sides changed is rewritten by the next sync; doctor checks it).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { LOCK_FILE, MANIFEST_FILE } from "../base/workspace.ts";

export const GITATTRIBUTES = ".gitattributes";
export const MERGE_LINES: readonly string[] = [`/${MANIFEST_FILE} merge=union`, `/${LOCK_FILE} merge=union`, "/.gitignore merge=union"];

/** The files whose union-merge line is missing from the workspace's .gitattributes. */
export function missingMergeLines(root: string): string[] {
  const path = join(root, GITATTRIBUTES);
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  return MERGE_LINES.filter((line) => !hasAttribute(text, line));
}

/** A line naming the same file (with or without the leading slash) and setting merge=union. */
function hasAttribute(text: string, wanted: string): boolean {
  const file = (wanted.split(/\s+/)[0] as string).replace(/^\//, "");
  return text.split(/\r?\n/).some((l) => {
    const parts = l.trim().split(/\s+/);
    return parts.length > 1 && (parts[0] as string).replace(/^\//, "") === file && parts.slice(1).includes("merge=union");
  });
}

/** Add the missing lines at the end (temp + rename); returns what was added. A no-op writes nothing. */
export function ensureMergeLines(root: string): string[] {
  const missing = missingMergeLines(root);
  if (missing.length === 0) return [];
  const path = join(root, GITATTRIBUTES);
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  const eol = text.includes("\r\n") ? "\r\n" : "\n"; // keep the file's line endings
  const sep = text === "" || text.endsWith("\n") ? "" : eol;
  const header = text.includes("# grex: merge") ? "" : `# grex: merge the workspace files as unions (grex doctor reports conflicting changes to one pack)${eol}`;
  atomicWriteFile(path, `${text}${sep}${header}${missing.join(eol)}${eol}`);
  return missing;
}
