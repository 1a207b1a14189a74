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

/** C0 controls, DEL and C1 controls: git refuses them in URLs and ref names, and a newline in a value it writes to a config file starts a line of its own. */
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

const CONTROL_NAMES: Record<string, string> = { "\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\0": "a NUL byte" };

/**
 * The one rule every surface applies to a URL, ref or path before it goes
 * anywhere near git (CLI and MCP params, grex.jsonl, grex.lock.jsonl,
 * pack.yaml children, `.gitmodules`, REPOS.json, `import --scan`): null when
 * `value` holds no control character, else which one it holds ("a newline",
 * "the control character U+001B").
 */
export function controlCharIn(value: string): string | null {
  const m = CONTROL_RE.exec(value);
  if (m === null) return null;
  const c = m[0];
  return CONTROL_NAMES[c] ?? `the control character U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The end of every control-character refusal (callers may look for it to pick an exit code). */
export const GIT_REFUSES = "which git refuses in URLs, refs and paths";

/** `<what> contains a newline, which git refuses in URLs, refs and paths`, or null when `value` is clean. */
export function controlCharProblem(what: string, value: string): string | null {
  const c = controlCharIn(value);
  return c === null ? null : `${what} contains ${c}, ${GIT_REFUSES}`;
}
