// The one shape every reader of another tool's repository list produces, and
// the small rules they share (paths, tags, refs, file:line errors). A leaf:
// peer-manifests.ts picks the reader, the readers import this.
import { basename, isAbsolute, relative, resolve, sep } from "node:path";
import { usageError } from "../base/errors.ts";

export type PeerFormat = "vcstool" | "west" | "repo" | "gita" | "mrconfig";

export const PEER_FORMATS: readonly PeerFormat[] = ["vcstool", "west", "repo", "gita", "mrconfig"];

export interface PeerEntry {
  /** Workspace-relative path, `/`-separated, no trailing slash. */
  path: string;
  url: string;
  /** Branch, tag or commit to pin; null: the remote's default branch. */
  ref: string | null;
  tags: string[];
  /** Where the entry stands, for messages: `file:line`. */
  at: string;
}

/** An entry the file declares that grex cannot take as it is (the rest still imports). */
export interface PeerProblem {
  path: string;
  error: string;
}

export interface PeerImport {
  format: PeerFormat;
  entries: PeerEntry[];
  problems: PeerProblem[];
  /** What the file says that grex does not carry over (e.g. repo's linkfile), one sentence each. */
  notes: string[];
}

export interface PeerContext {
  /** The file as the user named it, for messages. */
  file: string;
  /** Its absolute path (includes and relative paths resolve against its directory). */
  abs: string;
  text: string;
  workspaceRoot: string;
  home: string;
  /** Reads a file a repo manifest includes (absolute path); null when it cannot be read. */
  readInclude(abs: string): string | null;
  /** The origin URL of the local clone at `abs`; null when it has none or is not a clone. */
  originOf(abs: string): string | null;
}

/** A fault that stops the whole file: `file:line: what; what to do.` (exit 2). */
export function peerFileError(file: string, line: number | null, what: string, todo: string): Error {
  const at = line === null ? file : `${file}:${line}`;
  return usageError(`${at}: ${what}; ${todo}.`, { field: "from" });
}

/** Which tool wrote `file`, by its name first and its first content second. */
export function detectPeerFormat(file: string, text: string): PeerFormat | null {
  const name = basename(file).toLowerCase();
  if (name.endsWith(".repos")) return "vcstool";
  if (name === ".mrconfig" || name.endsWith(".mrconfig")) return "mrconfig";
  if (name.endsWith(".csv")) return "gita";
  if (name.endsWith(".xml")) return "repo";
  if (name === "west.yml" || name === "west.yaml") return "west";
  const head = text.replace(/^\uFEFF/, "").trimStart();
  if (head.startsWith("<")) return "repo";
  if (/^manifest:\s*(#.*)?$/m.test(text)) return "west";
  if (/^repositories:\s*(#.*)?$/m.test(text)) return "vcstool";
  if (/^\[[^\]\n]+\]\s*$/m.test(text) && /^\s*checkout\s*=/m.test(text)) return "mrconfig";
  return null;
}

/** `a/b/`, `./a//b` → `a/b`; backslashes are kept (the path rule refuses them). */
export function normalizePeerPath(p: string): string {
  return p
    .split("/")
    .filter((part) => part !== "" && part !== ".")
    .join("/");
}

/**
 * A checkout location another tool recorded as a local path: inside the
 * workspace it keeps its place; outside it gets `fallbackName` (its last
 * directory name), with a note, since grex clones every pack inside the workspace.
 */
export function workspacePathOf(ctx: PeerContext, abs: string, fallbackName: string, notes: string[]): string {
  const rel = relative(ctx.workspaceRoot, abs);
  if (rel !== "" && !rel.startsWith("..") && !isAbsolute(rel)) return rel.split(sep).join("/");
  const name = normalizePeerPath(fallbackName) || basename(abs);
  notes.push(`${abs} lies outside the workspace; it is registered as '${name}' and sync clones it there.`);
  return name;
}

/** `~/x` and `~` as a shell would expand them for the current user. */
export function expandHome(p: string, home: string): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return resolve(home, p.slice(2));
  return p;
}

/** Splits a tag list the way each tool writes one (commas and/or white space), dropping empties and duplicates. */
export function splitTags(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter((t) => t !== ""))];
}

/** repo and west name refs in full; grex pins take the short form git would resolve. */
export function shortRef(rev: string): string {
  return rev.replace(/^refs\/(heads|tags)\//, "");
}

