// A first checkout into an empty work tree (a clone): the commit's tree as
// tree-read.ts `verifiedFlatTree` verified it (git's verify_path rules, the one
// check, made before anything is written), its directories, then its files
// written many at a time (never through a link), with gitattributes
// conversion, and an index that records them with their stat data and the
// commit's cache-tree, written through index.lock (index-manager.ts).
// Updates of an existing checkout are checkout-diff.ts's.
import { reportActivity } from "../../base/activity.ts";
import * as fs from "node:fs";
import { join } from "node:path";
import { isNotFound, missingObject } from "../transport/git-errors.ts";
import { readGitdirConfigValue } from "../refs/config.ts";
import { type CacheTreeNode, entryFor, type IndexEntry, SKIP_WORKTREE } from "../objects/index-file.ts";
import { SparseCheckout } from "./sparse-checkout.ts";
import { commitIndex } from "../objects/index-manager.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { cacheTreeOf, readBlobBytes } from "../objects/tree-read.ts";
import { Conversion, attributePaths } from "./convert.ts";
import { Collector, PER_OBJECT_GARBAGE, collectAfter } from "../objects/garbage.ts";
import { FileWriter, writesThroughThread } from "./file-writer.ts";
import { type StatData, kindOf, writeNow } from "./write-now.ts";

const GITLINK = 0o160000;

/**
 * Check out commit `oid`, whose verified flat tree (path → "mode oid") is
 * `tree`, into `dir`, whose work tree must be empty and which must have no
 * index yet. `shown` names the pack in a message (a clone is built under a temp name).
 * `durable` false writes the index without fsync, as git does (a linked
 * worktree's: a crash before it is complete leaves the registration locked, which a re-run replaces).
 * `opened`: the repository's object store as the caller already has it open
 * (the one `verifiedFlatTree` read the trees through: its packs stay mapped,
 * and the cache-tree's trees come from its cache); the caller closes it.
 * `cacheTree`: the commit's cache-tree when the caller has it already
 * (tree-from-index.ts); else it is read from the commit's trees.
 */
export async function checkoutFresh(dir: string, gitdir: string, oid: string, tree: ReadonlyMap<string, string>, shown = dir, durable = true, opened?: ObjectStore, cacheTree?: CacheTreeNode): Promise<void> {
  const store = opened ?? new ObjectStore(gitdir);
  try {
    const entries = await writeFiles(dir, gitdir, oid, tree, store);
    collectAfter(entries.length); // what writing every file left (reads, promises, stats) goes before the index is built
    await commitIndex(gitdir, shown, null, entries, cacheTree ?? cacheTreeOf(store, oid) ?? undefined, undefined, durable);
  } finally {
    if (opened === undefined) store.close();
  }
}

/** The tree's directories and files written into `dir`; returns their index entries. */
async function writeFiles(dir: string, gitdir: string, oid: string, tree: ReadonlyMap<string, string>, store: ObjectStore): Promise<IndexEntry[]> {
  // A blob the commit needs and the repository lacks is named by its role (git-errors.ts).
  const cache = {};
  const blobOf = async (blobOid: string, rel: string): Promise<Uint8Array> => {
    try {
      return await readBlobBytes(store, gitdir, blobOid, cache);
    } catch (err) {
      throw isNotFound(err) ? missingObject(`the file '${rel}' of commit ${oid.slice(0, 12)}`, readGitdirConfigValue(gitdir, "remote", "origin", "url")) : err;
    }
  };
  /** The blob as the open pack holds it, or null for what only isomorphic-git reads (`blobOf`). */
  const blobNow = (blobOid: string): Uint8Array | null => {
    try {
      const o = store.read(blobOid);
      return o?.type === "blob" ? o.data : null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  };
  const entries: IndexEntry[] = [];
  // First the directories (a parent sorts before everything below it), each a new one: the work tree is empty.
  const dirs = new Set<string>();
  const files: Array<{ rel: string; mode: string; oid: string }> = [];
  const links: Array<{ rel: string; oid: string }> = [];
  // A new linked worktree of a sparse checkout (worktree-inherit.ts): paths outside its patterns stay out, skip-worktree in the index.
  const sparse = SparseCheckout.of(gitdir);
  for (const [rel, value] of tree) {
    const sp = value.indexOf(" ");
    const mode = Number.parseInt(value.slice(0, sp), 10);
    if (sparse !== null && !sparse.includes(rel)) {
      entries.push({ ...entryFor(rel, mode, value.slice(sp + 1), null), flags: SKIP_WORKTREE });
      continue;
    }
    for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) dirs.add(rel.slice(0, i));
    if (mode === GITLINK) {
      dirs.add(rel); // an empty directory where the submodule would go, as git leaves it
      links.push({ rel, oid: value.slice(sp + 1) });
    } else files.push({ rel, mode: mode.toString(8), oid: value.slice(sp + 1) });
  }
  // gitattributes: line endings and filters, from this tree's .gitattributes (convert.ts).
  const attrFiles = attributePaths(files.map((f) => [f.rel, Number.parseInt(f.mode, 8), f.oid] as [string, number, string]));
  for (const [p, o] of attrFiles) attrFiles.set(p, Buffer.from(await blobOf(o, p)).toString("utf8"));
  const conv = Conversion.forTree(dir, gitdir, attrFiles);
  const writer = writesThroughThread(files.length) ? new FileWriter(dir) : null;
  // Then the files. Read from the open pack, converted and written with
  // synchronous calls: the writes land in the page cache, and one await per
  // file system call (writes handed to the I/O threads by the hundred, all
  // creating files in the same few directories) cost several times the work
  // itself. Each file's stat data comes from its still-open descriptor, as
  // git's checkout takes it (fstat before close). What cannot be done at once
  // — a blob the native reader leaves to isomorphic-git, a file for a
  // long-running filter process — is written afterwards, many at a time.
  // A large tree's files are created by the writer thread while this one reads the next blobs (file-writer.ts).
  const garbage = new Collector();
  const later: typeof files = [];
  try {
    // Made by the writer thread ahead of the files, when it writes them; here when a gitlink's directory needs its stat data now.
    if (writer !== null && links.length === 0) writer.makeDirs([...dirs].sort());
    else for (const d of [...dirs].sort()) fs.mkdirSync(join(dir, d));
    // A gitlink's entry carries the stat data of its directory, as git's checkout records it (size 4096 on ext4, …).
    for (const l of links) entries.push(entryFor(l.rel, GITLINK, l.oid, fs.lstatSync(join(dir, l.rel))));
    for (let i = 0; i < files.length; i++) {
      const f = files[i] as (typeof files)[number];
      const blob = blobNow(f.oid);
      const bytes = blob === null || f.mode === "120000" ? blob : conv.smudgeSync(f.rel, blob);
      if (bytes === null) later.push(f);
      else {
        // Its bytes, and what reading it left: a delta's instructions and base (about its size again), the object's fields.
        garbage.add(2 * (blob as Uint8Array).length + PER_OBJECT_GARBAGE);
        const record = (st: StatData) => entries.push(entryFor(f.rel, Number.parseInt(f.mode, 8), f.oid, st));
        if (writer === null) record(writeNow(join(dir, f.rel), kindOf(f.mode), bytes));
        else {
          const full = writer.add(f.rel, kindOf(f.mode), bytes, record);
          if (full !== undefined) await full; // awaited only when the thread is behind: no pause per file
        }
      }
      if ((i + 1) % 256 === 0 && i + 1 < files.length) {
        reportActivity({ phase: "checking out", done: i + 1, total: files.length });
        await new Promise((r) => setImmediate(r)); // a big tree leaves the event loop (other packs, a cancel) its turn
      }
    }
    await writer?.finish();
    const writeOne = async (f: { rel: string; mode: string; oid: string }) => {
      const blob = await blobOf(f.oid, f.rel);
      garbage.add(2 * blob.length + PER_OBJECT_GARBAGE);
      const bytes = f.mode === "120000" ? blob : await conv.smudge(f.rel, blob);
      entries.push(entryFor(f.rel, Number.parseInt(f.mode, 8), f.oid, writeNow(join(dir, f.rel), kindOf(f.mode), bytes)));
    };
    for (let i = 0; i < later.length; i += 128) {
      // allSettled: on failure, no write may still be running when the caller removes the directory.
      const results = await Promise.allSettled(later.slice(i, i + 128).map(writeOne));
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
    }
    reportActivity({ phase: "checking out", done: files.length, total: files.length });
  } finally {
    await writer?.close(); // no batch is still being written when the caller removes the directory
    conv.close(); // a long-running filter process serves the whole checkout, then exits
  }
  // Files written in the same clock tick as the index stay "racy" (re-hashed by
  // every status check, as git does) until the index is next rewritten.
  return entries;
}
