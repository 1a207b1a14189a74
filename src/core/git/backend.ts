// One git interface used by every verb (SPEC §6), and cheap synchronous
// readers for `ls`/`status` that never load isomorphic-git.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export interface HeadInfo {
  sha: string;
  branch: string | null;
}

export interface GitBackend {
  /** All-or-nothing clone into `dir` (which must not exist), then move to `ref` (null = remote HEAD). */
  clone(url: string, dir: string, opts: { ref: string | null; signal: AbortSignal }): Promise<HeadInfo>;
  /** Fetch, then move to `ref`: branch → fast-forward only; tag/sha → detached. */
  update(dir: string, url: string, opts: { ref: string | null; signal: AbortSignal }): Promise<{ before: HeadInfo; after: HeadInfo }>;
  head(dir: string): Promise<HeadInfo>;
  /** Uncommitted changes to tracked files, or untracked files git would not ignore. */
  isDirty(dir: string): Promise<boolean>;
  remoteUrl(dir: string): Promise<string | null>;
}

export type Transport = "http" | "local" | "ssh";

export function transportOf(url: string): Transport {
  if (/^https?:\/\//i.test(url)) return "http";
  if (/^ssh:\/\//i.test(url) || /^[\w.-]+@[\w.-]+:/.test(url)) return "ssh";
  return "local";
}

export function backendFor(url: string): GitBackend {
  return transportOf(url) === "ssh" ? systemGitBackend : inProcessBackend;
}

// The backends load their heavy modules on first use.
const inProcessBackend: GitBackend = {
  clone: async (...a) => (await import("./in-process.ts")).inProcess.clone(...a),
  update: async (...a) => (await import("./in-process.ts")).inProcess.update(...a),
  head: async (...a) => (await import("./in-process.ts")).inProcess.head(...a),
  isDirty: async (...a) => (await import("./in-process.ts")).inProcess.isDirty(...a),
  remoteUrl: async (...a) => (await import("./in-process.ts")).inProcess.remoteUrl(...a),
};

const systemGitBackend: GitBackend = {
  clone: async (...a) => (await import("./system-git.ts")).systemGit.clone(...a),
  update: async (...a) => (await import("./system-git.ts")).systemGit.update(...a),
  head: async (...a) => (await import("./in-process.ts")).inProcess.head(...a),
  isDirty: async (...a) => (await import("./in-process.ts")).inProcess.isDirty(...a),
  remoteUrl: async (...a) => (await import("./in-process.ts")).inProcess.remoteUrl(...a),
};

export function isGitRepo(dir: string): boolean {
  try {
    return statSync(join(dir, ".git")).isDirectory();
  } catch {
    return false;
  }
}

function readRefSync(gitdir: string, ref: string): string | null {
  const loose = join(gitdir, ref);
  if (existsSync(loose)) return readFileSync(loose, "utf8").trim();
  const packed = join(gitdir, "packed-refs");
  if (!existsSync(packed)) return null;
  for (const line of readFileSync(packed, "utf8").split("\n")) {
    const [sha, name] = line.split(" ");
    if (name === ref && sha && !line.startsWith("#")) return sha;
  }
  return null;
}

/** HEAD's commit and branch from the files, or null when unreadable. */
export function readHeadSync(dir: string): HeadInfo | null {
  const gitdir = join(dir, ".git");
  try {
    const head = readFileSync(join(gitdir, "HEAD"), "utf8").trim();
    if (!head.startsWith("ref: ")) return { sha: head, branch: null };
    const ref = head.slice(5);
    const sha = readRefSync(gitdir, ref);
    return sha ? { sha, branch: ref.replace(/^refs\/heads\//, "") } : null;
  } catch {
    return null;
  }
}

/** `remote.origin.url` from .git/config, or null. */
export function originUrlSync(dir: string): string | null {
  try {
    const text = readFileSync(join(dir, ".git", "config"), "utf8");
    let inOrigin = false;
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line.startsWith("[")) inOrigin = /^\[remote\s+"origin"\]$/.test(line);
      else if (inOrigin) {
        const m = /^url\s*=\s*(.*)$/.exec(line);
        if (m) return (m[1] as string).trim();
      }
    }
    return null;
  } catch {
    return null;
  }
}
