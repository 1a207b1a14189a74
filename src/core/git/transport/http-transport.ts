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
import { isShallow } from "../layout/layout.ts";
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

/** Our tips the server may know: HEAD, local branches, remote-tracking branches, tags. */
function ourTips(gitdir: string): string[] {
  // A shallow repository would have to describe its boundary; offering nothing is always correct.
  if (isShallow(gitdir)) return [];
  const tips = new Set<string>();
  const head = resolveRefSync(gitdir, "HEAD");
  if (head) tips.add(head);
  for (const prefix of ["refs/heads/", "refs/remotes/", "refs/tags/"]) for (const oid of listRefsSync(gitdir, prefix).values()) tips.add(oid);
  return [...tips].slice(0, MAX_HAVES);
}

export async function fetchHttp(gitdir: string, url: string, signal: AbortSignal): Promise<FetchResult> {
  throwIfAborted(signal);
  try {
    const limits = transferLimits();
    const ad = await timePhase("http.advertise", () => advertise(url, signal, limits));
    const remote = ad.remote;
    const plan = planRefs(gitdir, remote);
    let links: PackLinks | undefined;
    if (plan.missing.length > 0) {
      const haves = ourTips(gitdir);
      const pack = await timePhase("http.pack-first-byte", () => uploadPack(url, ad, plan.missing, haves, signal, limits));
      const store = new ObjectStore(gitdir);
      // A first fetch keeps the pack and checks its history from what the indexer records.
      if (haves.length === 0) links = new PackLinks();
      try {
        await timePhase("pack.store", () => storePackStream(gitdir, pack, { store, keepPack: haves.length === 0, signal, limits, links }));
      } finally {
        store.close();
        await pack.close();
      }
    }
    throwIfAborted(signal);
    // Objects first, refs after: a ref never points at something we lack, nor at a commit whose trees or blobs are missing.
    const t0 = phaseStart();
    assertConnected(gitdir, url, plan.writes.map(([, oid]) => oid), links);
    const t1 = phaseStart();
    phaseEnd("connectivity", t0);
    writeRefsSync(gitdir, plan.writes);
    deleteRefsSync(gitdir, plan.prunes);
    writeOriginHead(gitdir, remote.defaultBranch);
    phaseEnd("refs.write", t1);
    return { defaultBranch: remote.defaultBranch, changed: plan.writes.length + plan.prunes.length > 0 };
  } catch (err) {
    throw transportError(url, err);
  }
}
