// What `grex serve`'s status socket and the `grex status` that asks it share:
// where the socket is, and what both must agree on before an answer counts.
// The protocol is newline-delimited JSON over a Unix socket:
//   client → {"hello": {"version", "env"}}       server → {"hello": true} or {"hello": false, "why"}
//   client → {"id", "dirty": DirtyQuery}         server → {"id", "dirty": boolean} or {"id", "error"}
//   client → {"id", "report": true}              server → {"id", "report": ResidentPackReport[]}
// The server says hello as soon as it reads the client's, so a client knows
// within its deadline whether an answer will come, and then writes a
// heartbeat ({"busy": true}) every HEARTBEAT_MS, so a client waiting for a
// long first scan can tell it from a server that hangs.
import { join } from "node:path";

/** The socket of the workspace whose state directory is `stateDir`. */
export const residentSocketPath = (stateDir: string): string => join(stateDir, "serve.sock");

/** Unix socket paths longer than this do not fit in `sockaddr_un` on every system. */
export const SOCKET_PATH_MAX = 103;

/** How long a `grex status` waits for the server's hello before scanning itself. */
export const HELLO_DEADLINE_MS = 50;

/** While a connection is open the server writes `{"busy":true}` this often, so a client can tell a slow answer from a hung server. */
export const HEARTBEAT_MS = 250;

/** A client waiting for answers gives up (and scans by itself) after this long without a byte from the server. */
export const SILENCE_LIMIT_MS = 2000;

/** The variables that change what a dirty check reads (git's config and ignore files): both sides must have the same. */
const ENV_KEYS = ["HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"];

export function envFingerprint(env: Record<string, string | undefined>): string {
  const gitConfig = Object.keys(env)
    .filter((k) => k.startsWith("GIT_CONFIG"))
    .sort()
    .map((k) => [k, env[k] ?? null]);
  return JSON.stringify([ENV_KEYS.map((k) => env[k] ?? null), gitConfig]);
}
