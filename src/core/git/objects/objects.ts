// "Does this repository have object X?" without inflating anything: loose
// objects are one stat each, packed ones a binary search in the pack indexes
// (.idx v1 and v2). isomorphic-git has no public call for this.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { alternateDirs, objectsDir } from "../layout/layout.ts";

interface PackIndex {
  /** Sorted 20-byte object names, `stride` bytes apart starting at `base`. */
  buf: Buffer;
  base: number;
  stride: number;
  fanout: (b: number) => number;
}

function loadIndex(path: string): PackIndex | null {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return null;
  }
  const v2 = buf.length >= 8 && buf.readUInt32BE(0) === 0xff744f63 && buf.readUInt32BE(4) === 2;
  const fanoutAt = v2 ? 8 : 0;
  if (buf.length < fanoutAt + 1024) return null;
  const fanout = (b: number) => buf.readUInt32BE(fanoutAt + b * 4);
  // v2: names follow the fan-out table; v1: 4-byte offset + name entries.
  return v2 ? { buf, base: fanoutAt + 1024, stride: 20, fanout } : { buf, base: 1024 + 4, stride: 24, fanout };
}

function indexHas(idx: PackIndex, oid: Buffer): boolean {
  const first = oid[0] as number;
  let lo = first === 0 ? 0 : idx.fanout(first - 1);
  let hi = idx.fanout(first);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = idx.base + mid * idx.stride;
    const c = idx.buf.compare(oid, 0, 20, at, at + 20);
    if (c === 0) return true;
    if (c > 0) hi = mid;
    else lo = mid + 1;
  }
  return false;
}

export class ObjectPresence {
  private readonly objects: string;
  /** This store's object directory, then those it borrows from (`info/alternates`, as git reads them). */
  private readonly dirs: string[];
  /** The pack indexes by path, as last listed. */
  private packs = new Map<string, PackIndex>();

  constructor(gitdir: string) {
    this.objects = objectsDir(gitdir);
    this.dirs = [this.objects, ...alternateDirs(this.objects)];
    this.rescan();
  }

  /**
   * Whether the object is here. A miss lists the pack directories again first
   * (git's reprepare_packed_git): a repack since they were listed (git gc,
   * `repack -a -d`) moves loose objects into a new pack and deletes the old
   * packs. `quick` skips that, for walks where a miss is the usual answer
   * (what a fetch must bring) and a wrong one only costs a copy.
   */
  has(oid: string, opts: { quick?: boolean } = {}): boolean {
    if (this.hasListed(oid)) return true;
    return !opts.quick && this.rescan() && this.hasListed(oid);
  }

  private hasListed(oid: string): boolean {
    // Packs first: a binary search in memory, where a loose miss costs a failed stat (a
    // connectivity walk asks this for every file of a tree, nearly all of them packed).
    const bin = Buffer.from(oid, "hex");
    for (const p of this.packs.values()) if (indexHas(p, bin)) return true;
    const loose = `${oid.slice(0, 2)}/${oid.slice(2)}`;
    return this.dirs.some((d) => existsSync(join(d, loose)));
  }

  /** List the pack indexes again, keeping those already read; true when the list changed. */
  private rescan(): boolean {
    const fresh = new Map<string, PackIndex>();
    let added = false;
    for (const dir of this.dirs) {
      for (const { packDir, name } of packIndexFiles(dir)) {
        const path = join(packDir, name);
        const idx = this.packs.get(path) ?? loadIndex(path);
        if (!idx) continue;
        added ||= !this.packs.has(path);
        fresh.set(path, idx);
      }
    }
    const changed = added || fresh.size !== this.packs.size;
    this.packs = fresh;
    return changed;
  }

  /** True when the store holds no objects at all (a fresh `init`). */
  isEmpty(): boolean {
    if (this.packs.size > 0 || this.dirs.length > 1) return false;
    try {
      return !readdirSync(this.objects).some((n) => /^[0-9a-f]{2}$/.test(n) && readdirSync(join(this.objects, n)).length > 0);
    } catch {
      return true;
    }
  }
}

/** The pack indexes of one objects directory that have their pack beside them (an index without its pack is useless: a crash between the two writes). */
export function packIndexFiles(objects: string): Array<{ packDir: string; name: string }> {
  const packDir = join(objects, "pack");
  let names: string[];
  try {
    names = readdirSync(packDir);
  } catch {
    return []; // no packs yet
  }
  return names.filter((n) => n.endsWith(".idx") && existsSync(join(packDir, n.replace(/\.idx$/, ".pack")))).map((name) => ({ packDir, name }));
}

/** A file listed a moment ago is gone (ENOENT): a repack or prune deleted it under us. */
export function isVanished(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === "ENOENT";
}
