// `grex import --from <file>`: another tool's repository list (vcstool,
// west, repo, gita, myrepos) read into import candidates. The readers in
// core/compat are pure; this gives them the file, the files a repo manifest
// includes (each under the same size cap) and the origin URL of local clones.
// Loaded only when --from is given.
import { homedir } from "node:os";
import { resolve } from "node:path";
import { usageError } from "../core/base/errors.ts";
import { ABSENT, readRegularFile } from "../core/fs/read-file.ts";
import { isGitRepo, originUrlSync } from "../core/git/backend.ts";
import { detectPeerFormat, PEER_FORMATS, readPeerManifest, type PeerFormat, type PeerImport } from "../core/compat/peer-manifests.ts";

/** A manifest or list of repositories: far below this even for Android's (about 1 MiB). */
const MAX_PEER_FILE_BYTES = 4 * 1024 * 1024;

function readText(file: string): string | null {
  const bytes = readRegularFile(file, {
    inside: null,
    maxBytes: MAX_PEER_FILE_BYTES,
    error: (message) => usageError(message, { field: "from" }),
    tooBig: "is over the 4 MiB limit for an imported repository list; split it into several files",
  });
  return bytes === ABSENT ? null : bytes.toString("utf8");
}

export function readPeerFile(root: string, file: string, format: PeerFormat | undefined): Promise<PeerImport> {
  const abs = resolve(root, file);
  const text = readText(abs);
  if (text === null) throw usageError(`Cannot read ${file}; check the --from path.`, { field: "from" });
  const chosen = format ?? detectPeerFormat(file, text);
  if (chosen === null) {
    throw usageError(
      `Cannot tell which tool wrote ${file}; pass --format ${PEER_FORMATS.join("|")} (or name it *.repos, west.yml, *.xml, repos.csv or .mrconfig).`,
      { field: "format" },
    );
  }
  return readPeerManifest(chosen, {
    file,
    abs,
    text,
    workspaceRoot: root,
    home: homedir(),
    readInclude: (p) => {
      try {
        return readText(p);
      } catch {
        return null;
      }
    },
    originOf: (p) => (isGitRepo(p) ? originUrlSync(p) : null),
  });
}
