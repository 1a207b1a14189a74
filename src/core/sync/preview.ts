// Dry-run sync/update: where a pack would move, from the remote's ref list
// alone (no objects fetched, nothing on disk touched).
import { listRemoteRefs, remoteTarget } from "../git/ls-remote.ts";
import { gitdirOf, resolveRefSync } from "../git/refs/refs.ts";

const short = (sha: string | null) => (sha === null ? "nothing" : sha.slice(0, 7));

/** What a preview reads from a tree node and fills in (tree.ts's TreeNode has these). */
export interface PreviewNode {
  url: string;
  ref: string | null;
  dir: string;
  head: { sha: string } | null;
  outcome: string;
  message: string;
  wouldMoveTo?: string;
}

export async function previewMove(node: PreviewNode, signal: AbortSignal): Promise<void> {
  const refs = await listRemoteRefs(node.url, signal);
  let target = remoteTarget(refs, node.ref);
  const wanted = node.ref ?? refs.defaultBranch ?? "the remote HEAD";
  if (target === null) {
    node.outcome = "failed";
    node.message = `would fail: ref '${wanted}' not found in ${node.url}`;
    return;
  }
  // An annotated tag is advertised as its tag object: unchanged upstream means the pack stays where it is.
  const gitdir = gitdirOf(node.dir);
  const tag = node.ref?.replace(/^refs\/tags\//, "");
  if (tag !== undefined && gitdir && refs.tags.get(tag) === target && resolveRefSync(gitdir, `refs/tags/${tag}`) === target) {
    target = node.head?.sha ?? target;
  }
  node.wouldMoveTo = target;
  const from = node.head?.sha ?? null;
  node.message = from === target ? `up to date at ${short(target)} (${wanted})` : `would move ${short(from)} -> ${short(target)} (${wanted})`;
}
