// http(s) URLs: isomorphic-git in process. One GET lists the remote's refs;
// when they match ours (a no-op sync) that is all the work done. Otherwise
// isomorphic-git fetches every branch and the tags we lack.
import * as fs from "node:fs";
import { throwIfAborted } from "../errors.ts";
import { transportError } from "./git-errors.ts";
import { loadGit, loadHttp } from "./iso.ts";
import { deleteRefSync } from "./refs.ts";
import { type FetchResult, pickDefaultBranch, planRefs, REMOTE, type RemoteRefs, writeOriginHead } from "./remote-refs.ts";

/** The refs an http(s) remote advertises: one GET, no objects. */
export async function listHttpRefs(url: string, signal: AbortSignal): Promise<{ remote: RemoteRefs; hasHead: boolean }> {
  throwIfAborted(signal);
  const git = await loadGit();
  const http = await loadHttp(signal);
  try {
    const refs = await git.listServerRefs({ http, url, protocolVersion: 1, symrefs: true });
    const branches = new Map<string, string>();
    const tags = new Map<string, string>();
    let headTarget: string | null = null;
    let headOid: string | null = null;
    let hasHead = false;
    for (const r of refs) {
      if (r.ref === "HEAD") {
        hasHead = true;
        headTarget = r.target ?? null;
        headOid = r.oid;
      } else if (r.ref.startsWith("refs/heads/")) branches.set(r.ref.slice(11), r.oid);
      else if (r.ref.startsWith("refs/tags/") && !r.ref.endsWith("^{}")) tags.set(r.ref.slice(10), r.oid);
    }
    return { remote: { branches, tags, defaultBranch: pickDefaultBranch(branches, headTarget, headOid) }, hasHead };
  } catch (err) {
    throw transportError(url, err);
  }
}

export async function fetchHttp(gitdir: string, url: string, signal: AbortSignal): Promise<FetchResult> {
  throwIfAborted(signal);
  const git = await loadGit();
  const http = await loadHttp(signal);
  const { remote, hasHead } = await listHttpRefs(url, signal);
  throwIfAborted(signal);
  const plan = planRefs(gitdir, remote);
  if (plan.writes.length === 0 && plan.prunes.length === 0) {
    writeOriginHead(gitdir, remote.defaultBranch);
    return { defaultBranch: remote.defaultBranch, changed: false };
  }
  // isomorphic-git insists on resolving one "remote ref"; name one that exists.
  const first = remote.branches.keys().next().value ?? remote.tags.keys().next().value;
  const remoteRef = hasHead ? "HEAD" : remote.branches.has(first ?? "") ? `refs/heads/${first}` : `refs/tags/${first}`;
  try {
    await git.fetch({ fs, http, gitdir, url, remote: REMOTE, remoteRef, singleBranch: false, tags: true, prune: true });
  } catch (err) {
    throw transportError(url, err);
  }
  throwIfAborted(signal);
  // isomorphic-git prunes through the configured refspec; make sure of it even if the config differs.
  for (const ref of plan.prunes) deleteRefSync(gitdir, ref);
  writeOriginHead(gitdir, remote.defaultBranch);
  return { defaultBranch: remote.defaultBranch, changed: true };
}
