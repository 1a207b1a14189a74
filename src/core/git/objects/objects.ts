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
  private readonly packs: PackIndex[] = [];

  constructor(gitdir: string) {
    this.objects = objectsDir(gitdir);
    this.dirs = [this.objects, ...alternateDirs(this.objects)];
    for (const dir of this.dirs) {
      for (const { packDir, name } of packIndexFiles(dir)) {
        const idx = loadIndex(join(packDir, name));
        if (idx) this.packs.push(idx);
      }
    }
  }

  has(oid: string): boolean {
    // Packs first: a binary search in memory, where a loose miss costs a failed stat (a
    // connectivity walk asks this for every file of a tree, nearly all of them packed).
    const bin = Buffer.from(oid, "hex");
    for (const p of this.packs) if (indexHas(p, bin)) return true;
    const loose = `${oid.slice(0, 2)}/${oid.slice(2)}`;
    return this.dirs.some((d) => existsSync(join(d, loose)));
  }

  /** True when the store holds no objects at all (a fresh `init`). */
  isEmpty(): boolean {
    if (this.packs.length > 0 || this.dirs.length > 1) return false;
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
