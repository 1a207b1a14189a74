// Partial clones: a repository whose origin is a "promisor remote", as
// `git clone --filter=<spec>` leaves it. Objects the filter left out are
// promised by origin: git (and grex) fetch them from there when a checkout
// needs them, and connectivity checks accept their absence.
//
// What marks it, exactly as git 2.39 writes it (partial_clone_register):
// `core.repositoryformatversion = 1`, `remote.origin.promisor = true`,
// `remote.origin.partialclonefilter = <spec>`, and a `<pack>.promisor` file
// beside every pack received from origin (its lines: each ref fetched, "oid
// name"; empty for a fetch of missing objects). Older git versions also wrote
// `extensions.partialClone = origin`; git no longer does, and reads the
// remote's `promisor` key instead, so grex writes what git writes today.
import { configBool, readGitdirConfigValue, type ConfigSet } from "../refs/config.ts";

/** The remote grex clones from (remote-refs.ts's REMOTE, named here: connectivity.ts imports this file, and remote-refs.ts imports connectivity.ts). */
const REMOTE = "origin";

/** The config a new partial clone of `url` gets for its origin (after `url` and `fetch`). */
export function promisorConfig(filter: string): ConfigSet[] {
  return [
    { section: "remote", sub: REMOTE, key: "promisor", value: "true" },
    { section: "remote", sub: REMOTE, key: "partialclonefilter", value: filter },
  ];
}

/** The promisor remote's name, or null for a repository that is not a partial clone (as git's promisor-remote.c reads it). */
export function promisorRemote(gitdir: string): string | null {
  const ext = readGitdirConfigValue(gitdir, "extensions", null, "partialclone");
  if (ext !== null && ext !== "") return ext;
  return configBool(readGitdirConfigValue(gitdir, "remote", REMOTE, "promisor")) === true ? REMOTE : null;
}

/** Whether objects may be missing here because a promisor remote promised them. */
export const isPartialClone = (gitdir: string): boolean => promisorRemote(gitdir) !== null;

/** The filter later fetches from the promisor remote ask for (`remote.<name>.partialclonefilter`), or null. */
export function partialCloneFilter(gitdir: string): string | null {
  const remote = promisorRemote(gitdir);
  if (remote === null) return null;
  const f = readGitdirConfigValue(gitdir, "remote", remote, "partialclonefilter");
  return f === null || f === "" ? null : f;
}

/** The text of a received pack's `.promisor` file: the refs that fetch asked for, as git writes them. */
export function promisorFileText(refs: ReadonlyArray<readonly [string, string]>): string {
  // The remote's names for them (origin's branches are its refs/heads/*), as git's fetch-pack records them.
  const prefix = `refs/remotes/${REMOTE}/`;
  return refs.map(([name, oid]) => `${oid} ${name.startsWith(prefix) ? `refs/heads/${name.slice(prefix.length)}` : name}\n`).join("");
}
