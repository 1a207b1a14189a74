// ssh:// and scp-style URLs: isomorphic-git cannot speak SSH, so the transfer
// goes through the system `git` program. The no-op check (ls-remote against
// our refs) and the move to the ref are the same as for the other transports.
// git is handed the manifest's URL and applies the user's url.<base>.insteadOf
// itself (backend.ts chose this backend by the rewritten URL, the same one).
import { GrexError, packOpError, throwIfAborted } from "../base/errors.ts";
import { runProcess } from "../base/proc.ts";
import type { GitBackend } from "./backend-api.ts";
import { moveTo } from "./worktree/checkout.ts";
import { cloneAtomically } from "./clone.ts";
import { head, isDirty, remoteUrl, requireGitdir } from "./inspect.ts";
import { deleteRefsSync, readSymref } from "./refs/refs.ts";
import { pickDefaultBranch, planRefs, REMOTE, type RemoteRefs, writeOriginHead } from "./transport/remote-refs.ts";
import { displayUrl } from "./transport/url.ts";
import { fetchUrlOf } from "./transport/url-rewrite.ts";
import { readShallow } from "./layout/layout.ts";
import { INFINITE_DEPTH } from "./layout/shallow-file.ts";
import { narrowRefs } from "./transport/shallow-refs.ts";
import { initWithOrigin } from "./init.ts";
import { borrowsFromCache, fetchThroughCache, type Upstream } from "./object-cache.ts";
import { currentObjectCache } from "./object-cache-setting.ts";

/** ls-remote of a repository with very many refs stays far below this. */
const MAX_GIT_OUTPUT = 64 << 20;

export async function runGit(args: string[], url: string, signal: AbortSignal, cwd?: string): Promise<string> {
  throwIfAborted(signal);
  const exe = Bun.which("git", { PATH: process.env.PATH ?? "" });
  if (!exe) {
    throw new GrexError("pack_op", `ssh URLs like ${url} need git installed and on PATH; install git or use an https:// URL.`, { url });
  }
  const r = await runProcess({
    // No hook runs, whatever a config names (core.hooksPath, .git/hooks): grex's own git code runs none either.
    argv: [exe, "-c", "core.hooksPath=/dev/null", ...args],
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
    signal,
    maxBytes: MAX_GIT_OUTPUT,
    ownGroup: false, // ssh may need the terminal to ask for a key's passphrase
  });
  if (r.dropped.stdout > 0) {
    throw packOpError(`git ${args[0]} from ${url} printed more than ${MAX_GIT_OUTPUT} bytes, more than grex reads; check the remote.`, { url });
  }
  if (r.code !== 0) {
    // The first line says what went wrong (ssh's own error comes before git's "could not read").
    const first = r.stderr.split("\n").find((l) => l.trim() !== "") ?? (r.spawnError ? String(r.spawnError.code) : `exit code ${r.code}`);
    const why = first.trim().replace(/^(fatal|error):\s*/, "").replace(/\.$/, "");
    const mirror = fetchUrlOf(url); // git applied the user's url.<base>.insteadOf: name where it went
    const through = mirror === url ? "" : ` (through ${displayUrl(mirror)}, your url.<base>.insteadOf)`;
    throw packOpError(`git ${args[0]} from ${url}${through} failed (${why}); check the URL and your SSH access.`, { url });
  }
  return r.stdout;
}

/** Parse `git ls-remote --symref` output. */
export function parseLsRemote(out: string): RemoteRefs {
  const branches = new Map<string, string>();
  const tags = new Map<string, string>();
  let headTarget: string | null = null;
  let headOid: string | null = null;
  for (const line of out.split("\n")) {
    const [left, name] = line.split("\t");
    if (!left || !name) continue;
    if (left.startsWith("ref: ")) {
      if (name === "HEAD") headTarget = left.slice(5);
    } else if (name === "HEAD") headOid = left;
    else if (name.startsWith("refs/heads/")) branches.set(name.slice(11), left);
    else if (name.startsWith("refs/tags/") && !name.endsWith("^{}")) tags.set(name.slice(10), left);
  }
  return { branches, tags, defaultBranch: pickDefaultBranch(branches, headTarget, headOid) };
}

/** A fetch by the system git, in the shape the object cache calls (object-cache.ts): into a cache entry, or a pack's git directory. */
const upstreamByGit: Upstream = async (gitdir, url, signal) => {
  const remote = await fetchRemote(gitdir, gitdir, url, signal);
  return { defaultBranch: remote.defaultBranch, changed: true };
};

/** Through the shared object cache when one is set up and (for an existing pack) the pack borrows from it; else null. */
function cacheFor(gitdir: string | null, url: string): string | null {
  const cache = currentObjectCache();
  return cache !== null && (gitdir === null || borrowsFromCache(gitdir, cache, url)) ? cache : null;
}

export const systemGit: GitBackend = {
  clone(url, dir, { ref, signal, depth, filter }) {
    // A shallow or partial clone asks the upstream itself: the cache holds the full history, every object.
    const cache = depth || filter !== undefined ? null : cacheFor(null, url);
    if (cache !== null) {
      return cloneAtomically(dir, signal, async (tmp) => {
        const gitdir = initWithOrigin(tmp, url);
        const { defaultBranch } = await fetchThroughCache(cache, gitdir, url, signal, upstreamByGit);
        return moveTo({ dir: tmp, gitdir, url, ref, defaultBranch, fresh: true, shown: dir, signal });
      });
    }
    return cloneAtomically(dir, signal, async (tmp) => {
      // A shallow clone follows one branch, as git's does: the pinned one when it is a branch or tag name.
      const shallow = depth ? ["--depth", String(depth), ...(ref && !/^[0-9a-f]{40}$/.test(ref) ? ["--branch", ref] : [])] : [];
      const partial = filter === undefined ? [] : [`--filter=${filter}`];
      // git transfers (shallow or partial with git's own flags); grex checks the tree out, refusing what it refuses for every other transport.
      await runGit(["clone", "--quiet", "--no-checkout", ...shallow, ...partial, "--origin", REMOTE, "--", url, tmp], url, signal);
      const gitdir = requireGitdir(tmp);
      const target = readSymref(gitdir, `refs/remotes/${REMOTE}/HEAD`);
      const defaultBranch = target?.replace(`refs/remotes/${REMOTE}/`, "") ?? null;
      return moveTo({ dir: tmp, gitdir, url, ref, defaultBranch, fresh: true, shown: dir, signal });
    });
  },

  async update(dir, url, { ref, signal, depth }) {
    const gitdir = requireGitdir(dir);
    const before = await head(dir);
    const cache = depth ? null : cacheFor(gitdir, url);
    const remote = cache !== null ? await fetchThroughCache(cache, gitdir, url, signal, upstreamByGit) : await fetchRemote(dir, gitdir, url, signal, depth === INFINITE_DEPTH, ref);
    throwIfAborted(signal);
    const after = await moveTo({ dir, gitdir, url, ref, defaultBranch: remote.defaultBranch, signal });
    return { before, after };
  },

  async fetch(dir, url, { signal, depth }) {
    const gitdir = requireGitdir(dir);
    const cache = depth ? null : cacheFor(gitdir, url);
    if (cache !== null) await fetchThroughCache(cache, gitdir, url, signal, upstreamByGit);
    else await fetchRemote(dir, gitdir, url, signal, depth === INFINITE_DEPTH);
  },

  head,
  isDirty,
  remoteUrl,
};

/** Bring origin's branches (forced into origin/*) and missing tags in; prune gone branches. */
async function fetchRemote(dir: string, gitdir: string, url: string, signal: AbortSignal, unshallow = false, ref: string | null = null) {
  const all = parseLsRemote(await runGit(["ls-remote", "--symref", "--", url], url, signal, dir));
  const shallow = readShallow(gitdir).size > 0;
  // A shallow repository follows one branch (shallow-refs.ts), as after `git clone --depth`.
  const remote = shallow ? narrowRefs(gitdir, all, ref) : all;
  const plan = planRefs(gitdir, remote);
  const lift = unshallow && shallow;
  if (plan.writes.length > 0 || lift) {
    // Branches forced into origin/*, only the tags we lack (no clobbering, as planned).
    const targets = lift && plan.writes.length === 0 ? [...remote.branches.keys()].map((b) => [`refs/remotes/${REMOTE}/${b}`]) : plan.writes;
    const specs = targets.map(([dst]) =>
      (dst as string).startsWith("refs/tags/") ? `${dst}:${dst}` : `+refs/heads/${(dst as string).slice(`refs/remotes/${REMOTE}/`.length)}:${dst}`,
    );
    // A shallow repository follows the tags into what it fetches (git's default tag following, as grex's own transports do); a full one names its tags.
    await runGit(["fetch", "--quiet", ...(shallow ? [] : ["--no-tags"]), "--no-write-fetch-head", ...(lift ? ["--unshallow"] : []), "--", url, ...specs], url, signal, dir);
  }
  deleteRefsSync(gitdir, plan.prunes);
  writeOriginHead(gitdir, remote.defaultBranch);
  return remote;
}
