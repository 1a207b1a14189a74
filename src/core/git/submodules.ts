// Submodules, on request (pack.yaml `submodules: true`, `grex add
// --recurse-submodules`, or `submodule.recurse = true` in the pack's git
// config): each gitlink of HEAD's tree is cloned (or fetched and moved) to the
// commit the tree records, with the same in-process clone code as a pack, and
// recursively for submodules' own submodules.
//
// A submodule is untrusted input, like the pack that names it:
//  - `.gitmodules` is read from HEAD's tree (a regular file, never a symlink);
//  - names follow git's check_submodule_name (no empty name, no `..`
//    component, no newline); paths must be gitlinks of the tree, with safe
//    components (no `..`, `.`, `.git`);
//  - URLs: https, http, ssh (`ssh://`, `user@host:path`), or `./`/`../`
//    relative to the pack's own URL (a local path only that way, as git
//    allows file transport only when the user asked for it); anything else
//    (`file://`, absolute paths, `ext::`, `git://`, a leading `-`) is refused;
//  - the user's url.<base>.insteadOf applies to a submodule's URL as to a
//    pack's (git does the same); the rewritten URL may be https, http, ssh or
//    local (the user's own configuration chose it), never another transport;
//  - the CVE-2024-32002 shape: a submodule whose path is, or passes through, a
//    symlink (in the tree or in the work tree) is refused, so a clone can
//    never write through a link into `.git` or elsewhere.
//
// Layout: as git's (`submodule-layout.ts`): each submodule is cloned with the
// same code as a pack, then its repository moved under the superproject's
// `.git/modules/<name>` with a `.git` file and `core.worktree`, as `git
// submodule update --init --recursive` leaves it; HEAD detached at the
// recorded commit, the remote's default branch as a local branch beside it
// (as git's clone of a submodule makes one). A submodule an older grex left
// with a `.git` directory is moved there by the next pass (absorbgitdirs).
// The pack's `.git/config` gets `submodule.<name>.active` and `.url`, as `git
// submodule init` writes them.
import * as fs from "node:fs";
import { isAbsolute, join, resolve as resolvePath } from "node:path";
import { GrexError, packOpError, throwIfAborted } from "../base/errors.ts";
import { controlCharIn, controlCharProblem } from "../base/naming.ts";
import { backendFor, inProcessBackend } from "./backend.ts";
import { isGitDirectory, layoutOfGitdir } from "./layout/layout.ts";
import { budgetFor, fileProtocolAllowed } from "./submodule-budget.ts";
import { displayUrl, transportOf } from "./transport/url.ts";
import { configBool, parseConfig, readGitdirConfigValue, setRepoConfig } from "./refs/config.ts";
import { ObjectStore } from "./objects/object-store.ts";
import { gitdirOf, readHeadSync, resolveRefSync } from "./refs/refs.ts";
import { flatTree } from "./objects/tree-read.ts";
import { checkedFetchUrl } from "./transport/url-rewrite.ts";
import { absorbSubmodule, addDefaultBranch, layoutState, moduleGitdir } from "./submodule-layout.ts";

/** Whether `dir` is missing or an empty directory. */
function isEmptyOrAbsent(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length === 0;
  } catch (err) {
    return (err as { code?: string }).code === "ENOENT";
  }
}

const GITLINK = 0o160000;
const SYMLINK = 0o120000;
const MAX_DEPTH = 8;

export interface SubmoduleOutcome {
  /** The path inside the pack (nested ones: `outer/inner`). */
  path: string;
  name: string;
  sha: string;
  result: "cloned" | "updated" | "unchanged" | "skipped";
  message: string;
}

interface Declared {
  name: string;
  path: string;
  url: string;
}

/** git's check_submodule_name: refuse names that could escape `.git/modules`. */
export function validSubmoduleName(name: string): boolean {
  if (name === "" || controlCharIn(name) !== null) return false;
  return !name.split(/[/\\]/).some((c) => c === "..");
}

/** Tree-path rules for a submodule path: relative, no empty, `.`, `..` or `.git` component. */
export function validSubmodulePath(path: string): boolean {
  if (path === "" || path.startsWith("/") || path.includes("\\") || controlCharIn(path) !== null) return false;
  return path.split("/").every((c) => c !== "" && c !== "." && c !== ".." && c.toLowerCase() !== ".git");
}

/** A `./`/`../` submodule URL resolved against the pack's URL, as git resolves it. */
export function resolveSubmoduleUrl(parentUrl: string, url: string): string {
  const base = parentUrl.replace(/\/+$/, "");
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(base)) return new URL(url, `${base}/`).href.replace(/\/+$/, "");
  const scp = /^([^/:]+:)(.*)$/.exec(base);
  if (scp && !isAbsolute(base)) {
    // user@host:org/repo + ../other → user@host:org/other
    const parts = (scp[2] as string).split("/").filter((p) => p !== "");
    for (const seg of url.split("/")) {
      if (seg === "..") parts.pop();
      else if (seg !== "." && seg !== "") parts.push(seg);
    }
    return `${scp[1]}${parts.join("/")}`;
  }
  return resolvePath(base, url);
}

/** The URL grex will fetch a submodule from, or why it refuses. */
/**
 * Where the user's own url.<base>.insteadOf may send a submodule: https,
 * http, ssh, or a local path or file:// URL (the user chose it, as for a
 * pack's URL); never a `<transport>::` helper, git:// or another scheme.
 */
export function mirrorTransportAllowed(to: string): boolean {
  if (to.includes("::")) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(to);
  return scheme === null || ["http", "https", "ssh", "file"].includes((scheme[1] as string).toLowerCase());
}

export function submoduleUrl(parentUrl: string, raw: string): { url: string } | { refused: string } {
  const control = controlCharProblem("its URL", raw);
  if (control !== null) return { refused: control };
  if (raw === "" || raw.startsWith("-")) return { refused: "its URL is empty or looks like an option" };
  if (raw.startsWith("./") || raw.startsWith("../")) return { url: resolveSubmoduleUrl(parentUrl, raw) };
  if (/^https?:\/\//i.test(raw) || /^ssh:\/\//i.test(raw)) return { url: raw };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) return { refused: `its URL '${raw}' uses a transport other than https, http or ssh (refused for submodules)` };
  // scp-style user@host:path: a colon before any slash, and no scheme.
  const colon = raw.indexOf(":");
  const slash = raw.indexOf("/");
  if (!raw.includes("::") && colon > 1 && (slash < 0 || colon < slash)) return { url: raw };
  return { refused: `its URL '${raw}' is not https, http, ssh or relative to the pack's URL (local paths and other transports are refused for submodules)` };
}

function parseGitmodules(text: string): Declared[] {
  const byName = new Map<string, Partial<Declared>>();
  for (const e of parseConfig(text)) {
    if (e.section !== "submodule" || e.sub === null || e.value === null) continue;
    const d = byName.get(e.sub) ?? { name: e.sub };
    if (e.key === "path") d.path = e.value;
    else if (e.key === "url") d.url = e.value;
    byName.set(e.sub, d);
  }
  return [...byName.values()].filter((d): d is Declared => d.path !== undefined && d.url !== undefined);
}

/** No component of `rel` under `dir` may be a symlink (or anything but a directory), the last one included when present. */
function throughLink(dir: string, rel: string): string | null {
  const parts = rel.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const sub = parts.slice(0, i).join("/");
    let st: fs.Stats;
    try {
      st = fs.lstatSync(join(dir, sub));
    } catch {
      return null; // absent from here down: the clone creates real directories
    }
    if (st.isSymbolicLink()) return sub;
    if (!st.isDirectory()) return sub;
  }
  return null;
}

/** Record the submodule in the pack's config as `git submodule init` does (once). */
export function recordSubmoduleInConfig(gitdir: string, name: string, url: string): void {
  if (readGitdirConfigValue(gitdir, "submodule", name, "url") !== null) return;
  setRepoConfig(
    gitdir,
    [
      { section: "submodule", sub: name, key: "active", value: "true" },
      { section: "submodule", sub: name, key: "url", value: url },
    ],
    "if-absent",
  );
}

/**
 * Bring every submodule of the repository at `dir` (cloned from `url`) to the
 * commit HEAD's tree records. Unsafe submodules stop the whole step with an
 * error naming them; one with local changes or off its recorded commit by the
 * user's hand is left alone (result "skipped").
 */
export async function updateSubmodules(
  dir: string,
  url: string,
  signal: AbortSignal,
  env: Record<string, string | undefined> = process.env,
  depth = 0,
  prefix = "",
  copyOf: string | null = null,
): Promise<SubmoduleOutcome[]> {
  throwIfAborted(signal);
  const gitdir = gitdirOf(dir);
  const head = gitdir ? resolveRefSync(gitdir, "HEAD") : null;
  if (!gitdir || !head) return [];
  // A linked worktree's submodules (a task workspace's) are copies of the main worktree's: cloned from those.
  const source = copyOf ?? mainWorktreeGitdir(gitdir);
  const store = new ObjectStore(gitdir);
  let tree: Map<string, string>;
  let gitmodules: string | null = null;
  try {
    tree = await flatTree(gitdir, head, store);
    const entry = tree.get(".gitmodules");
    const mode = entry === undefined ? 0 : Number.parseInt(entry, 10);
    if (entry !== undefined && (mode === 0o100644 || mode === 0o100755)) {
      const o = store.read(entry.slice(entry.indexOf(" ") + 1));
      if (o?.type === "blob") gitmodules = o.data.toString("utf8");
    }
  } finally {
    store.close();
  }
  const links = [...tree].filter(([, v]) => Number.parseInt(v, 10) === GITLINK).map(([p, v]) => ({ path: p, sha: v.slice(v.indexOf(" ") + 1) }));
  if (links.length === 0) return [];
  if (depth >= MAX_DEPTH) throw packOpError(`${dir}: submodules nest more than ${MAX_DEPTH} deep; refusing to go further.`, { dir });
  const declared = gitmodules === null ? [] : parseGitmodules(gitmodules);
  const symlinks = [...tree].filter(([, v]) => Number.parseInt(v, 10) === SYMLINK).map(([p]) => p.toLowerCase());

  // Every check first: an unsafe submodule stops the step before anything is cloned.
  const siblings = declared.filter((x) => links.some((l) => l.path === x.path)).map((x) => x.name);
  const plan: Array<{ d: Declared; sha: string; url: string; target: string }> = [];
  const out: SubmoduleOutcome[] = [];
  for (const link of links) {
    const d = declared.find((x) => x.path === link.path);
    const where = `${dir}: submodule at '${link.path}'`;
    if (!d) {
      out.push({ path: prefix + link.path, name: "", sha: link.sha, result: "skipped", message: "no entry for this path in .gitmodules; left empty, as git leaves it" });
      continue;
    }
    if (!validSubmoduleName(d.name)) throw packOpError(`${where} has the unsafe name '${d.name}'; refusing to clone it.`, { dir });
    if (!validSubmodulePath(d.path)) throw packOpError(`${where} has an unsafe path; refusing to clone it.`, { dir });
    // CVE-2024-32002: a path that is, or runs through, a symlink (any case, as on a case-insensitive file system).
    const lower = d.path.toLowerCase();
    const linkInTree = symlinks.find((s) => lower === s || lower.startsWith(`${s}/`));
    const linkOnDisk = throughLink(dir, d.path);
    if (linkInTree !== undefined || linkOnDisk !== null) {
      throw packOpError(`${where} is or passes through a symlink ('${linkInTree ?? linkOnDisk}'); refusing to clone it.`, { dir });
    }
    const u = submoduleUrl(url, d.url);
    if ("refused" in u) throw packOpError(`${where}: ${u.refused}; refusing to clone it.`, { dir });
    // git's protocol.file.allow=user: a submodule never reads a local repository unless the user allows it.
    if (transportOf(u.url) === "local" && !fileProtocolAllowed(env)) {
      throw packOpError(
        `${where}: its URL '${d.url}' leads to the local repository ${u.url}, and submodules may not use local repositories (as in git); refusing to clone it — set protocol.file.allow = always in your git config if you trust this pack.`,
        { dir },
      );
    }
    const mirror = checkedFetchUrl(u.url);
    if (mirror !== u.url && !mirrorTransportAllowed(mirror)) {
      throw packOpError(`${where}: its URL ${displayUrl(u.url)} is rewritten by your url.<base>.insteadOf to '${displayUrl(mirror)}', a transport grex does not fetch submodules over (use https, http, ssh or a local path); refusing to clone it.`, { dir });
    }
    const placed = moduleGitdir(gitdir, d.name, siblings);
    if ("refused" in placed) throw packOpError(`${where}: ${placed.refused}; refusing to clone it.`, { dir });
    plan.push({ d, sha: link.sha, url: u.url, target: placed.gitdir });
  }

  const budget = budgetFor(signal, env);
  for (const { d, sha, url: subUrl, target } of plan) {
    throwIfAborted(signal);
    const subDir = join(dir, d.path);
    const shown = prefix + d.path;
    const backend = backendFor(subUrl);
    const where = `${dir}: submodule '${d.name}' at '${d.path}'`;
    // Checked again where it is placed (git's validate_submodule_git_dir): what the passes before made counts.
    const placed = moduleGitdir(gitdir, d.name);
    if ("refused" in placed) throw packOpError(`${where}: ${placed.refused}; refusing to clone it.`, { dir });
    // An old pack's `<path>/.git` directory, or a pass killed half-way: laid out as git lays it out first.
    const state = layoutState(subDir, target);
    if (state === "unlinked" && isEmptyOrAbsent(subDir)) {
      // `git submodule deinit`: the user's choice, kept as git's own update keeps it.
      out.push({ path: shown, name: d.name, sha, result: "skipped", message: `deinitialised (its repository kept in ${target}, its directory empty); left as is — run git submodule update --init to check it out again` });
      continue;
    }
    const populated = absorbSubmodule(subDir, target, where);
    if (state === "own") addDefaultBranch(target);
    if (populated) recordSubmoduleInConfig(gitdir, d.name, subUrl);
    // A gitlink to a commit its repository lacks: named as that, not as a tag or branch to check.
    const missing = (err: unknown) =>
      err instanceof GrexError && err.data?.ref === sha
        ? packOpError(`${where} records commit ${sha}, which ${displayUrl(subUrl)} does not have; ask the pack's owner to push that commit or to fix the submodule.`, { dir, commit: sha })
        : err;
    const copy = copyHolding(source, d.name, sha);
    if (!populated) {
      budget.take(where);
      try {
        if (copy !== null) await inProcessBackend.clone(subUrl, subDir, { ref: sha, signal, from: copy });
        else await backend.clone(subUrl, subDir, { ref: sha, signal });
      } catch (err) {
        throw missing(err);
      }
      budget.spent(where, subDir);
      const own = gitdirOf(subDir);
      if (own !== null) addDefaultBranch(own);
      absorbSubmodule(subDir, target, where);
      recordSubmoduleInConfig(gitdir, d.name, subUrl);
      out.push({ path: shown, name: d.name, sha, result: "cloned", message: `cloned at ${sha.slice(0, 7)}` });
    } else {
      const now = readHeadSync(subDir)?.sha ?? null;
      if (now === sha) out.push({ path: shown, name: d.name, sha, result: "unchanged", message: "at the recorded commit" });
      else if (await backend.isDirty(subDir)) {
        out.push({ path: shown, name: d.name, sha, result: "skipped", message: "has local changes; left as is (commit or stash them)" });
        continue;
      } else {
        budget.take(where);
        try {
          await backend.update(subDir, subUrl, { ref: sha, signal });
        } catch (err) {
          throw missing(err);
        }
        out.push({ path: shown, name: d.name, sha, result: "updated", message: `${(now ?? "none").slice(0, 7)}..${sha.slice(0, 7)}` });
      }
    }
    out.push(...(await updateSubmodules(subDir, subUrl, signal, env, depth + 1, `${shown}/`, copy)));
  }
  return out;
}

/** The main worktree's repository when `gitdir` is a linked worktree's, else null. */
function mainWorktreeGitdir(gitdir: string): string | null {
  const common = layoutOfGitdir(gitdir).commonDir;
  return resolvePath(common) === resolvePath(gitdir) ? null : common;
}

/**
 * Submodule `name` of the repository `source` (the same superproject in the
 * main worktree), when it is a repository holding `commit`: the clone then
 * links its objects instead of fetching them (`git clone` by path does the
 * same; hard links, so its gc cannot take them away).
 */
function copyHolding(source: string | null, name: string, commit: string): string | null {
  if (source === null) return null;
  const placed = moduleGitdir(source, name);
  if ("refused" in placed || !isGitDirectory(placed.gitdir)) return null;
  const store = new ObjectStore(placed.gitdir);
  try {
    return store.readCommit(commit) === null ? null : placed.gitdir;
  } catch {
    return null;
  } finally {
    store.close();
  }
}

/**
 * The gitlink of commit `commit`'s tree at `path` or at one of its leading
 * directories (`vendor` for `vendor/kid`), or null: read along the path only.
 */
export function gitlinkOnPath(dir: string, commit: string, path: string): string | null {
  const gitdir = gitdirOf(dir);
  if (!gitdir) return null;
  const store = new ObjectStore(gitdir);
  try {
    let tree = store.readCommit(commit)?.tree ?? null;
    const parts = path.split("/").filter((p) => p !== "" && p !== ".");
    for (const [i, name] of parts.entries()) {
      const entry = tree === null ? undefined : store.readTree(tree)?.find((e) => e.name === name);
      if (entry === undefined) return null;
      if (Number.parseInt(entry.mode, 8) === GITLINK) return parts.slice(0, i + 1).join("/");
      if (entry.mode !== "040000") return null;
      tree = entry.oid;
    }
    return null;
  } finally {
    store.close();
  }
}

/** Whether a pack asks for its submodules: pack.yaml `submodules: true`, or `submodule.recurse` in its git config. */
export function wantsSubmodules(dir: string, packYamlSays: boolean | undefined): boolean {
  if (packYamlSays === true) return true;
  const gitdir = gitdirOf(dir);
  const v = gitdir ? readGitdirConfigValue(gitdir, "submodule", null, "recurse") : null;
  return configBool(v) === true;
}

/** Ask future syncs to keep the submodules of the pack at `dir` (what `grex add --recurse-submodules` records). */
export function recordRecurse(dir: string): void {
  const gitdir = gitdirOf(dir);
  if (!gitdir || wantsSubmodules(dir, false)) return;
  setRepoConfig(gitdir, [{ section: "submodule", sub: null, key: "recurse", value: "true" }]);
}

