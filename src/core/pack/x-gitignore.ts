// `x-gitignore: [patterns]` in pack.yaml: extra ignore patterns written into
// the pack's managed block (after the line that ignores the pack directory),
// as the Rust grex does. Checked at parse time: a pattern spanning lines, or
// looking like a block marker, could break the managed blocks around it.
import { integrityError } from "../base/errors.ts";
import { ignoreLinesFor } from "../workspace/gitignore.ts";

export const X_GITIGNORE = "x-gitignore";
/** Patterns of files the pack's own setup generates: written into the pack's `.git/info/exclude`. */
export const X_GENERATED = "x-generated";
/** The managed block in the pack's `.git/info/exclude` holding its `x-generated` patterns. */
export const GENERATED_BLOCK = "generated";

const MARKER_RE = /^\s*#\s*(?:>>>|<<<)/;

/** Throw an integrity error naming `file` when `x-gitignore` is present but not a list of one-line patterns. */
export function checkXGitignore(extensions: Record<string, unknown>, file: string): void {
  checkPatterns(extensions, X_GITIGNORE, file);
  checkPatterns(extensions, X_GENERATED, file);
}

function checkPatterns(extensions: Record<string, unknown>, key: string, file: string): void {
  const X_GITIGNORE = key;
  const value = extensions[key];
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
export function xGitignorePatterns(manifest: { extensions: Record<string, unknown> } | null | undefined, key = X_GITIGNORE): string[] {
  const value = manifest?.extensions[key];
  return Array.isArray(value) ? value.filter((p): p is string => typeof p === "string") : [];
}

/** The block for the pack's own `.git/info/exclude`: its `x-generated` patterns, or null (no block) when it declares none. */
export function generatedExcludeLines(manifest: { extensions: Record<string, unknown> } | null | undefined): string[] | null {
  const lines = xGitignorePatterns(manifest, X_GENERATED);
  return lines.length > 0 ? lines : null;
}

/** The managed block body for a pack at `relPath`: its directory, then its `x-gitignore` patterns. */
export function packIgnoreLines(relPath: string, manifest: { extensions: Record<string, unknown> } | null | undefined): string[] {
  const own = ignoreLinesFor(relPath);
  return [...own, ...xGitignorePatterns(manifest).filter((p) => !own.includes(p))];
}
