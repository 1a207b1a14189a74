// Linking a local source's object store whole (a first fetch by path, as
// `git clone` of a path does): its loose objects and complete packs
// hard-linked (or copied across filesystems), its alternates borrowed, while
// the source may be repacked under us.
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { packOpError, throwIfAborted } from "../../base/errors.ts";
import { isVanished } from "../objects/objects.ts";
import { alternateLines, alternatesFileOf } from "../layout/layout.ts";
import { atomicWriteFile } from "../../fs/fsutil.ts";

/**
 * Hard-link (or copy, across filesystems) every loose object and complete pack
 * of `src` into `dest`; true when every file listed was there to link.
 *
 * The source may repack meanwhile (git gc, auto-gc, `repack -a -d`): git
 * writes the new pack before it deletes the old packs and the loose objects
 * it packed, so a listed file found gone means a new pack is there. The packs
 * are linked after the loose objects and listed again while one vanished
 * (git's reprepare_packed_git), a few times at most; what is here already is
 * skipped. The caller then checks the copy is complete (a branch the source
 * rewound meanwhile may have taken objects with it).
 */
export function linkObjectStore(src: string, dest: string, signal: AbortSignal): boolean {
  const put = linker();
  let whole = linkLoose(src, dest, put, signal);
  for (let listing = 1; ; listing++) {
    const gone = linkPacks(src, dest, put, signal);
    if (gone === null) return whole;
    whole = false;
    if (listing === 4) throw gone; // repacked under us four times running: the error names the file
  }
}

/** Link (or copy) one file; false when it vanished since it was listed. */
type Put = (from: string, to: string) => boolean;

function linker(): Put {
  let link = true;
  return (from, to) => {
    try {
      if (link) {
        try {
          fs.linkSync(from, to);
          return true;
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code === "EEXIST") return true;
          if (code === "ENOENT") throw err;
          link = false; // EXDEV, EPERM, …: copy from now on
        }
      }
      fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE | fs.constants.COPYFILE_EXCL);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === "EEXIST") return true;
      if (!isVanished(err)) throw err;
      return false;
    }
  };
}

/** The names in `dir`, or null when it vanished (a fan-out directory prune-packed emptied and removed). */
function listVanishing(dir: string): string[] | null {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if (!isVanished(err)) throw err;
    return null;
  }
}

/** The loose objects; false when one vanished (packed and pruned meanwhile). */
function linkLoose(src: string, dest: string, put: Put, signal: AbortSignal): boolean {
  let whole = true;
  for (const name of fs.readdirSync(src)) {
    if (!/^[0-9a-f]{2}$/.test(name)) continue;
    throwIfAborted(signal);
    const listed = listVanishing(join(src, name));
    if (listed === null) whole = false;
    const files = (listed ?? []).filter((f) => /^[0-9a-f]{38}$/.test(f));
    if (files.length === 0) continue;
    fs.mkdirSync(join(dest, name), { recursive: true });
    for (const f of files) if (!put(join(src, name, f), join(dest, name, f))) whole = false;
  }
  return whole;
}

/** The complete packs (pack, then index); the error of one that vanished since the listing, else null. */
function linkPacks(src: string, dest: string, put: Put, signal: AbortSignal): Error | null {
  const packs = join(src, "pack");
  const listed = listVanishing(packs);
  if (listed === null) return null;
  const names = new Set(listed);
  fs.mkdirSync(join(dest, "pack"), { recursive: true });
  let gone: Error | null = null;
  for (const n of names) {
    const idx = n.replace(/\.pack$/, ".idx");
    if (!n.endsWith(".pack") || !names.has(idx)) continue;
    throwIfAborted(signal);
    if (put(join(packs, n), join(dest, "pack", n)) && put(join(packs, idx), join(dest, "pack", idx))) continue;
    fs.rmSync(join(dest, "pack", n), { force: true }); // never a pack without its index
    gone ??= packOpError(`the pack ${n} in ${packs} was deleted while grex linked it, again after every new listing (a git gc or repack keeps running there); wait for it to finish, then sync again.`, { path: packs });
  }
  return gone;
}

/**
 * The source's alternates, each made absolute (git clone's copy_alternates), as
 * this store's `info/alternates`: its objects are read from where the source
 * reads them, alternates of alternates included (layout.ts `alternateDirs`).
 */
export function borrowAlternates(srcObjects: string, destObjects: string): void {
  const lines = alternateLines(srcObjects);
  if (lines.length === 0) return;
  fs.mkdirSync(dirname(alternatesFileOf(destObjects)), { recursive: true });
  atomicWriteFile(alternatesFileOf(destObjects), `${lines.join("\n")}\n`);
}
