// The entries of a raw tree that the same directory's tree in a parent commit
// does not hold, found by walking both sorted byte buffers side by side:
// entries both hold (the usual case: a commit changes a few files) are
// compared as bytes and never turned into strings, which is where reading a
// whole tree spends its time.

/** An entry of the tree that its base lacks or holds with another mode or id. */
export interface ChangedEntry {
  /** Six digits, as ObjectStore.readTree gives it ("040000" for a directory). */
  mode: string;
  name: string;
  oid: string;
  /** The base's tree at the same name, when both are directories (to compare below). */
  baseTree: string | undefined;
}

const SLASH = 0x2f;

/** "40000" (as git writes it) or "040000": a directory. */
function isTreeMode(buf: Buffer, start: number, sp: number): boolean {
  const at = sp - 5;
  if (!(at === start || (at === start + 1 && buf[start] === 0x30))) return false;
  return buf[at] === 0x34 && buf[at + 1] === 0x30 && buf[at + 2] === 0x30 && buf[at + 3] === 0x30 && buf[at + 4] === 0x30;
}

/** git's order of tree entries: names as bytes, a directory as if it ended in '/'. */
function compareNames(a: Buffer, a0: number, a1: number, aTree: boolean, b: Buffer, b0: number, b1: number, bTree: boolean): number {
  const la = a1 - a0;
  const lb = b1 - b0;
  const n = la < lb ? la : lb;
  for (let k = 0; k < n; k++) {
    const d = (a[a0 + k] as number) - (b[b0 + k] as number);
    if (d !== 0) return d;
  }
  const ca = la > n ? (a[a0 + n] as number) : aTree ? SLASH : 0;
  const cb = lb > n ? (b[b0 + n] as number) : bTree ? SLASH : 0;
  return ca !== cb ? ca - cb : la - lb;
}

function sameBytes(a: Buffer, a0: number, b: Buffer, b0: number, n: number): boolean {
  for (let k = 0; k < n; k++) if (a[a0 + k] !== b[b0 + k]) return false;
  return true;
}

/**
 * The entries of tree `data` that `base` does not hold with the same mode and
 * id at the same name, in tree order; every entry when `base` is null. null
 * when `data` is malformed. A base that is malformed or out of order only
 * makes more entries count as changed: an entry is skipped only when the base
 * holds exactly its bytes under its name.
 */
export function changedEntries(data: Buffer, base: Buffer | null): ChangedEntry[] | null {
  const out: ChangedEntry[] = [];
  // The base's current entry: [j, bsp) mode, (bsp, bnul) name, then 20 bytes of id.
  let j = 0;
  let bsp = -1;
  let bnul = -1;
  let bTree = false;
  const nextBase = (): void => {
    if (!base || j >= base.length) {
      bsp = -1;
      return;
    }
    bsp = base.indexOf(0x20, j);
    bnul = bsp < 0 ? -1 : base.indexOf(0, bsp + 1);
    if (bsp < 0 || bnul < 0 || bnul + 21 > base.length) {
      bsp = -1; // malformed from here: no more base
      return;
    }
    bTree = isTreeMode(base, j, bsp);
  };
  nextBase();
  let i = 0;
  while (i < data.length) {
    const sp = data.indexOf(0x20, i);
    const nul = sp < 0 ? -1 : data.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0 || nul + 21 > data.length) return null;
    const tree = isTreeMode(data, i, sp);
    let baseTree: string | undefined;
    let same = false;
    while (bsp >= 0) {
      const c = compareNames(base as Buffer, bsp + 1, bnul, bTree, data, sp + 1, nul, tree);
      if (c > 0) break;
      if (c === 0) {
        const b = base as Buffer;
        same = bsp - j === sp - i && sameBytes(b, j, data, i, bsp - j) && sameBytes(b, bnul + 1, data, nul + 1, 20);
        if (!same && tree && bTree) baseTree = b.toString("hex", bnul + 1, bnul + 21);
      }
      j = bnul + 21;
      nextBase();
      if (c === 0) break;
    }
    if (!same) out.push({ mode: sp - i === 5 ? `0${data.toString("latin1", i, sp)}` : data.toString("latin1", i, sp), name: data.toString("utf8", sp + 1, nul), oid: data.toString("hex", nul + 1, nul + 21), baseTree });
    i = nul + 21;
  }
  return out;
}

/** What a tree diff found: each differing path's version in the old tree ("mode oid" as flatTree gives it; absent when added), every such path in order found. */
export interface TreeDiff {
  from: Map<string, string>;
  changed: string[];
}

const EMPTY = Buffer.alloc(0);
const isTreeEntry = (e: ChangedEntry) => e.mode === "040000";
const flatValue = (e: ChangedEntry) => `${Number.parseInt(e.mode, 8)} ${e.oid}`;

/**
 * The paths (blobs, symlinks, gitlinks) whose mode or id differ between the
 * trees `from` and `to`, as flatTree's two maps compared would find them, but
 * reading only the subtrees whose ids differ and turning only differing
 * entries into strings. `read` gives a tree's raw bytes (null when it cannot:
 * then the answer is null, and the caller compares flat trees instead).
 */
export function diffTrees(read: (oid: string) => Buffer | null, from: string, to: string): TreeDiff | null {
  const out: TreeDiff = { from: new Map(), changed: [] };
  const walk = (a: Buffer | null, b: Buffer | null, prefix: string): boolean => {
    const removed = changedEntries(a ?? EMPTY, b);
    const added = changedEntries(b ?? EMPTY, a);
    if (!removed || !added) return false;
    for (const e of removed) {
      const p = prefix + e.name;
      if (!isTreeEntry(e)) {
        out.from.set(p, flatValue(e));
        out.changed.push(p);
      } else if (e.baseTree === undefined) {
        // A directory the new tree does not hold as one: everything below it goes.
        const sub = read(e.oid);
        if (!sub || !walk(sub, null, `${p}/`)) return false;
      } // a directory in both: walked from the added side
    }
    for (const e of added) {
      const p = prefix + e.name;
      if (!isTreeEntry(e)) {
        if (!out.from.has(p)) out.changed.push(p);
        continue;
      }
      const sub = read(e.oid);
      const base = e.baseTree === undefined ? null : read(e.baseTree);
      if (!sub || (e.baseTree !== undefined && !base) || !walk(base, sub, `${p}/`)) return false;
    }
    return true;
  };
  if (from === to) return out;
  const a = read(from);
  const b = read(to);
  return a && b && walk(a, b, "") ? out : null;
}
