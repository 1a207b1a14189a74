// vcstool's `.repos` and west's `west.yml`: both YAML, both read with their
// lines kept so a problem names where it stands.
import type { Document, LineCounter, Node, YAMLMap } from "yaml";
import {
  normalizePeerPath,
  peerFileError,
  shortRef,
  type PeerContext,
  type PeerEntry,
  type PeerImport,
  type PeerProblem,
} from "./peer-common.ts";

interface YamlFile {
  doc: Document;
  lines: LineCounter;
  YAML: typeof import("yaml");
}

async function parseYaml(ctx: PeerContext, tool: string): Promise<YamlFile> {
  const YAML = await import("yaml");
  const lines = new YAML.LineCounter();
  const doc = YAML.parseDocument(ctx.text, { lineCounter: lines, uniqueKeys: true });
  const err = doc.errors[0];
  if (err) {
    const line = err.linePos?.[0]?.line ?? null;
    throw peerFileError(ctx.file, line, `is not valid YAML (${err.code.toLowerCase().replace(/_/g, " ")})`, `fix the file as ${tool} would read it`);
  }
  return { doc, lines, YAML };
}

function lineOf(f: YamlFile, node: unknown): number | null {
  const range = f.YAML.isNode(node) ? (node as Node).range : undefined;
  return range ? f.lines.linePos(range[0]).line : null;
}

/** A scalar as text (numbers and booleans as YAML wrote them: `version: 1.10` stays "1.10"); null when absent or not a scalar. */
function text(f: YamlFile, map: YAMLMap, key: string): string | null {
  const node = map.get(key, true);
  if (!f.YAML.isScalar(node) || node.value === null || node.value === undefined) return null;
  return node.source ?? String(node.value);
}

function at(ctx: PeerContext, line: number | null): string {
  return line === null ? ctx.file : `${ctx.file}:${line}`;
}

/** vcstool: `repositories: { <path>: { type, url, version } }`, as `vcs export` writes it. */
export async function readVcstool(ctx: PeerContext): Promise<PeerImport> {
  const f = await parseYaml(ctx, "vcstool");
  const root = f.doc.contents;
  const repos = f.YAML.isMap(root) ? root.get("repositories", true) : undefined;
  if (!f.YAML.isMap(repos)) {
    throw peerFileError(ctx.file, lineOf(f, root), "has no 'repositories:' mapping", "give a file written by `vcs export`");
  }
  const entries: PeerEntry[] = [];
  const problems: PeerProblem[] = [];
  for (const pair of repos.items) {
    const key = f.YAML.isScalar(pair.key) ? String(pair.key.value) : "";
    const line = lineOf(f, pair.key);
    const path = normalizePeerPath(key);
    const where = at(ctx, line);
    if (!f.YAML.isMap(pair.value)) {
      problems.push({ path: path || key, error: `${where}: the entry is not a mapping of type, url and version` });
      continue;
    }
    const type = text(f, pair.value, "type");
    const url = text(f, pair.value, "url");
    if (type !== "git") {
      problems.push({ path, error: `${where}: type ${type ?? "(none)"} is not supported; grex manages git repositories only` });
      continue;
    }
    if (!url) {
      problems.push({ path, error: `${where}: the entry has no url` });
      continue;
    }
    entries.push({ path, url, ref: text(f, pair.value, "version"), tags: [], at: where });
  }
  return { format: "vcstool", entries, problems, notes: [] };
}

interface WestRemote {
  urlBase: string;
}

/** west: `manifest: { defaults, remotes, projects, self }` in the documented shape. */
export async function readWest(ctx: PeerContext): Promise<PeerImport> {
  const f = await parseYaml(ctx, "west");
  const root = f.doc.contents;
  const manifest = f.YAML.isMap(root) ? root.get("manifest", true) : undefined;
  if (!f.YAML.isMap(manifest)) {
    throw peerFileError(ctx.file, lineOf(f, root), "has no 'manifest:' mapping", "give a west manifest (west.yml)");
  }
  const notes: string[] = [];
  const remotes = new Map<string, WestRemote>();
  const remotesNode = manifest.get("remotes", true);
  if (f.YAML.isSeq(remotesNode)) {
    for (const r of remotesNode.items) {
      if (!f.YAML.isMap(r)) continue;
      const name = text(f, r, "name");
      const urlBase = text(f, r, "url-base");
      if (!name || !urlBase) throw peerFileError(ctx.file, lineOf(f, r), "a remote needs both name and url-base", "complete that remote");
      remotes.set(name, { urlBase: urlBase.replace(/\/+$/, "") });
    }
  }
  const defaults = manifest.get("defaults", true);
  const defaultRemote = f.YAML.isMap(defaults) ? text(f, defaults, "remote") : null;
  // west's own default when a manifest names none.
  const defaultRevision = (f.YAML.isMap(defaults) ? text(f, defaults, "revision") : null) ?? "master";
  const projects = manifest.get("projects", true);
  if (projects !== undefined && !f.YAML.isSeq(projects)) {
    throw peerFileError(ctx.file, lineOf(f, projects), "'projects:' is not a list", "write it as a list of projects");
  }
  const entries: PeerEntry[] = [];
  const problems: PeerProblem[] = [];
  for (const p of projects?.items ?? []) {
    const line = lineOf(f, p);
    const where = at(ctx, line);
    if (!f.YAML.isMap(p)) {
      problems.push({ path: "?", error: `${where}: a project is not a mapping` });
      continue;
    }
    const name = text(f, p, "name");
    if (!name) {
      problems.push({ path: "?", error: `${where}: the project has no name` });
      continue;
    }
    const path = normalizePeerPath(text(f, p, "path") ?? name);
    const url = westUrl(f, p, name, remotes, defaultRemote);
    if ("error" in url) {
      problems.push({ path, error: `${where}: ${url.error}` });
      continue;
    }
    if (p.has("import")) notes.push(`${where}: the import: of project ${name} is not followed; import that manifest too if you need its projects.`);
    const groups = p.get("groups", true);
    const tags = f.YAML.isSeq(groups) ? groups.items.flatMap((g) => (f.YAML.isScalar(g) ? [String(g.value)] : [])) : [];
    entries.push({ path, url: url.url, ref: shortRef(text(f, p, "revision") ?? defaultRevision), tags, at: where });
  }
  const self = manifest.get("self", true);
  if (f.YAML.isMap(self) && self.has("import")) notes.push(`${at(ctx, lineOf(f, self))}: self: import is not followed.`);
  if (manifest.has("group-filter")) {
    notes.push(`${at(ctx, lineOf(f, manifest.get("group-filter", true)))}: group-filter is not applied; every project is imported with its groups as tags (select with --filter tag=<group>).`);
  }
  return { format: "west", entries, problems, notes };
}

function westUrl(f: YamlFile, p: YAMLMap, name: string, remotes: Map<string, WestRemote>, defaultRemote: string | null): { url: string } | { error: string } {
  const url = text(f, p, "url");
  const remoteName = text(f, p, "remote");
  if (url && remoteName) return { error: `project ${name} gives both url and remote; west allows one of them` };
  if (url) return { url };
  const chosen = remoteName ?? defaultRemote;
  if (!chosen) return { error: `project ${name} has no url, no remote and the manifest has no default remote` };
  const remote = remotes.get(chosen);
  if (!remote) return { error: `project ${name} names remote ${chosen}, which remotes: does not define` };
  return { url: `${remote.urlBase}/${text(f, p, "repo-path") ?? name}` };
}
