// git's commit-graph files (`objects/info/commit-graph`, or a chain under
// `objects/info/commit-graphs/`): each commit's parents, topological
// generation and committer date without inflating the commit. Read-only and
// optional: anything unexpected makes the whole graph unusable (null), and
// the caller reads commits from the object store instead.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gitPath, isShallow, objectsDir } from "../layout/layout.ts";

/** A commit as the ahead/behind walk needs it. */
export interface CommitInfo {
  parents: string[];
  /** Topological level (descendants are strictly higher); Infinity when not known. */
  generation: number;
  /** Committer date, seconds since the epoch. */
  date: number;
}

interface Layer {
  buf: Buffer;
  count: number;
  /** Global position of this layer's first commit (earlier layers of a chain come first). */
  base: number;
  fanout: number;
  oids: number;
  data: number;
  edges: number;
}

const NO_PARENT = 0x70000000;
const EXTRA_EDGES = 0x80000000;
const HASH = 20;

function openLayer(path: string, base: number): Layer | null {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return null;
  }
  // Header: "CGPH", version 1, hash version 1 (SHA-1), chunk count, base graph count.
  if (buf.length < 8 + 12 || buf.toString("latin1", 0, 4) !== "CGPH" || buf[4] !== 1 || buf[5] !== 1) return null;
  const chunks = buf[6] as number;
  const chunk = new Map<string, number>();
  for (let i = 0; i <= chunks; i++) {
    const at = 8 + i * 12;
    if (at + 12 > buf.length) return null;
    const id = buf.toString("latin1", at, at + 4);
    const offset = Number(buf.readBigUInt64BE(at + 4));
    if (offset > buf.length) return null;
    if (i < chunks) chunk.set(id, offset);
  }
  const fanout = chunk.get("OIDF");
  const oids = chunk.get("OIDL");
  const data = chunk.get("CDAT");
  if (fanout === undefined || oids === undefined || data === undefined || fanout + 1024 > buf.length) return null;
  const count = buf.readUInt32BE(fanout + 255 * 4);
  if (oids + count * HASH > buf.length || data + count * (HASH + 16) > buf.length) return null;
  return { buf, count, base, fanout, oids, data, edges: chunk.get("EDGE") ?? -1 };
}

export class CommitGraph {
  private constructor(private readonly layers: Layer[]) {}

  /** The repository's commit-graph, or null when it has none (or one we cannot trust). */
  static open(gitdir: string, objects = objectsDir(gitdir)): CommitGraph | null {
    // git ignores the graph where history is rewritten on the fly: grafts, replace refs, a shallow clone.
    if (isShallow(gitdir) || existsSync(gitPath(gitdir, "info/grafts")) || existsSync(gitPath(gitdir, "refs/replace"))) return null;
    const single = join(objects, "info", "commit-graph");
    if (existsSync(single)) {
      const l = openLayer(single, 0);
      return l ? new CommitGraph([l]) : null;
    }
    const dir = join(objects, "info", "commit-graphs");
    let chain: string[];
    try {
      chain = readFileSync(join(dir, "commit-graph-chain"), "latin1").split("\n").filter((l) => /^[0-9a-f]{40}$/.test(l));
    } catch {
      return null;
    }
    const layers: Layer[] = [];
    let base = 0;
    for (const hash of chain) {
      const l = openLayer(join(dir, `graph-${hash}.graph`), base);
      if (!l) return null; // a broken chain: trust none of it
      layers.push(l);
      base += l.count;
    }
    return layers.length > 0 ? new CommitGraph(layers) : null;
  }

  /** Global position of `oid`, or -1. */
  private find(oid: Buffer): number {
    for (const l of this.layers) {
      const first = oid[0] as number;
      let lo = first === 0 ? 0 : l.buf.readUInt32BE(l.fanout + (first - 1) * 4);
      let hi = l.buf.readUInt32BE(l.fanout + first * 4);
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const at = l.oids + mid * HASH;
        const c = l.buf.compare(oid, 0, HASH, at, at + HASH);
        if (c === 0) return l.base + mid;
        if (c > 0) hi = mid;
        else lo = mid + 1;
      }
    }
    return -1;
  }

  private layerOf(pos: number): Layer | null {
    for (const l of this.layers) if (pos >= l.base && pos < l.base + l.count) return l;
    return null;
  }

  private oidAt(pos: number): string | null {
    const l = this.layerOf(pos);
    if (!l) return null;
    const at = l.oids + (pos - l.base) * HASH;
    return l.buf.toString("hex", at, at + HASH);
  }

  /** The commit's parents, generation and date, or null when the graph does not hold it. */
  lookup(oid: string): CommitInfo | null {
    const pos = this.find(Buffer.from(oid, "hex"));
    if (pos < 0) return null;
    const l = this.layerOf(pos) as Layer;
    const at = l.data + (pos - l.base) * (HASH + 16) + HASH;
    const p1 = l.buf.readUInt32BE(at);
    const p2 = l.buf.readUInt32BE(at + 4);
    const hi = l.buf.readUInt32BE(at + 8);
    const lo = l.buf.readUInt32BE(at + 12);
    const positions: number[] = [];
    if (p1 !== NO_PARENT) positions.push(p1);
    if (p2 !== NO_PARENT) {
      if (p2 & EXTRA_EDGES) {
        // An octopus: the second and later parents are a run in EDGE ending with the high bit set.
        if (l.edges < 0) return null;
        for (let e = l.edges + (p2 & 0x7fffffff) * 4; e + 4 <= l.buf.length; e += 4) {
          const v = l.buf.readUInt32BE(e);
          positions.push(v & 0x7fffffff);
          if (v & EXTRA_EDGES) break;
        }
      } else positions.push(p2);
    }
    const parents: string[] = [];
    for (const p of positions) {
      const o = this.oidAt(p);
      if (o === null) return null;
      parents.push(o);
    }
    // Top 30 bits: topological level; low 34 bits: committer date.
    // A level of 0 is a graph written before levels existed: no order can be taken from it.
    const level = hi >>> 2;
    return { parents, generation: level === 0 ? Number.POSITIVE_INFINITY : level, date: (hi & 3) * 2 ** 32 + lo };
  }
}
