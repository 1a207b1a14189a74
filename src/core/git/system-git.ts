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
import { deleteRefSync, readSymref } from "./refs/refs.ts";
import { pickDefaultBranch, planRefs, REMOTE, type RemoteRefs, writeOriginHead } from "./transport/remote-refs.ts";
import { displayUrl } from "./transport/url.ts";
import { fetchUrlOf } from "./transport/url-rewrite.ts";

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

export const systemGit: GitBackend = {
  clone(url, dir, { ref, signal, filter }) {
    return cloneAtomically(dir, signal, async (tmp) => {
      // git transfers (a partial clone with git's own --filter); grex checks the tree out, refusing what it refuses for every other transport.
      const partial = filter === undefined ? [] : [`--filter=${filter}`];
      await runGit(["clone", "--quiet", "--no-checkout", ...partial, "--origin", REMOTE, "--", url, tmp], url, signal);
      const gitdir = requireGitdir(tmp);
      const target = readSymref(gitdir, `refs/remotes/${REMOTE}/HEAD`);
      const defaultBranch = target?.replace(`refs/remotes/${REMOTE}/`, "") ?? null;
      return moveTo({ dir: tmp, gitdir, url, ref, defaultBranch, fresh: true, shown: dir, signal });
    });
  },

  async update(dir, url, { ref, signal }) {
    const gitdir = requireGitdir(dir);
    const before = await head(dir);
    const remote = await fetchRemote(dir, gitdir, url, signal);
    throwIfAborted(signal);
    const after = await moveTo({ dir, gitdir, url, ref, defaultBranch: remote.defaultBranch, signal });
    return { before, after };
  },

  async fetch(dir, url, { signal }) {
    await fetchRemote(dir, requireGitdir(dir), url, signal);
  },

  head,
  isDirty,
  remoteUrl,
};

/** Bring origin's branches (forced into origin/*) and missing tags in; prune gone branches. */
async function fetchRemote(dir: string, gitdir: string, url: string, signal: AbortSignal) {
  const remote = parseLsRemote(await runGit(["ls-remote", "--symref", "--", url], url, signal, dir));
  const plan = planRefs(gitdir, remote);
  if (plan.writes.length > 0) {
    // Branches forced into origin/*, only the tags we lack (no clobbering, as planned).
    const specs = plan.writes.map(([dst]) =>
      dst.startsWith("refs/tags/") ? `${dst}:${dst}` : `+refs/heads/${dst.slice(`refs/remotes/${REMOTE}/`.length)}:${dst}`,
    );
    await runGit(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url, ...specs], url, signal, dir);
  }
  for (const r of plan.prunes) deleteRefSync(gitdir, r);
  writeOriginHead(gitdir, remote.defaultBranch);
  return remote;
}
