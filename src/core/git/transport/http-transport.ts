// http(s) URLs, in process: one GET lists the remote's refs; when they match
// ours (a no-op sync) that is all the work done. Otherwise one POST asks for
// the missing tips, telling the server our own tips so it sends only the new
// objects, and the pack is stored natively (pack-index.ts).
import { throwIfAborted } from "../../base/errors.ts";
import { transportError } from "./git-errors.ts";
import { assertConnected } from "./connectivity.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { transferLimits } from "../objects/limits.ts";
import { storePackStream } from "../objects/pack-index.ts";
import { PackLinks } from "../objects/pack-links.ts";
import { deleteRefsSync, listRefsSync, resolveRefSync, writeRefsSync } from "../refs/refs.ts";
import { type FetchResult, planRefs, type RemoteRefs, writeOriginHead } from "./remote-refs.ts";
import { advertise, uploadPack } from "./smart-http.ts";
import { readShallow } from "../layout/layout.ts";
import { INFINITE_DEPTH, updateShallow, writeShallow } from "../layout/shallow-file.ts";
import { type FetchDepth, followedTags, narrowRefs } from "./shallow-refs.ts";
import { displayUrl } from "./url.ts";
import { isPartialClone, partialCloneFilter, promisorFileText } from "./promisor.ts";
import { phaseEnd, phaseStart, timePhase } from "../../base/profile.ts";

/** The refs an http(s) remote advertises: one GET, no objects. */
export async function listHttpRefs(url: string, signal: AbortSignal): Promise<RemoteRefs> {
  try {
    return (await advertise(url, signal)).remote;
  } catch (err) {
    throw transportError(url, err);
  }
}

/** At most this many of our tips are offered as "have": they already cover everything we hold. */
const MAX_HAVES = 256;

/** Our tips the server may know: HEAD, local branches, remote-tracking branches, tags (a shallow repository names its boundary beside them). */
function ourTips(gitdir: string): string[] {
  const tips = new Set<string>();
  const head = resolveRefSync(gitdir, "HEAD");
  if (head) tips.add(head);
  for (const prefix of ["refs/heads/", "refs/remotes/", "refs/tags/"]) for (const oid of listRefsSync(gitdir, prefix).values()) tips.add(oid);
  return [...tips].slice(0, MAX_HAVES);
}

/**
 * Fetch origin's refs. `opts.depth`: cut the history sent that many commits
 * below the tips (`deepen`), or lift the boundary (INFINITE_DEPTH, as `git
 * fetch --unshallow`); a shallow repository without it fetches as `git fetch`
 * does there: its boundary named in `shallow` lines, only what is new sent.
 * `opts.warn`: told when a partial clone's server cannot filter (the fetch is
 * then a full one, as git's).
 */
export async function fetchHttp(gitdir: string, url: string, signal: AbortSignal, opts: FetchDepth & { warn?: (message: string) => void } = {}): Promise<FetchResult> {
  throwIfAborted(signal);
  try {
    const limits = transferLimits();
    const ad = await timePhase("http.advertise", () => advertise(url, signal, limits));
    const boundary = readShallow(gitdir);
    const deepen = opts.depth !== undefined && opts.depth > 0 && (opts.depth !== INFINITE_DEPTH || boundary.size > 0);
    const narrowed = deepen || boundary.size > 0;
    const remote = narrowed ? narrowRefs(gitdir, ad.remote, opts.ref) : ad.remote;
    const plan = planRefs(gitdir, remote);
    let links: PackLinks | undefined;
    // Deepening wants the tips even when they are here: the history below them is what is asked for.
    const wants = deepen && plan.missing.length === 0 ? [...new Set([...remote.branches.values(), ...remote.tags.values()])] : plan.missing;
    let before: Set<string> | null = null;
    if (wants.length > 0) {
      const haves = ourTips(gitdir);
      // A partial clone asks for its filter again (git fetch does), and every pack from its promisor remote is kept and marked.
      const promised = isPartialClone(gitdir);
      const filter = promised ? (partialCloneFilter(gitdir) ?? undefined) : undefined;
      if (filter !== undefined && !ad.capabilities.has("filter")) {
        opts.warn?.(`${displayUrl(url)} does not offer partial clones (no 'filter' capability), so everything is fetched, as git does ("filtering not recognized by server, ignoring").`);
      }
      const shallow = { ours: [...boundary].sort(), depth: deepen ? opts.depth : undefined };
      const pack = await timePhase("http.pack-first-byte", () => uploadPack(url, ad, wants, haves, signal, limits, { filter, shallow }));
      const store = new ObjectStore(gitdir);
      // A first fetch keeps the pack and checks its history from what the indexer records.
      if (haves.length === 0) links = new PackLinks();
      const promisor = promised ? promisorFileText(plan.writes) : undefined;
      try {
        await timePhase("pack.store", () => storePackStream(gitdir, pack, { store, keepPack: haves.length === 0 || promised, signal, limits, links, promisor }));
      } finally {
        store.close();
        await pack.close();
      }
      // The new boundary before the check: the walk ends at it, as git's does.
      if (deepen) before = updateShallow(gitdir, pack.shallow.added, pack.shallow.removed);
    }
    throwIfAborted(signal);
    const writes = narrowed ? [...plan.writes, ...followedTags(gitdir, ad.remote, remote)] : plan.writes;
    // Objects first, refs after: a ref never points at something we lack, nor at a commit whose trees or blobs are missing.
    const t0 = phaseStart();
    try {
      assertConnected(gitdir, url, writes.map(([, oid]) => oid), links);
    } catch (err) {
      if (before !== null) writeShallow(gitdir, before);
      throw err;
    }
    const t1 = phaseStart();
    phaseEnd("connectivity", t0);
    writeRefsSync(gitdir, writes);
    deleteRefsSync(gitdir, plan.prunes);
    writeOriginHead(gitdir, remote.defaultBranch);
    phaseEnd("refs.write", t1);
    return { defaultBranch: remote.defaultBranch, changed: writes.length + plan.prunes.length > 0 };
  } catch (err) {
    throw transportError(url, err);
  }
}
