// A first checkout into an empty work tree (a clone): directories from the
// trees, then the files written many at a time (never through a link), with
// gitattributes conversion, and an index that records them with their stat
// data and the commit's cache-tree. Updates of an existing checkout are
// checkout-diff.ts's.
import { reportActivity } from "../../base/activity.ts";
import * as fs from "node:fs";
import { join } from "node:path";
import { packOpError } from "../../base/errors.ts";
import { isNotFound, missingObject } from "../transport/git-errors.ts";
import { readGitdirConfigValue } from "../refs/config.ts";
import { entryFor, type IndexEntry, serializeIndex } from "../objects/index-file.ts";
import { type Git, loadGit } from "../objects/iso.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { cacheTreeOf } from "../objects/tree-read.ts";
import { Conversion, attributePaths } from "./convert.ts";
import { Collector } from "../objects/garbage.ts";

const GITLINK = 0o160000;
const NO_FOLLOW_WRITE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | (fs.constants.O_NOFOLLOW ?? 0);

/** A tree entry name that could escape the work tree or touch .git is refused, as git does. */
export function checkName(name: string, where: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0") || name.toLowerCase() === ".git") {
    throw packOpError(`the repository contains an unsafe path ${JSON.stringify(where + name)}; refusing to check it out.`);
  }
}


/** Check out commit `oid` into `dir`, whose work tree must be empty and which must have no index yet. */
export async function checkoutFresh(dir: string, gitdir: string, oid: string): Promise<void> {
  // Objects come from the native reader; isomorphic-git only for what it cannot read.
  const store = new ObjectStore(gitdir);
  const cache = {};
  let iso: Git | null = null;
  const git = async () => (iso ??= await loadGit());
  // An object the commit needs and the repository lacks is named by its role (git-errors.ts).
  const origin = () => readGitdirConfigValue(gitdir, "remote", "origin", "url");
  const orMissing = async <T>(role: () => string, read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (err) {
      throw isNotFound(err) ? missingObject(role(), origin()) : err;
    }
  };
  const short = oid.slice(0, 12);
  const treeOf = async (treeOid: string, where: string): Promise<Array<{ path: string; mode: string; oid: string; type: string }>> => {
    const native = store.readTree(treeOid);
    if (native) {
      return native.map((e) => ({ path: e.name, mode: e.mode, oid: e.oid, type: e.mode === "040000" ? "tree" : e.mode === "160000" ? "commit" : "blob" }));
    }
    const role = () => (where === "" ? `the tree of commit ${short}` : `the tree of directory '${where.slice(0, -1)}' in commit ${short}`);
    return (await orMissing(role, async () => (await git()).readTree({ fs, gitdir, oid: treeOid, cache }))).tree;
  };
  const blobOf = async (blobOid: string, rel: string): Promise<Uint8Array> => {
    const o = store.read(blobOid);
    if (o?.type === "blob") return o.data;
    return (await orMissing(() => `the file '${rel}' of commit ${short}`, async () => (await git()).readBlob({ fs, gitdir, oid: blobOid, cache }))).blob;
  };
  const rootTree = store.readCommit(oid)?.tree ?? (await orMissing(() => `commit ${short}`, async () => (await git()).readCommit({ fs, gitdir, oid, cache }))).commit.tree;
  const entries: IndexEntry[] = [];
  // First the directories and the list of files, from the trees.
  const files: Array<{ rel: string; mode: string; oid: string }> = [];
  const walk = async (treeOid: string, prefix: string): Promise<void> => {
    for (const e of await treeOf(treeOid, prefix)) {
      checkName(e.path, prefix);
      const rel = prefix + e.path;
      if (e.type === "tree") {
        fs.mkdirSync(join(dir, rel));
        await walk(e.oid, `${rel}/`);
      } else if (e.type === "commit") {
        fs.mkdirSync(join(dir, rel)); // an empty directory where the submodule would go, as git leaves it
        entries.push(entryFor(rel, GITLINK, e.oid, null));
      } else files.push({ rel, mode: e.mode, oid: e.oid });
    }
  };
  await walk(rootTree, "");
  // gitattributes: line endings and filters, from this tree's .gitattributes (convert.ts).
  const attrFiles = attributePaths(files.map((f) => [f.rel, Number.parseInt(f.mode, 8), f.oid] as [string, number, string]));
  for (const [p, o] of attrFiles) attrFiles.set(p, Buffer.from(await blobOf(o, p)).toString("utf8"));
  const conv = Conversion.forTree(dir, gitdir, attrFiles);
  // Then the files, many at a time: each read and write waits on I/O, and
  // one-by-one the waits add up to several times the work.
  const garbage = new Collector();
  const writeOne = async (f: { rel: string; mode: string; oid: string }) => {
    const blob = await blobOf(f.oid, f.rel);
    garbage.add(blob.length + 4096); // and what reading it left behind (a delta chain's windows and bases)
    const abs = join(dir, f.rel);
    if (f.mode === "120000") await fs.promises.symlink(Buffer.from(blob).toString("utf8"), abs);
    // Never through a link: two names one on a case-insensitive file system must not write elsewhere.
    else await fs.promises.writeFile(abs, conv.smudge(f.rel, blob), { mode: f.mode === "100755" ? 0o755 : 0o644, flag: NO_FOLLOW_WRITE }); // gitattributes conversion
    const st = await fs.promises.lstat(abs);
    entries.push(entryFor(f.rel, Number.parseInt(f.mode, 8), f.oid, st));
  };
  for (let i = 0; i < files.length; i += 128) {
    // allSettled: on failure, no write may still be running when the caller removes the directory.
    const results = await Promise.allSettled(files.slice(i, i + 128).map(writeOne));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    reportActivity({ phase: "checking out", done: Math.min(i + 128, files.length), total: files.length });
  }
  // Files written in the same clock tick as the index stay "racy" (re-hashed by
  // every status check, as git does) until the index is next rewritten.
  fs.writeFileSync(join(gitdir, "index"), serializeIndex(entries, cacheTreeOf(store, oid) ?? undefined));
  store.close();
}
