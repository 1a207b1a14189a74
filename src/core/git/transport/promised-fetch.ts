// Fetching what a partial clone's filter left out, in one batch, as git's
// promisor-remote.c does: one fetch from the promisor remote whose wants are
// the missing object ids, with no haves (no negotiation) and no filter, its
// pack kept and marked `.promisor`. A checkout calls `ensureBlobs` with the
// tree it is about to write: the blobs of that tree missing here come over
// before any file is written, so a checkout never stops half-way for one.
import { GrexError, packOpError, throwIfAborted } from "../../base/errors.ts";
import { runProcess } from "../../base/proc.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { type GitObject, ObjectStore, writeLooseObjects } from "../objects/object-store.ts";
import { transferLimits } from "../objects/limits.ts";
import { storePack, storePackStream } from "../objects/pack-index.ts";
import { buildPack } from "../objects/pack-write.ts";
import { gitdirOf } from "../refs/refs.ts";
import { readGitdirConfigValue } from "../refs/config.ts";
import { notARepo, transportError } from "./git-errors.ts";
import { isPartialClone, promisorRemote } from "./promisor.ts";
import { advertise, uploadPack } from "./smart-http.ts";
import { checkedFetchUrl } from "./url-rewrite.ts";
import { displayUrl, localPath, transportOf } from "./url.ts";

/** Up to this many objects from a local source are written loose; more go into one pack. */
const LOOSE_LIMIT = 256;
/** Object ids per `git fetch` command line (ssh): well under any argument-size limit. */
const IDS_PER_COMMAND = 8192;

/**
 * The blobs of `tree` (path → "mode oid", as verifiedFlatTree returns it)
 * missing here, fetched from the promisor remote in one batch when this is
 * a partial clone. Returns how many were fetched. `dir`: the work tree (for
 * the system git, which runs in it).
 */
export async function ensureBlobs(gitdir: string, dir: string, fallbackUrl: string, tree: ReadonlyMap<string, string>, signal: AbortSignal): Promise<number> {
  if (!isPartialClone(gitdir)) return 0;
  const presence = new ObjectPresence(gitdir);
  const missing = new Set<string>();
  for (const value of tree.values()) {
    const sp = value.indexOf(" ");
    if (value.slice(0, sp) === "57344") continue; // a gitlink (160000): its commit lives in the submodule
    const oid = value.slice(sp + 1);
    // quick: in a partial clone most of a tree's blobs are absent, and a miss here only asks the server once more.
    if (!missing.has(oid) && !presence.has(oid, { quick: true })) missing.add(oid);
  }
  if (missing.size === 0) return 0;
  await fetchPromised(gitdir, dir, fallbackUrl, [...missing], signal);
  return missing.size;
}

/** The promisor remote's URL (as the user's insteadOf rewrites it), else `fallbackUrl`. */
function promisorUrl(gitdir: string, fallbackUrl: string): string {
  const remote = promisorRemote(gitdir);
  const url = (remote === null ? null : readGitdirConfigValue(gitdir, "remote", remote, "url")) ?? fallbackUrl;
  return checkedFetchUrl(url);
}

/** Fetch `oids` (objects the filter left out) from the promisor remote; every one must arrive. */
export async function fetchPromised(gitdir: string, dir: string, fallbackUrl: string, oids: string[], signal: AbortSignal): Promise<void> {
  throwIfAborted(signal);
  const url = promisorUrl(gitdir, fallbackUrl);
  try {
    const kind = transportOf(url);
    if (kind === "http") await fromHttp(gitdir, url, oids, signal);
    else if (kind === "local") await fromLocal(gitdir, url, oids, signal);
    else await fromSystemGit(dir, oids, signal);
  } catch (err) {
    // git's upload-pack refuses a want no ref names unless the server allows objects by id.
    if (err instanceof GrexError && /not our ref/.test(err.message)) throw refusedById(url, oids.length);
    throw transportError(url, err);
  }
  const presence = new ObjectPresence(gitdir);
  const still = oids.find((o) => !presence.has(o));
  if (still !== undefined) {
    throw packOpError(
      `${displayUrl(url)} did not send object ${still.slice(0, 12)} that this partial clone needs (${oids.length} were asked for); check that the server allows fetching objects by id (uploadpack.allowAnySHA1InWant), then run the command again.`,
      { url: displayUrl(url), object: still },
    );
  }
}

const refusedById = (url: string, count: number): GrexError =>
  packOpError(
    `${displayUrl(url)} refused to send the ${count} missing object(s) this partial clone needs, because it does not allow fetching objects by id (uploadpack.allowAnySHA1InWant); nothing was changed — ask the server's owner to allow it, or add the pack again without --filter.`,
    { url: displayUrl(url) },
  );

async function fromHttp(gitdir: string, url: string, oids: string[], signal: AbortSignal): Promise<void> {
  const limits = transferLimits();
  const ad = await advertise(url, signal, limits);
  const pack = await uploadPack(url, ad, oids, [], signal, limits);
  const store = new ObjectStore(gitdir);
  try {
    await storePackStream(gitdir, pack, { store, keepPack: true, signal, limits, promisor: "" });
  } finally {
    store.close();
    await pack.close();
  }
}

/** grex's own server side for paths and file:// URLs: the objects read from the source's store. */
async function fromLocal(gitdir: string, url: string, oids: string[], signal: AbortSignal): Promise<void> {
  const src = gitdirOf(localPath(url));
  if (!src) throw notARepo(localPath(url));
  const store = new ObjectStore(src);
  const found: Array<{ oid: string } & GitObject> = [];
  try {
    for (const oid of oids) {
      if (found.length % 256 === 0) throwIfAborted(signal);
      const o = store.read(oid);
      if (o) found.push({ oid, ...o });
    }
  } finally {
    store.close();
  }
  if (found.length <= LOOSE_LIMIT) {
    writeLooseObjects(gitdir, found);
    return;
  }
  const own = new ObjectStore(gitdir);
  try {
    await storePack(gitdir, buildPack(found), { store: own, keepPack: true, signal, promisor: "" });
  } finally {
    own.close();
  }
}

/** ssh: the system git fetches them, as its own lazy fetch does (noop negotiation, no tags, the objects' ids as wants). */
async function fromSystemGit(dir: string, oids: string[], signal: AbortSignal): Promise<void> {
  for (let i = 0; i < oids.length; i += IDS_PER_COMMAND) {
    const argv = ["git", "-C", dir, "-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "origin", ...oids.slice(i, i + IDS_PER_COMMAND)];
    const r = await runProcess({ argv, env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }, signal, maxBytes: 64 * 1024 });
    if (r.code !== 0) throw packOpError(`git could not fetch the missing objects of ${dir} (${r.stderr.trim().split("\n").at(-1) ?? `exit ${r.code}`}); check your access to origin, then run the command again.`, { dir });
  }
}
