// How packs are named and located: ids, workspace paths, the default path for
// a URL, and when two URLs name the same repository. Every other module asks
// here instead of keeping its own regex.

/** One path segment: a bare directory name (a top-level pack id, a child's path). */
export const BARE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A pack id / workspace-relative pack path: bare-name segments joined by `/` (never `.`, `..`, absolute). */
export const PACK_PATH_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/** A tag (`add --tag`): a short word of letters, digits, '.', '_', '-', starting with a letter or digit. */
export const TAG_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A bare directory name that is not `.` or `..`. */
export const isBareName = (s: string): boolean => BARE_NAME_RE.test(s) && s !== "." && s !== "..";

/** Default path for a URL: its last segment without `.git` (URLs, scp-style `git@host:org/repo.git` and local paths). */
export const defaultPathFromUrl = (url: string): string =>
  (url.replace(/[/\\]+$/, "").split(/[/\\:]/).pop() ?? "").replace(/\.git$/, "");

/** Two URLs name the same repository when these are equal (trailing slashes and `.git` do not count). */
export const urlKey = (url: string): string => url.replace(/\/+$/, "").replace(/\.git$/, "");

// ---------------------------------------------------------------------------
// The one path rule for top-level packs (every surface: CLI, MCP, grex.jsonl,
// import). A pack may live at any relative path (`libs/core`), its id being
// that path; no pack's directory may lie inside another's, nor hold one (a
// child lives inside its parent, but children come from pack.yaml, never from
// these surfaces). Compared case-insensitively: on macOS and Windows `Libs`
// and `libs` are one directory, and workspaces move between systems.

/** Why `path` cannot be a pack path, or null: name segments joined by `/` (no `.`/`..`, empty, absolute or `\`). */
export function packPathProblem(path: string): string | null {
  if (path === "") return "it is empty";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "it is absolute; give a path relative to the workspace root";
  if (path.includes("\\")) return "it contains '\\'; separate directories with '/'";
  for (const seg of path.split("/")) {
    if (seg === "") return "it has an empty segment ('//' or a trailing '/')";
    if (seg === "." || seg === "..") return `it contains '${seg}'`;
    if (!BARE_NAME_RE.test(seg)) return `segment '${seg}' is not a plain name (letters, digits, '.', '_', '-', not starting with '.', '_' or '-')`;
  }
  return null;
}

/** The registered path `path` would lie inside or hold (the closest first), or null. `path` itself does not count. */
export function packPathOverlap(path: string, registered: Iterable<string>): string | null {
  const me = path.toLowerCase();
  let inside: string | null = null;
  let holds: string | null = null;
  for (const other of registered) {
    const o = other.toLowerCase();
    if (o === me) continue;
    if (me.startsWith(`${o}/`)) {
      if (inside === null || other.length > inside.length) inside = other;
    } else if (holds === null && o.startsWith(`${me}/`)) holds = other;
  }
  return inside ?? holds;
}

/** The one sentence for an overlap found by packPathOverlap. */
export function overlapReason(path: string, other: string): string {
  return path.toLowerCase().startsWith(`${other.toLowerCase()}/`)
    ? `it lies inside pack '${other}' (a directory inside a pack belongs to that pack's repository; only its own children, from its pack.yaml, live there)`
    : `pack '${other}' lies inside it (a pack's directory cannot hold another pack)`;
}

/**
 * The first pair of registered paths where one lies inside the other (same
 * case-insensitive comparison), in O(n × depth): each path's leading
 * directories looked up among the others. `[inner, outer]`, or null.
 */
export function nestedPackPair(paths: Iterable<string>): [string, string] | null {
  const byLower = new Map<string, string>();
  const all: string[] = [];
  for (const p of paths) {
    all.push(p);
    byLower.set(p.toLowerCase(), p);
  }
  for (const p of all) {
    if (!p.includes("/")) continue;
    const lower = p.toLowerCase();
    for (let cut = lower.indexOf("/"); cut > 0; cut = lower.indexOf("/", cut + 1)) {
      const outer = byLower.get(lower.slice(0, cut));
      if (outer !== undefined) return [p, outer];
    }
  }
  return null;
}
