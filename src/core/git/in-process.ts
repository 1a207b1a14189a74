// The in-process backend: http(s) through isomorphic-git, paths and file://
// URLs through our local transport; checkout is shared. Loaded lazily.
import { join } from "node:path";
import { throwIfAborted } from "../errors.ts";
import type { GitBackend } from "./backend.ts";
import { moveTo } from "./checkout.ts";
import { cloneAtomically } from "./clone.ts";
import { fetchHttp } from "./http-transport.ts";
import { head, isDirty, remoteUrl, requireGitdir } from "./inspect.ts";
import { loadGit } from "./iso.ts";
import { fetchLocal } from "./local-transport.ts";
import { type FetchResult, REMOTE } from "./remote-refs.ts";
import { transportOf } from "./url.ts";
import * as fs from "node:fs";

function fetchInto(gitdir: string, url: string, signal: AbortSignal): Promise<FetchResult> {
  return transportOf(url) === "http" ? fetchHttp(gitdir, url, signal) : fetchLocal(gitdir, url, signal);
}

export const inProcess: GitBackend = {
  clone(url, dir, { ref, signal }) {
    return cloneAtomically(dir, signal, async (tmp) => {
      const git = await loadGit();
      await git.init({ fs, dir: tmp, defaultBranch: "main" });
      await git.addRemote({ fs, dir: tmp, remote: REMOTE, url });
      const gitdir = join(tmp, ".git");
      const { defaultBranch } = await fetchInto(gitdir, url, signal);
      throwIfAborted(signal);
      return moveTo({ dir: tmp, gitdir, url, ref, defaultBranch });
    });
  },

  async update(dir, url, { ref, signal }) {
    throwIfAborted(signal);
    const gitdir = requireGitdir(dir);
    const before = await head(dir);
    const { defaultBranch } = await fetchInto(gitdir, url, signal);
    throwIfAborted(signal);
    const after = await moveTo({ dir, gitdir, url, ref, defaultBranch });
    return { before, after };
  },

  head,
  isDirty,
  remoteUrl,
};
