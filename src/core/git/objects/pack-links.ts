// What a received pack's commits and tags point at, recorded while the
// indexer names each object (it holds the object's bytes at that moment
// anyway). A first fetch checks its history from this record — every commit
// the new tips reach is in the pack or here, and so is each commit's tree —
// without reading the pack back: on a large history that second read cost
// more memory than indexing the pack (git's index-pack records the same for
// its --check-self-contained-and-connected).
import type { Entries } from "./pack-entries.ts";
import type { ObjectType } from "./object-store.ts";

/** What an entry is to the history; "bad …": an object of that type git's parser would refuse. */
export type LinkKind = "commit" | "tag" | "bad commit" | "bad tag";
const KIND_CODE: Record<LinkKind, number> = { commit: 1, tag: 2, "bad commit": 3, "bad tag": 4 };
const CODE_KIND: readonly LinkKind[] = ["bad commit", "commit", "tag", "bad commit", "bad tag"];

// Everything below works on bytes: a string or Buffer per link would be
// hundreds of thousands of small allocations on a long history.

/** Each byte's value as a lower-case hex digit, or -1 (git writes ids in lower case). */
const HEX_VALUE = new Int8Array(256).fill(-1);
for (let c = 0; c < 16; c++) HEX_VALUE["0123456789abcdef".charCodeAt(c)] = c;

/** True when `data` holds `prefix`, 40 hex digits and a newline at `at`; the id is decoded into `out` at `to`. */
function idAfter(data: Uint8Array, at: number, prefix: string, out: Uint8Array, to: number): boolean {
  const hex = at + prefix.length;
  if (data.length <= hex + 40 || data[hex + 40] !== 0x0a) return false;
  for (let k = 0; k < prefix.length; k++) if (data[at + k] !== prefix.charCodeAt(k)) return false;
  for (let k = 0; k < 20; k++) {
    const hi = HEX_VALUE[data[hex + 2 * k] as number] as number;
    const lo = HEX_VALUE[data[hex + 2 * k + 1] as number] as number;
    if (hi < 0 || lo < 0) return false;
    out[to + k] = (hi << 4) | lo;
  }
  return true;
}

/** Per object of the pack: what it points at, and the pack's names for look-ups. */
export class PackLinks {
  /** Per entry: 1 + where its record starts in `rec`; 0 for a tree or blob. */
  private at = new Uint32Array(1024);
  /** Records: kind, link count (u32, big-endian), then 20 bytes per link. */
  private rec = new Uint8Array(1 << 16);
  private used = 0;
  private names = new Uint8Array(0);
  private order: Int32Array | null = null;
  private buckets = new Int32Array(0);
  private readonly want = new Uint8Array(20);

  /**
   * Note entry `i`'s links if it is a commit or a tag, read as git's parser
   * reads them: a commit's tree line first, then its parent lines; a tag's
   * object line first. Anything else of those types is recorded as bad.
   */
  record(i: number, type: ObjectType, data: Uint8Array): void {
    if (type !== "commit" && type !== "tag") return;
    if (i >= this.at.length) {
      const more = new Uint32Array(Math.max(i + 1, this.at.length * 2));
      more.set(this.at);
      this.at = more;
    }
    // Room for the first link; parents are added one by one.
    const start = this.used;
    this.room(start + 25);
    let count = 0;
    if (idAfter(data, 0, type === "tag" ? "object " : "tree ", this.rec, start + 5)) {
      count = 1;
      if (type === "commit")
        for (let p = 46; ; p += 48) {
          this.room(start + 5 + (count + 1) * 20);
          if (!idAfter(data, p, "parent ", this.rec, start + 5 + count * 20)) break;
          count++;
        }
    }
    const kind: LinkKind = count > 0 ? type : type === "tag" ? "bad tag" : "bad commit";
    this.rec[start] = KIND_CODE[kind];
    for (let b = 0; b < 4; b++) this.rec[start + 1 + b] = (count >>> (24 - 8 * b)) & 0xff;
    this.at[i] = start + 1;
    this.used = start + 5 + count * 20;
  }

  private room(need: number): void {
    if (need <= this.rec.length) return;
    const more = new Uint8Array(Math.max(need, this.rec.length * 2));
    more.set(this.rec); // the record being written lies past `used`
    this.rec = more;
  }

  /** Every entry is named: look-ups by name may start (`order`: entries sorted by name). */
  seal(e: Entries, order: Int32Array): void {
    this.names = e.oid.subarray(0, e.n * 20);
    this.order = order;
    // Where each value of a name's first two bytes starts in `order`: a look-up searches a bucket of a few names.
    const starts = new Int32Array(65537);
    for (let i = 0; i < e.n; i++) {
      const k = (((this.names[i * 20] as number) << 8) | (this.names[i * 20 + 1] as number)) + 1;
      starts[k] = (starts[k] as number) + 1;
    }
    for (let k = 1; k <= 65536; k++) starts[k] = (starts[k] as number) + (starts[k - 1] as number);
    this.buckets = starts;
  }

  get sealed(): boolean {
    return this.order !== null;
  }

  /** Entries in the pack. */
  get size(): number {
    return this.order?.length ?? 0;
  }

  /** The entry whose name is the 20 bytes of `src` at `from`, or -1. */
  private search(src: Uint8Array, from: number): number {
    const { names, order, buckets } = this;
    if (!order) return -1;
    const k = ((src[from] as number) << 8) | (src[from + 1] as number);
    let lo = buckets[k] as number;
    let hi = buckets[k + 1] as number;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const i = order[mid] as number;
      let c = 0;
      for (let b = 0; b < 20 && c === 0; b++) c = (names[i * 20 + b] as number) - (src[from + b] as number);
      if (c === 0) return i;
      if (c < 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  /** The entry named `oid` in the pack, or -1. */
  find(oid: string): number {
    if (!/^[0-9a-f]{40}$/.test(oid)) return -1;
    this.want.set(Buffer.from(oid, "hex"));
    return this.search(this.want, 0);
  }

  /** Entry `i`'s name. */
  nameOf(i: number): string {
    return Buffer.from(this.names.buffer, this.names.byteOffset + i * 20, 20).toString("hex");
  }

  /** Entry `i`'s kind, or null for a tree or blob. */
  kindOf(i: number): LinkKind | null {
    const start = (this.at[i] ?? 0) - 1;
    return start < 0 ? null : (CODE_KIND[this.rec[start] as number] ?? "bad commit");
  }

  /** How many links entry `i` has: a commit's tree and parents, a tag's object. */
  countOf(i: number): number {
    const start = (this.at[i] ?? 0) - 1;
    if (start < 0) return 0;
    const r = this.rec;
    return (((r[start + 1] as number) << 24) | ((r[start + 2] as number) << 16) | ((r[start + 3] as number) << 8) | (r[start + 4] as number)) >>> 0;
  }

  /** The entry link `k` of entry `i` names, or -1 when it is not in the pack. */
  findLink(i: number, k: number): number {
    return this.search(this.rec, (this.at[i] as number) - 1 + 5 + k * 20);
  }

  /** Link `k` of entry `i`, as an id. */
  linkName(i: number, k: number): string {
    const at = this.rec.byteOffset + (this.at[i] as number) - 1 + 5 + k * 20;
    return Buffer.from(this.rec.buffer, at, 20).toString("hex");
  }
}
