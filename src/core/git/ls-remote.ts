// The remote's ref list alone (no objects fetched, nothing written): what a
// dry-run sync or update uses to say where each pack would move.
import { throwIfAborted } from "../base/errors.ts";
import { notARepo } from "./transport/git-errors.ts";
import { gitdirOf } from "./refs/refs.ts";
import type { RemoteRefs } from "./transport/remote-refs.ts";
import { assertGitUrl, localPath, transportOf } from "./transport/url.ts";
import { checkedFetchUrl } from "./transport/url-rewrite.ts";

/** The refs at `url` as the user's url.<base>.insteadOf rewrites it; the system git is handed `url` itself and rewrites it the same way. */
export async function listRemoteRefs(url: string, signal: AbortSignal): Promise<RemoteRefs> {
  assertGitUrl(url);
  throwIfAborted(signal);
  const from = checkedFetchUrl(url);
  const transport = transportOf(from);
  if (transport === "local") {
    const src = localPath(from);
    const gitdir = gitdirOf(src);
    if (!gitdir) throw notARepo(src);
    return (await import("./transport/local-transport.ts")).readLocalRefs(gitdir);
  }
  if (transport === "ssh") {
    const { parseLsRemote, runGit } = await import("./system-git.ts");
    return parseLsRemote(await runGit(["ls-remote", "--symref", "--", url], url, signal));
  }
  return (await import("./transport/http-transport.ts")).listHttpRefs(from, signal);
}

/**
 * The object `ref` names upstream (null ref: the default branch's tip), or
 * null when the remote has no such branch or tag. A sha names itself. An
 * annotated tag gives the tag object's id.
 */
export function remoteTarget(refs: RemoteRefs, ref: string | null): string | null {
  if (ref === null) return refs.defaultBranch === null ? null : (refs.branches.get(refs.defaultBranch) ?? null);
  const name = ref.replace(/^refs\/(heads|tags)\//, "");
  if (!ref.startsWith("refs/tags/") && refs.branches.has(name)) return refs.branches.get(name) ?? null;
  if (!ref.startsWith("refs/heads/") && refs.tags.has(name)) return refs.tags.get(name) ?? null;
  return /^[0-9a-f]{40}$/i.test(ref) ? ref.toLowerCase() : null;
}
