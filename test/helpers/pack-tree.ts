// Builder for nested pack trees: upstream repositories whose .grex/pack.yaml
// declare children by URL, reachable over one transport — local paths, or the
// loopback smart-HTTP server (children then are http URLs of that same server).
// Repositories are made bottom-up, so every parent can name its children's URLs.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { bareCopy, commit, git, headSha, makeRepo, pushAll } from "./git-fixtures.ts";

export type Transport = "local" | "http";

export interface PackSpec {
  /** Repository name; also the default pack path (last URL segment without `.git`). */
  name: string;
  /** Pack type written to pack.yaml (default meta). */
  type?: string;
  /** Extra files of the first commit. */
  files?: Record<string, string>;
  children?: PackSpec[];
  /** Write no .grex/pack.yaml at all (a plain repository). */
  plain?: boolean;
}

export interface UpstreamRepo {
  name: string;
  /** Work tree where the test makes upstream commits. */
  work: string;
  /** What grex is given: the work tree's path, or an http URL of its bare copy. */
  url: string;
  /** Make the work tree's branches and tags visible at `url` (a no-op for local paths). */
  publish(): void;
  /** Commit `files` (null deletes) upstream and publish; returns the new sha. */
  commit(files: Record<string, string | null>, message: string): string;
  /** The upstream work tree's HEAD sha. */
  head(): string;
}

export interface TreeHost {
  transport: Transport;
  /** Directory for the upstream work trees. */
  workDir: string;
  /** HTTP only: the directory the server serves, and its base URL (plus an optional sub-path). */
  serveDir?: string;
  serverUrl?: string;
}

/** pack.yaml text for a pack with the given children URLs. */
export function packYaml(name: string, type: string, childUrls: string[], extra = ""): string {
  const lines = ['schema_version: "1"', `name: ${name}`, `type: ${type}`];
  if (childUrls.length > 0) {
    lines.push("children:");
    for (const u of childUrls) lines.push(`  - url: ${JSON.stringify(u)}`);
  }
  return `${lines.join("\n")}\n${extra}`;
}

/** Create one upstream repository with `files` on branch main. */
export function makeUpstream(host: TreeHost, name: string, files: Record<string, string>): UpstreamRepo {
  const work = join(host.workDir, name);
  if (existsSync(work)) throw new Error(`upstream ${name} already exists in ${host.workDir}`);
  makeRepo(work, files);
  let url = work;
  let publish = () => {};
  if (host.transport === "http") {
    if (!host.serveDir || !host.serverUrl) throw new Error("an http tree needs serveDir and serverUrl");
    mkdirSync(host.serveDir, { recursive: true });
    const bare = join(host.serveDir, `${name}.git`);
    bareCopy(work, bare);
    // The work tree's HEAD branch is the bare copy's HEAD too.
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main");
    url = `${host.serverUrl.replace(/\/+$/, "")}/${name}.git`;
    publish = () => pushAll(work, bare);
  }
  return {
    name,
    work,
    url,
    publish,
    commit(files, message) {
      const sha = commit(work, files, message);
      publish();
      return sha;
    },
    head: () => headSha(work),
  };
}

export interface PackTree {
  root: UpstreamRepo;
  /** Every repository of the tree by name. */
  repos: Map<string, UpstreamRepo>;
  /** Workspace-relative pack ids in pre-order (root first), with their depth, when the root is added at `rootPath`. */
  ids(rootPath?: string): Array<{ id: string; depth: number; name: string }>;
}

export function buildPackTree(host: TreeHost, spec: PackSpec): PackTree {
  const repos = new Map<string, UpstreamRepo>();
  const build = (s: PackSpec): UpstreamRepo => {
    const kids = (s.children ?? []).map(build);
    const files: Record<string, string> = { "README.md": `# ${s.name}\n`, ...s.files };
    if (!s.plain) {
      files[".grex/pack.yaml"] = packYaml(
        s.name,
        s.type ?? "meta",
        kids.map((k) => k.url),
      );
    }
    const repo = makeUpstream(host, s.name, files);
    repos.set(s.name, repo);
    return repo;
  };
  const root = build(spec);
  return {
    root,
    repos,
    ids(rootPath = spec.name) {
      const out: Array<{ id: string; depth: number; name: string }> = [];
      const walk = (s: PackSpec, id: string, depth: number) => {
        out.push({ id, depth, name: s.name });
        for (const c of s.children ?? []) walk(c, `${id}/${c.name}`, depth + 1);
      };
      walk(spec, rootPath, 0);
      return out;
    },
  };
}
