// The in-process git backend: isomorphic-git for http(s), and our own local
// transport for paths and file:// URLs (isomorphic-git has none). This module
// is only ever loaded with a dynamic import.
import * as fs from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { GrexError, packOpError, throwIfAborted } from "../errors.ts";
import { type GitBackend, type HeadInfo, readHeadSync, transportOf } from "./backend.ts";
import { fetchLocal } from "./local-transport.ts";

const REMOTE = "origin";

/** A one-sentence pack_op error out of whatever isomorphic-git threw. */
export function fetchError(url: string, err: unknown): GrexError {
  if (err instanceof GrexError) return err;
  const msg = err instanceof Error ? err.message.split("\n")[0]?.replace(/\.$/, "") : String(err);
  return packOpError(`Could not fetch ${url} (${msg}); check the URL and that the repository is reachable.`);
}

/** Fetch every branch and tag from `url` into `dir`'s origin refs; returns the remote's default branch. */
export async function fetchAll(dir: string, url: string, signal: AbortSignal): Promise<string | null> {
  throwIfAborted(signal);
  if (transportOf(url) === "local") return fetchLocal(localPath(url), dir, signal);
  try {
    const r = await git.fetch({ fs, http, dir, url, remote: REMOTE, tags: true, singleBranch: false, prune: true });
    const def = r.defaultBranch ? r.defaultBranch.replace(/^refs\/heads\//, "") : null;
    if (def) await git.writeRef({ fs, dir, ref: `refs/remotes/${REMOTE}/HEAD`, value: `refs/remotes/${REMOTE}/${def}`, symbolic: true, force: true });
    return def;
  } catch (err) {
    throw fetchError(url, err);
  } finally {
    throwIfAborted(signal);
  }
}

export function localPath(url: string): string {
  const p = url.startsWith("file://") ? decodeURIComponent(url.slice("file://".length)) : url;
  return isAbsolute(p) ? p : resolve(p);
}

async function resolveMaybe(dir: string, ref: string): Promise<string | null> {
  try {
    return await git.resolveRef({ fs, dir, ref });
  } catch {
    return null;
  }
}

/** Peel an annotated tag (or a tag chain) down to its commit. */
async function peel(dir: string, oid: string): Promise<string> {
  let cur = oid;
  for (let i = 0; i < 10; i++) {
    const o = await git.readObject({ fs, dir, oid: cur, format: "parsed" });
    if (o.type !== "tag") return cur;
    cur = (o.object as { object: string }).object;
  }
  return cur;
}

async function checkoutForce(dir: string, ref: string): Promise<void> {
  await git.checkout({ fs, dir, ref, force: true });
}

async function moveToBranch(dir: string, url: string, branch: string): Promise<void> {
  const remoteOid = await resolveMaybe(dir, `refs/remotes/${REMOTE}/${branch}`);
  if (!remoteOid) throw packOpError(`Branch '${branch}' was not found in ${url}; check the branch name.`);
  const localOid = await resolveMaybe(dir, `refs/heads/${branch}`);
  const current = readHeadSync(dir)?.branch ?? null;
  if (localOid === null) {
    await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: remoteOid, force: true });
    await git.setConfig({ fs, dir, path: `branch.${branch}.remote`, value: REMOTE });
    await git.setConfig({ fs, dir, path: `branch.${branch}.merge`, value: `refs/heads/${branch}` });
    await checkoutForce(dir, branch);
    return;
  }
  if (localOid !== remoteOid) {
    if (await git.isDescendent({ fs, dir, oid: remoteOid, ancestor: localOid, depth: -1 })) {
      await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: remoteOid, force: true });
      await checkoutForce(dir, branch);
      return;
    }
    if (!(await git.isDescendent({ fs, dir, oid: localOid, ancestor: remoteOid, depth: -1 }))) {
      throw packOpError(
        `Branch '${branch}' in ${dir} has diverged from ${url} (local ${localOid.slice(0, 7)}, remote ${remoteOid.slice(0, 7)}); grex only fast-forwards, so merge or rebase it yourself.`,
      );
    }
    // Local is ahead of the remote: nothing to fast-forward.
  }
  if (current !== branch) await checkoutForce(dir, branch);
}

/**
 * Move the working tree to `ref`: a branch (tracked, fast-forward only), a tag
 * or a commit sha (detached). null = stay on the current branch, or the
 * remote's default branch for a fresh clone or a detached HEAD.
 */
export async function moveTo(dir: string, url: string, ref: string | null, defaultBranch: string | null, fresh: boolean): Promise<HeadInfo> {
  let target = ref;
  if (target === null) {
    const current = fresh ? null : (readHeadSync(dir)?.branch ?? null);
    target = current ?? defaultBranch;
    if (target === null) throw packOpError(`${url} has no default branch; pass a ref (a branch, tag or commit).`);
    await moveToBranch(dir, url, target);
  } else if (await resolveMaybe(dir, `refs/remotes/${REMOTE}/${target}`)) {
    await moveToBranch(dir, url, target);
  } else {
    const tagOid = await resolveMaybe(dir, `refs/tags/${target}`);
    let commit: string | null = tagOid ? await peel(dir, tagOid) : null;
    if (!commit && /^[0-9a-f]{4,40}$/i.test(target)) {
      try {
        commit = await peel(dir, await git.expandOid({ fs, dir, oid: target.toLowerCase() }));
      } catch {
        commit = null;
      }
    }
    if (!commit) throw packOpError(`Ref '${target}' was not found in ${url}; check the branch, tag or commit name.`);
    if (readHeadSync(dir)?.sha !== commit || readHeadSync(dir)?.branch !== null) await checkoutForce(dir, commit);
  }
  const head = readHeadSync(dir);
  if (!head) throw packOpError(`Could not read HEAD in ${dir} after checkout; inspect the repository with git.`);
  return head;
}

/** Build the clone next to `dir` under a hidden name and rename it into place only when complete. */
export async function cloneAtomically(
  dir: string,
  fill: (tmp: string) => Promise<HeadInfo>,
  signal: AbortSignal,
): Promise<HeadInfo> {
  if (fs.existsSync(dir)) throw packOpError(`${dir} already exists; remove it or choose another path.`);
  fs.mkdirSync(dirname(dir), { recursive: true });
  const tmp = join(dirname(dir), `.${basename(dir)}.grex-clone-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  try {
    const head = await fill(tmp);
    throwIfAborted(signal);
    fs.renameSync(tmp, dir);
    return head;
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

export const inProcess: GitBackend = {
  clone(url, dir, { ref, signal }) {
    return cloneAtomically(
      dir,
      async (tmp) => {
        await git.init({ fs, dir: tmp, defaultBranch: "main" });
        await git.addRemote({ fs, dir: tmp, remote: REMOTE, url });
        const def = await fetchAll(tmp, url, signal);
        return moveTo(tmp, url, ref, def, true);
      },
      signal,
    );
  },

  async update(dir, url, { ref, signal }) {
    const before = readHeadSync(dir) ?? (await this.head(dir));
    const def = await fetchAll(dir, url, signal);
    throwIfAborted(signal);
    const after = await moveTo(dir, url, ref, def, false);
    return { before, after };
  },

  async head(dir) {
    const h = readHeadSync(dir);
    if (h) return h;
    const sha = await git.resolveRef({ fs, dir, ref: "HEAD" });
    return { sha, branch: (await git.currentBranch({ fs, dir })) ?? null };
  },

  async isDirty(dir) {
    const rows = await git.statusMatrix({ fs, dir });
    return rows.some(([, head, workdir, stage]) => !(head === 1 && workdir === 1 && stage === 1));
  },

  async remoteUrl(dir) {
    const url = await git.getConfig({ fs, dir, path: `remote.${REMOTE}.url` });
    return typeof url === "string" ? url : null;
  },
};
