// One git interface used by every verb (SPEC §6), the picker that chooses a
// backend by URL, and cheap synchronous readers for `ls`/`status` that never
// load isomorphic-git. Backends are loaded on first use.
//
//   http(s)://           isomorphic-git in process           (http-transport.ts)
//   path, file://        our local transport, in process     (local-transport.ts)
//   ssh://, user@host:p  the system git program              (system-git.ts)
//
// The transport is that of the URL after the user's url.<base>.insteadOf
// (url-rewrite.ts); the repository's origin keeps the manifest's URL, as git
// clone keeps the URL it was given.
//
// No locks are taken here: callers wrap clone/update in withBackendLock.
import { assertGitUrl, transportOf } from "./transport/url.ts";
import { checkedFetchUrl } from "./transport/url-rewrite.ts";
import type { GitBackend } from "./backend-api.ts";
import { dotGitOf } from "./layout/layout.ts";

export type { HeadInfo } from "./refs/head.ts";
export type { GitBackend } from "./backend-api.ts";

export { readHeadSync } from "./refs/refs.ts";
export { originUrlSync } from "./refs/config.ts";
export { type Transport, localPath, transportOf } from "./transport/url.ts";

type Impl = () => Promise<GitBackend>;

// Read-only questions every backend answers with the same code (inspect.ts):
// loaded on their own, so `status` does not load the transports and checkout.
// The promise is kept: a repeated import() costs microseconds per call, per pack.
let inspectModule: Promise<typeof import("./inspect.ts")> | undefined;
const inspect = () => (inspectModule ??= import("./inspect.ts"));

function lazy(load: Impl): GitBackend {
  return {
    clone: async (...a) => (await load()).clone(...a),
    update: async (...a) => (await load()).update(...a),
    fetch: async (...a) => (await load()).fetch(...a),
    head: async (...a) => (await inspect()).head(...a),
    isDirty: async (...a) => (await inspect()).isDirty(...a),
    remoteUrl: async (...a) => (await inspect()).remoteUrl(...a),
  };
}

export const inProcessBackend: GitBackend = lazy(async () => (await import("./in-process.ts")).inProcess);
export const systemGitBackend: GitBackend = lazy(async () => (await import("./system-git.ts")).systemGit);

/** The backend that transfers `url` now: the system git when the rewritten URL is ssh, else the in-process one. */
export function transferBackendFor(url: string): GitBackend {
  return transportOf(checkedFetchUrl(url)) === "ssh" ? systemGitBackend : inProcessBackend;
}

/**
 * The backend for a pack URL (one holding a control character is refused:
 * `assertGitUrl`), chosen when it transfers, by the URL the user's
 * `url.<base>.insteadOf` makes of it (url-rewrite.ts): a mirror may use
 * another transport than the manifest's URL. Both backends answer the
 * read-only questions with the same code, so those read no config.
 */
export function backendFor(url: string): GitBackend {
  assertGitUrl(url);
  const pick = () => transferBackendFor(url);
  return {
    clone: async (...a) => pick().clone(...a),
    update: async (...a) => pick().update(...a),
    fetch: async (...a) => pick().fetch(...a),
    head: async (...a) => (await inspect()).head(...a),
    isDirty: async (...a) => (await inspect()).isDirty(...a),
    remoteUrl: async (...a) => (await inspect()).remoteUrl(...a),
  };
}

/** The git dir of a work tree (a `.git` directory, or the one a `.git` file names); null when `dir` is none. Cheap and synchronous. */
export const workTreeGitdir: (dir: string) => string | null = dotGitOf;

/** Whether `dir` is a git work tree (a `.git` directory, or a `.git` file naming one). */
export const isGitRepo = (dir: string): boolean => workTreeGitdir(dir) !== null;
