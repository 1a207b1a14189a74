// What `grex serve`'s status socket and the `grex status` that asks it share:
// where the socket is, and what both must agree on before an answer counts.
// The protocol is newline-delimited JSON over a Unix socket:
//   client → {"hello": {"version", "env"}}       server → {"hello": true} or {"hello": false, "why"}
//   client → {"id", "dirty": DirtyQuery}         server → {"id", "dirty": boolean} or {"id", "error"}
//   client → {"id", "report": true}              server → {"id", "report": ResidentPackReport[]}
// The server says hello as soon as it reads the client's, so a client knows
// within its deadline whether an answer will come.
import { join } from "node:path";

/** The socket of the workspace whose state directory is `stateDir`. */
export const residentSocketPath = (stateDir: string): string => join(stateDir, "serve.sock");

/** Unix socket paths longer than this do not fit in `sockaddr_un` on every system. */
export const SOCKET_PATH_MAX = 103;

/** How long a `grex status` waits for the server's hello before scanning itself. */
export const HELLO_DEADLINE_MS = 50;

/** The variables that change what a dirty check reads (git's config and ignore files): both sides must have the same. */
const ENV_KEYS = ["HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"];

export function envFingerprint(env: Record<string, string | undefined>): string {
  const gitConfig = Object.keys(env)
    .filter((k) => k.startsWith("GIT_CONFIG"))
    .sort()
    .map((k) => [k, env[k] ?? null]);
  return JSON.stringify([ENV_KEYS.map((k) => env[k] ?? null), gitConfig]);
}
