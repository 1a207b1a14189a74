// One git interface used by every verb (SPEC §6), the picker that chooses a
// backend by URL, and cheap synchronous readers for `ls`/`status` that never
// load isomorphic-git. Backends are loaded on first use.
//
//   http(s)://           isomorphic-git in process           (http-transport.ts)
//   path, file://        our local transport, in process     (local-transport.ts)
//   ssh://, user@host:p  the system git program              (system-git.ts)
//
// No locks are taken here: callers wrap clone/update in withBackendLock.
import { assertGitUrl, transportOf } from "./transport/url.ts";
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

/** The backend for a URL (one holding a control character is refused: `assertGitUrl`). */
export function backendFor(url: string): GitBackend {
  assertGitUrl(url);
  return transportOf(url) === "ssh" ? systemGitBackend : inProcessBackend;
}

/** The git dir of a work tree (a `.git` directory, or the one a `.git` file names); null when `dir` is none. Cheap and synchronous. */
export const workTreeGitdir: (dir: string) => string | null = dotGitOf;

/** Whether `dir` is a git work tree (a `.git` directory, or a `.git` file naming one). */
export const isGitRepo = (dir: string): boolean => workTreeGitdir(dir) !== null;
