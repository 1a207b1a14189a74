// How packs are named and located: ids, workspace paths, the default path for
// a URL, and when two URLs name the same repository. Every other module asks
// here instead of keeping its own regex.

/** One path segment: a bare directory name (a top-level pack id, a child's path). */
export const BARE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A pack id / workspace-relative pack path: bare-name segments joined by `/` (never `.`, `..`, absolute). */
export const PACK_PATH_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/** A bare directory name that is not `.` or `..`. */
export const isBareName = (s: string): boolean => BARE_NAME_RE.test(s) && s !== "." && s !== "..";

/** Default path for a URL: its last segment without `.git` (URLs, scp-style `git@host:org/repo.git` and local paths). */
export const defaultPathFromUrl = (url: string): string =>
  (url.replace(/[/\\]+$/, "").split(/[/\\:]/).pop() ?? "").replace(/\.git$/, "");

/** Two URLs name the same repository when these are equal (trailing slashes and `.git` do not count). */
export const urlKey = (url: string): string => url.replace(/\/+$/, "").replace(/\.git$/, "");
