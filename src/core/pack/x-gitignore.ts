// `x-gitignore: [patterns]` in pack.yaml: extra ignore patterns written into
// the pack's managed block (after the line that ignores the pack directory),
// as the Rust grex does. Checked at parse time: a pattern spanning lines, or
// looking like a block marker, could break the managed blocks around it.
import { integrityError } from "../errors.ts";
import { ignoreLinesFor } from "../gitignore.ts";

export const X_GITIGNORE = "x-gitignore";

const MARKER_RE = /^\s*#\s*(?:>>>|<<<)/;

/** Throw an integrity error naming `file` when `x-gitignore` is present but not a list of one-line patterns. */
export function checkXGitignore(extensions: Record<string, unknown>, file: string): void {
  const value = extensions[X_GITIGNORE];
  if (value === undefined || value === null) return;
  const fail = (field: string, why: string) => {
    throw integrityError(`${file}: ${field} ${why}.`, { file, field });
  };
  if (!Array.isArray(value)) fail(X_GITIGNORE, "must be a list of .gitignore patterns; write each pattern as a '- target/' list item");
  (value as unknown[]).forEach((p, i) => {
    const field = `${X_GITIGNORE}[${i}]`;
    if (typeof p !== "string" || p.trim() === "") fail(field, "must be a non-empty string; quote the pattern");
    else if (/[\r\n]/.test(p)) fail(field, "spans several lines; give one pattern per list item");
    else if (MARKER_RE.test(p)) fail(field, "looks like a grex block marker; remove it");
  });
}

/** The pack's `x-gitignore` patterns (already checked at parse time). */
export function xGitignorePatterns(manifest: { extensions: Record<string, unknown> } | null | undefined): string[] {
  const value = manifest?.extensions[X_GITIGNORE];
  return Array.isArray(value) ? value.filter((p): p is string => typeof p === "string") : [];
}

/** The managed block body for a pack at `relPath`: its directory, then its `x-gitignore` patterns. */
export function packIgnoreLines(relPath: string, manifest: { extensions: Record<string, unknown> } | null | undefined): string[] {
  const own = ignoreLinesFor(relPath);
  return [...own, ...xGitignorePatterns(manifest).filter((p) => !own.includes(p))];
}
