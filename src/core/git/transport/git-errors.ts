// One-sentence pack_op errors for every way a git operation can fail.
import { CancelledError, GrexError, errnoCode, packOpError, runtimeWords } from "../../base/errors.ts";
import { displayUrl } from "./url.ts";

const firstLine = runtimeWords;

/** The peer hung up (reset or closed) rather than failing in words of its own. */
export function isConnectionDrop(err: unknown): boolean {
  const code = errnoCode(err) ?? (err instanceof Error ? err.name : undefined);
  if (code === "ECONNRESET" || code === "ConnectionClosed" || code === "EPIPE" || code === "UND_ERR_SOCKET") return true;
  return err instanceof Error && /connection was closed unexpectedly|socket hang up/i.test(err.message);
}

export const refNotFound = (ref: string, url: string) =>
  packOpError(`ref '${ref}' not found in ${url}; check the tag or branch name.`, { ref, url });

export const noBranches = (url: string) =>
  packOpError(`${url} has no branches to check out; push a commit to it or pass a ref.`, { url });

export const diverged = (branch: string, dir: string, url: string, local: string, remote: string) =>
  packOpError(
    `branch '${branch}' in ${dir} has diverged from ${url} (local ${local.slice(0, 7)}, remote ${remote.slice(0, 7)}); grex only fast-forwards, so merge or rebase it yourself.`,
    { branch, dir, url },
  );

/** A local source that is not a repository: say whether it is missing altogether, which is the usual case (a typo, a moved directory). */
export const notARepo = (path: string) =>
  (require("node:fs") as typeof import("node:fs")).existsSync(path)
    ? packOpError(`${path} is not a git repository; check the pack URL.`, { path })
    : packOpError(`${path} does not exist; check the pack URL (a local path or file:// URL names a directory holding a git repository).`, { path });

/** Map whatever a transport threw (fs, network, a corrupt pack) to a pack_op GrexError. */
export function transportError(url: string, err: unknown): GrexError {
  if (err instanceof GrexError) return err;
  if (err instanceof Error && (err.name === "AbortError" || errnoCode(err) === "ABORT_ERR")) return new CancelledError();
  const code = errnoCode(err) ?? (err instanceof Error ? err.name : undefined);
  const shown = displayUrl(url);
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ECONNRESET" || code === "ETIMEDOUT" || code === "ConnectionRefused" || code === "ConnectionClosed" || code === "FailedToOpenSocket") {
    return packOpError(`could not reach ${shown} (${code}); check the URL and your network.`, { url: shown, code });
  }
  if (code === "ENOSPC" || code === "EDQUOT") {
    return packOpError(`the disk filled up while fetching from ${shown} (${code}); free some space, then sync again (no ref moved: refs move only over complete objects).`, { url: shown, code });
  }
  if (code === "NotFoundError") {
    return packOpError(`${shown} lacks an object its refs need (a broken or incomplete repository); check it with git fsck, then sync again.`, { url: shown });
  }
  const msg = err instanceof Error ? firstLine(err.message) : String(err);
  return packOpError(`git transfer from ${shown} failed (${msg}); check the URL and that the repository is reachable.`, { url: shown });
}

/** isomorphic-git's "Could not find <oid>". */
export const isNotFound = (err: unknown): boolean => err instanceof Error && (err as Error & { code?: string }).code === "NotFoundError";

/**
 * An object the history needs is not in the repository: named by its role
 * ("the tree of commit X", "the file 'a/b' of commit X") and by where it
 * should have come from (origin's URL).
 */
export const missingObject = (role: string, url: string | null) =>
  packOpError(
    `${role} is missing from ${url ? displayUrl(url) : "the repository"}; the history there is incomplete or damaged: check it with git fsck, then sync again.`,
    { url: url ? displayUrl(url) : null },
  );
