// A repository's borrowed objects (objects/info/alternates: the shared object
// cache, or a `git clone --reference`) brought into its own store, as
// `git repack -a -d` followed by removing the alternates file does after a
// `--reference` clone: every object reachable from its refs, HEAD, reflogs
// and index goes into one new pack of its own (stored as a received pack:
// pack, then index, renamed into place), and only then is the alternates file
// removed. Nothing of its own is deleted. Also: whether every directory a
// repository borrows from is there and readable (`doctor`).
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { packOpError, throwIfAborted } from "../base/errors.ts";
import { fsyncDir } from "../fs/fsutil.ts";
import { alternateLines, alternatesFileOf, gitdirOf, gitPath, indexPath, objectsDir, readShallow } from "./layout/layout.ts";
import { parseIndex } from "./objects/index-file.ts";
import { ObjectStore } from "./objects/object-store.ts";
import { Collector, PER_OBJECT_GARBAGE } from "./objects/garbage.ts";
import { namedBy } from "./objects/object-links.ts";
import { storePackStream } from "./objects/pack-index.ts";
import { packStream } from "./objects/pack-write.ts";
import { listRefsSync, resolveRefSync } from "./refs/refs.ts";

const OID = /^[0-9a-f]{40}$/;
const ZERO = "0".repeat(40);

/** A directory the repository at `dir` borrows from that is missing or unreadable, with why; null when all are fine (or it borrows from none). */
export function brokenAlternate(dir: string): { path: string; why: string } | null {
  const gitdir = gitdirOf(dir);
  if (gitdir === null) return null;
  for (const path of alternateLines(objectsDir(gitdir))) {
    try {
      fs.accessSync(path, fs.constants.R_OK | fs.constants.X_OK);
      if (!fs.statSync(path).isDirectory()) return { path, why: "is not a directory" };
      const pack = join(path, "pack");
      if (fs.existsSync(pack)) fs.accessSync(pack, fs.constants.R_OK | fs.constants.X_OK);
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { path, why: code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? "error"})` };
    }
  }
  return null;
}

/** Object ids a repository's reflogs name (old and new of each line), so a borrowed commit only a reflog reaches is kept too. */
function reflogTips(gitdir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n.name);
      if (n.isDirectory()) walk(p);
      else if (n.isFile()) {
        for (const line of fs.readFileSync(p, "latin1").split("\n")) {
          const [a, b] = line.split(" ");
          for (const oid of [a, b]) if (oid !== undefined && OID.test(oid) && oid !== ZERO) out.push(oid);
        }
      }
    }
  };
  walk(gitPath(gitdir, "logs"));
  return out;
}

/**
 * Every object reachable from `tips` (a tip the store lacks is skipped when
 * `optional` says so): their ids alone, in the order found, so that memory
 * holds ids, not contents, whatever the history's size.
 */
function reachable(store: ObjectStore, tips: string[], optional: Set<string>, shallow: Set<string>, signal: AbortSignal): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const stack: string[] = [];
  const gc = new Collector();
  const want = (oid: string) => {
    if (seen.has(oid)) return;
    seen.add(oid);
    stack.push(oid);
  };
  tips.forEach(want);
  while (stack.length > 0) {
    if (out.length % 256 === 0) throwIfAborted(signal);
    const oid = stack.pop() as string;
    const obj = store.read(oid);
    if (!obj) {
      if (optional.has(oid)) continue;
      throw packOpError(`object ${oid.slice(0, 12)} is missing from the repository and from every store it borrows from, so its objects cannot be copied in; check it with git fsck.`, { oid });
    }
    out.push(oid);
    namedBy(store, oid, obj, shallow).forEach(want);
    gc.add(obj.data.length + PER_OBJECT_GARBAGE); // read to find what it names, then dropped
  }
  return out;
}

/**
 * Copy everything the repository at `dir` borrows into its own store and stop
 * borrowing. Returns the number of objects written, or null when it borrowed
 * from nothing. A store it borrows from that is gone is an error naming it.
 */
export async function dissociate(dir: string, signal: AbortSignal): Promise<number | null> {
  const gitdir = gitdirOf(dir);
  if (gitdir === null) throw packOpError(`${dir} is not a git repository; re-clone it with grex sync or remove it.`, { dir });
  const file = alternatesFileOf(objectsDir(gitdir));
  if (!fs.existsSync(file)) return null;
  const broken = brokenAlternate(dir);
  if (broken) throw packOpError(`${dir} borrows its objects from ${broken.path}, which ${broken.why}, so they cannot be copied in; restore that directory, or clone the pack again.`, { dir });
  const tips = new Set<string>();
  const head = resolveRefSync(gitdir, "HEAD");
  if (head) tips.add(head);
  for (const oid of listRefsSync(gitdir, "refs/").values()) tips.add(oid);
  // Reflogs and the index may name objects no ref reaches (git repack keeps them too); one that is gone already is no reason to fail.
  const optional = new Set<string>();
  for (const oid of reflogTips(gitdir)) if (!tips.has(oid)) optional.add(oid);
  try {
    for (const e of parseIndex(fs.readFileSync(indexPath(gitdir))) ?? []) if (e.mode !== 0o160000 && !tips.has(e.oid)) optional.add(e.oid);
  } catch {
    // no index (a bare repository), or one grex cannot read: git repack would keep its blobs, which are loose here anyway
  }
  // The pack is written as it is read: each object is read again from the store (and the stores it borrows from)
  // when the pack needs its bytes, so memory holds one chunk of the pack, not the repository (pack-write.ts).
  const store = new ObjectStore(gitdir);
  let objects: string[];
  try {
    objects = reachable(store, [...tips, ...optional], optional, readShallow(gitdir), signal);
    throwIfAborted(signal);
    if (objects.length > 0) {
      let i = 0;
      const source = packStream(objects.length, () => {
        const oid = objects[i++];
        return oid === undefined ? null : store.read(oid);
      });
      await storePackStream(gitdir, source, { store, keepPack: true, signal });
    }
  } finally {
    store.close();
  }
  // Only once the pack is in place: a kill before this line leaves the repository borrowing, as it was.
  fs.rmSync(file, { force: true });
  fsyncDir(dirname(file));
  return objects.length;
}
