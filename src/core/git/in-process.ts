// The in-process backend: http(s) through isomorphic-git, paths and file://
// URLs through our local transport; checkout is shared. Loaded lazily.
import { GrexError, throwIfAborted } from "../base/errors.ts";
import { deleteRefSync, listRefsSync } from "./refs/refs.ts";
import type { GitBackend } from "./backend-api.ts";
import { moveTo, refusedCommit } from "./worktree/checkout.ts";
import { resumeCheckout } from "./worktree/checkout-diff.ts";
import { readJournal } from "./worktree/checkout-journal.ts";
import { cloneAtomically } from "./clone.ts";
import { fetchHttp } from "./transport/http-transport.ts";
import { head, isDirty, remoteUrl, requireGitdir } from "./inspect.ts";
import { initWithOrigin } from "./init.ts";
import { fetchLocal } from "./transport/local-transport.ts";
import type { FetchResult } from "./transport/remote-refs.ts";
import { transportOf } from "./transport/url.ts";
import { collectAfter } from "./objects/garbage.ts";
import { indexEntryCount } from "./objects/index-manager.ts";
import { checkedFetchUrl } from "./transport/url-rewrite.ts";

/** Fetch origin's refs from `url` as the user's url.<base>.insteadOf rewrites it (origin keeps `url`). */
function fetchInto(gitdir: string, url: string, signal: AbortSignal): Promise<FetchResult> {
  const from = checkedFetchUrl(url);
  return transportOf(from) === "http" ? fetchHttp(gitdir, from, signal) : fetchLocal(gitdir, from, signal);
}

export const inProcess: GitBackend = {
  clone(url, dir, { ref, signal }) {
    return cloneAtomically(dir, signal, async (tmp) => {
      const gitdir = initWithOrigin(tmp, url);
      const { defaultBranch } = await fetchInto(gitdir, url, signal);
      throwIfAborted(signal);
      // What the fetch left (a large pack's indexing) goes before the checkout allocates: the two peaks never add up.
      Bun.gc(true);
      return moveTo({ dir: tmp, gitdir, url, ref, defaultBranch, fresh: true, shown: dir });
    });
  },

  async update(dir, url, { ref, signal }) {
    throwIfAborted(signal);
    const gitdir = requireGitdir(dir);
    // An update interrupted mid-checkout is finished first (never taken for local changes).
    const journal = readJournal(gitdir);
    if (journal) {
      try {
        await resumeCheckout(dir, gitdir, journal);
      } catch (err) {
        throw refusedCommit({ dir, url }, journal.to, err);
      }
    }
    const before = await head(dir);
    // What the caller's dirty check left (an index and its work tree walked) goes before the fetch and checkout allocate.
    collectAfter(indexEntryCount(gitdir));
    const { defaultBranch } = await fetchInto(gitdir, url, signal);
    throwIfAborted(signal);
    try {
      return { before, after: await moveTo({ dir, gitdir, url, ref, defaultBranch }) };
    } catch (err) {
      if (!(err instanceof GrexError) || typeof err.data?.commit !== "string" || err.data.missing === undefined) throw err;
      const missing = err.data.commit;
      // A ref moved over an incomplete fetch (an older grex, killed): forget it and fetch again, once.
      for (const [name, oid] of listRefsSync(gitdir, "refs/remotes/")) if (oid === missing) deleteRefSync(gitdir, name);
      const again = await fetchInto(gitdir, url, signal);
      throwIfAborted(signal);
      return { before, after: await moveTo({ dir, gitdir, url, ref, defaultBranch: again.defaultBranch }) };
    }
  },

  async fetch(dir, url, { signal }) {
    throwIfAborted(signal);
    await fetchInto(requireGitdir(dir), url, signal);
  },

  head,
  isDirty,
  remoteUrl,
};
