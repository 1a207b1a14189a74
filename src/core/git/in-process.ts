// The in-process backend: http(s) through isomorphic-git, paths and file://
// URLs through our local transport; checkout is shared. Loaded lazily.
import { GrexError, throwIfAborted } from "../base/errors.ts";
import { deleteRefsSync, listRefsSync } from "./refs/refs.ts";
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
import type { FetchDepth } from "./transport/shallow-refs.ts";
import { transportOf } from "./transport/url.ts";
import { collectAfter } from "./objects/garbage.ts";
import { indexEntryCount } from "./objects/index-manager.ts";
import { checkedFetchUrl } from "./transport/url-rewrite.ts";
import { borrowsFromCache, fetchThroughCache } from "./object-cache.ts";
import { currentObjectCache } from "./object-cache-setting.ts";
import { isPartialClone } from "./transport/promisor.ts";

/** What a fetch is told: how deep (shallow-refs.ts), and whom to tell when a server cannot filter. */
type FetchOptions = FetchDepth & { warn?: (message: string) => void };
import { phaseEnd, phaseStart, timePhase } from "../base/profile.ts";
import { collectAtBoundary } from "./objects/garbage.ts";

/** Fetch origin's refs from `url` as the user's url.<base>.insteadOf rewrites it (origin keeps `url`). */
function fetchInto(gitdir: string, url: string, signal: AbortSignal, opts: FetchOptions = {}): Promise<FetchResult> {
  const from = checkedFetchUrl(url);
  return transportOf(from) === "http" ? timePhase("fetch.http", () => fetchHttp(gitdir, from, signal, opts)) : timePhase("fetch.local", () => fetchLocal(gitdir, from, signal, opts));
}

/**
 * Fetch through the shared object cache when one is set up (object-cache.ts):
 * a full clone always, an existing pack when it borrows from the cache
 * already; else (a shallow or partial clone, an unshallow) straight from the upstream.
 */
function fetchPack(gitdir: string, url: string, signal: AbortSignal, clone: boolean, opts: FetchOptions = {}): Promise<FetchResult> {
  const cache = currentObjectCache();
  // A shallow clone or an unshallow asks the upstream for a cut (or the whole) history itself, a partial clone for
  // a filtered one: the cache, which holds every object of the full history, serves neither.
  const cut = opts.depth !== undefined || isPartialClone(gitdir);
  if (cache !== null && !cut && (clone || borrowsFromCache(gitdir, cache, url))) return fetchThroughCache(cache, gitdir, url, signal, fetchInto);
  return fetchInto(gitdir, url, signal, opts);
}

export const inProcess: GitBackend = {
  clone(url, dir, { ref, signal, depth, filter, warn, from }) {
    return timePhase("clone", () => cloneAtomically(dir, signal, async (tmp) => {
      const t0 = phaseStart();
      const gitdir = initWithOrigin(tmp, url, filter);
      phaseEnd("clone.init", t0);
      const { defaultBranch } =
        from !== undefined ? await fetchLocal(gitdir, from, signal, { asCopy: true }) : await fetchPack(gitdir, url, signal, true, { ...(depth ? { depth, ref } : {}), warn });
      throwIfAborted(signal);
      // What the fetch left (a large pack's indexing) goes before the checkout allocates: the two peaks never add up.
      const t1 = phaseStart();
      collectAtBoundary();
      phaseEnd("clone.gc", t1);
      return timePhase("checkout.fresh", () => moveTo({ dir: tmp, gitdir, url, ref, defaultBranch, fresh: true, shown: dir, signal }));
    }));
  },

  async update(dir, url, { ref, signal, depth }) {
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
    const { defaultBranch } = await fetchPack(gitdir, url, signal, false, { depth, ref });
    throwIfAborted(signal);
    // What the fetch left (a pack received and indexed, its objects walked) goes before the checkout allocates.
    collectAfter(indexEntryCount(gitdir));
    try {
      return { before, after: await timePhase("checkout.move", () => moveTo({ dir, gitdir, url, ref, defaultBranch, signal })) };
    } catch (err) {
      if (!(err instanceof GrexError) || typeof err.data?.commit !== "string" || err.data.missing === undefined) throw err;
      const missing = err.data.commit;
      // A ref moved over an incomplete fetch (an older grex, killed): forget it and fetch again, once.
      deleteRefsSync(gitdir, [...listRefsSync(gitdir, "refs/remotes/")].filter(([, oid]) => oid === missing).map(([name]) => name));
      const again = await fetchInto(gitdir, url, signal, { ref });
      throwIfAborted(signal);
      return { before, after: await moveTo({ dir, gitdir, url, ref, defaultBranch: again.defaultBranch, signal }) };
    }
  },

  async fetch(dir, url, { signal, depth }) {
    throwIfAborted(signal);
    await fetchPack(requireGitdir(dir), url, signal, false, { depth });
  },

  head,
  isDirty,
  remoteUrl,
};
