// repo's manifest XML (`default.xml`): remotes, the default, projects with
// name/path/revision/groups, extend-project and remove-project, and includes of
// local files beside the manifest, as repo's manifest-format documentation
// describes them.
import { dirname, join, relative, resolve } from "node:path";
import { parseXml, XmlSyntaxError, type XmlElement } from "./peer-xml.ts";
import {
  normalizePeerPath,
  peerFileError,
  shortRef,
  splitTags,
  type PeerContext,
  type PeerEntry,
  type PeerImport,
  type PeerProblem,
} from "./peer-common.ts";

/** repo itself stops at this depth of includes. */
const MAX_INCLUDE_DEPTH = 16;

interface Remote {
  fetch: string;
  revision: string | null;
}

interface Project extends PeerEntry {
  name: string;
}

interface State {
  ctx: PeerContext;
  /** The directory includes are confined to: the top manifest's. */
  base: string;
  remotes: Map<string, Remote>;
  defaultRemote: string | null;
  defaultRevision: string | null;
  projects: Project[];
  problems: PeerProblem[];
  notes: string[];
}

const IGNORED = new Set(["notice", "manifest-server", "superproject", "contactinfo", "repo-hooks", "submanifest"]);

export async function readRepoManifest(ctx: PeerContext): Promise<PeerImport> {
  const st: State = {
    ctx,
    base: dirname(ctx.abs),
    remotes: new Map(),
    defaultRemote: null,
    defaultRevision: null,
    projects: [],
    problems: [],
    notes: [],
  };
  readFile(st, ctx.file, ctx.text, { groups: [], revision: null }, [ctx.abs]);
  const entries = st.projects.map(({ name: _name, ...e }) => e);
  return { format: "repo", entries, problems: st.problems, notes: st.notes };
}

interface Inherited {
  groups: string[];
  revision: string | null;
}

function readFile(st: State, file: string, text: string, inherited: Inherited, chain: string[]): void {
  let root: XmlElement;
  try {
    root = parseXml(text);
  } catch (err) {
    if (err instanceof XmlSyntaxError) throw peerFileError(file, err.line, `is not well-formed XML (${err.message})`, "fix the manifest as repo would read it");
    throw err;
  }
  if (root.name !== "manifest") throw peerFileError(file, root.line, `the root element is <${root.name}>, not <manifest>`, "give a repo manifest");
  for (const el of root.children) {
    const where = `${file}:${el.line}`;
    switch (el.name) {
      case "remote":
        readRemote(st, file, el);
        break;
      case "default":
        st.defaultRemote = el.attrs.get("remote") ?? st.defaultRemote;
        st.defaultRevision = el.attrs.get("revision") ?? st.defaultRevision;
        break;
      case "project":
        readProject(st, where, el, inherited);
        break;
      case "extend-project":
        extendProject(st, where, el);
        break;
      case "remove-project":
        removeProject(st, where, el);
        break;
      case "include":
        include(st, file, el, inherited, chain);
        break;
      default:
        if (!IGNORED.has(el.name)) st.notes.push(`${where}: <${el.name}> is not something grex imports; it was left out.`);
    }
  }
}

function readRemote(st: State, file: string, el: XmlElement): void {
  const name = el.attrs.get("name");
  const fetch = el.attrs.get("fetch");
  if (!name || !fetch) throw peerFileError(file, el.line, "a <remote> needs both name and fetch", "complete that remote");
  // repo resolves a relative fetch (`..`) against the URL the manifest was cloned from; a file on disk has none.
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(fetch) && !/^[^/:]+@[^:]+:/.test(fetch) && !fetch.startsWith("/")) {
    throw peerFileError(file, el.line, `remote ${name} has the relative fetch '${fetch}', which repo resolves against the manifest repository's URL`, "write the remote's full URL in fetch and import again");
  }
  st.remotes.set(name, { fetch: fetch.replace(/\/+$/, ""), revision: el.attrs.get("revision") ?? null });
}

function readProject(st: State, where: string, el: XmlElement, inherited: Inherited): void {
  const name = el.attrs.get("name");
  if (!name) {
    st.problems.push({ path: "?", error: `${where}: a <project> has no name` });
    return;
  }
  const path = normalizePeerPath(el.attrs.get("path") ?? name);
  for (const child of el.children) {
    if (child.name === "project") st.problems.push({ path: normalizePeerPath(`${path}/${child.attrs.get("path") ?? child.attrs.get("name") ?? "?"}`), error: `${st.ctx.file}:${child.line}: nested projects are not supported; list it as a top-level project` });
    else if (child.name === "linkfile" || child.name === "copyfile") st.notes.push(`${where}: the ${child.name} of ${name} is not imported; declare it as a symlink action in that pack's pack.yaml.`);
  }
  const remoteName = el.attrs.get("remote") ?? st.defaultRemote;
  if (!remoteName) {
    st.problems.push({ path, error: `${where}: project ${name} names no remote and the manifest has no <default remote=...>` });
    return;
  }
  const remote = st.remotes.get(remoteName);
  if (!remote) {
    st.problems.push({ path, error: `${where}: project ${name} names remote ${remoteName}, which no <remote> defines` });
    return;
  }
  const revision = el.attrs.get("revision") ?? inherited.revision ?? remote.revision ?? st.defaultRevision;
  const tags = [...new Set([...splitTags(el.attrs.get("groups") ?? ""), ...inherited.groups])];
  st.projects.push({ name, path, url: `${remote.fetch}/${name}`, ref: revision === null ? null : shortRef(revision), tags, at: where });
}

function matching(st: State, el: XmlElement): Project[] {
  const name = el.attrs.get("name");
  const path = el.attrs.get("path");
  return st.projects.filter((p) => p.name === name && (path === undefined || p.path === normalizePeerPath(path)));
}

function extendProject(st: State, where: string, el: XmlElement): void {
  const found = matching(st, el);
  if (found.length === 0) {
    st.notes.push(`${where}: extend-project ${el.attrs.get("name") ?? "?"} matches no project listed before it; it was left out.`);
    return;
  }
  for (const p of found) {
    const groups = el.attrs.get("groups");
    if (groups) p.tags = [...new Set([...p.tags, ...splitTags(groups)])];
    const revision = el.attrs.get("revision");
    if (revision) p.ref = shortRef(revision);
    const remoteName = el.attrs.get("remote");
    const remote = remoteName ? st.remotes.get(remoteName) : undefined;
    if (remoteName && !remote) st.problems.push({ path: p.path, error: `${where}: extend-project names remote ${remoteName}, which no <remote> defines` });
    else if (remote) p.url = `${remote.fetch}/${p.name}`;
    const destPath = el.attrs.get("dest-path");
    if (destPath) p.path = normalizePeerPath(destPath);
  }
}

function removeProject(st: State, where: string, el: XmlElement): void {
  const found = new Set(matching(st, el));
  if (found.size === 0 && el.attrs.get("optional") !== "true") {
    st.notes.push(`${where}: remove-project ${el.attrs.get("name") ?? "?"} matches no project listed before it.`);
  }
  st.projects = st.projects.filter((p) => !found.has(p));
}

function include(st: State, file: string, el: XmlElement, inherited: Inherited, chain: string[]): void {
  const name = el.attrs.get("name");
  if (!name) throw peerFileError(file, el.line, "an <include> has no name", "name the manifest file to include");
  const abs = resolve(st.base, name);
  const rel = relative(st.base, abs);
  if (rel.startsWith("..") || resolve(st.base, rel) !== abs) {
    throw peerFileError(file, el.line, `the include ${name} lies outside the manifest's directory`, "keep included manifests beside the one you import");
  }
  if (chain.includes(abs)) throw peerFileError(file, el.line, `the include ${name} includes itself (through ${chain.length} files)`, "remove the loop");
  if (chain.length > MAX_INCLUDE_DEPTH) throw peerFileError(file, el.line, `includes nest more than ${MAX_INCLUDE_DEPTH} deep`, "flatten the manifests");
  const text = st.ctx.readInclude(abs);
  if (text === null) throw peerFileError(file, el.line, `the included manifest ${name} cannot be read`, "put it beside the manifest you import");
  const groups = splitTags(el.attrs.get("groups") ?? "");
  const next: Inherited = { groups: [...new Set([...inherited.groups, ...groups])], revision: el.attrs.get("revision") ?? inherited.revision };
  readFile(st, join(dirname(st.ctx.file), rel), text, next, [...chain, abs]);
}
