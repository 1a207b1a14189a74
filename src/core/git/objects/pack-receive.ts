// Receiving a pack (pack-index.ts stores it): the bytes go to a temp file as
// they arrive, in large writes, while each entry is walked in a window of
// memory: its header, its extent (inflated once, its declared size checked
// against what inflates), its CRC and, for a whole object, its name. The
// checksum is verified at the trailer and nothing is accepted after it.
import { reportActivity } from "../../base/activity.ts";
import { writeSync } from "node:fs";
import { createInflate } from "node:zlib";
import { ByteWindow } from "../../base/byte-window.ts";
import { throwIfAborted } from "../../base/errors.ts";
import { limitError, showBytes, type TransferLimits } from "./limits.ts";
import { BadPack, deltaResultSize, type DeltaStash, type Entries, type Header, inflateEntry, nameOf, parseHeader, Scratch } from "./pack-entries.ts";
import type { PackLinks } from "./pack-links.ts";
import { Collector, PER_OBJECT_GARBAGE } from "./garbage.ts";
import { type GitObject, OFS_DELTA, type ObjectType, REF_DELTA, TYPES } from "./object-store.ts";

/** The bytes of a pack as they arrive; null once the sender is done. */
export interface ByteSource {
  read(): Promise<Uint8Array | null>;
}

/** Receiving: the pack goes to `fd` as it arrives while its entries are walked. */
export class Receiver {
  private readonly w = new ByteWindow(1 << 20);
  /** Pack offset of the window's first live byte. */
  private pos = 0;
  private ended = false;
  received = 0;
  /** SHA-1 of the pack's bytes consumed; the last `unhashed` of them are still in the window, before `start`. */
  readonly sum = new Bun.CryptoHasher("sha1");
  private unhashed = 0;
  /** Bytes not yet written to the file: the network's small chunks go out in large writes. */
  private out = Buffer.allocUnsafe(1 << 20);
  private outLen = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly fd: number,
    private readonly limits: TransferLimits,
  ) {}

  get available(): number {
    return this.w.available;
  }

  /** Read one more chunk (to disk and into the window); false at the end of the stream. */
  async more(): Promise<boolean> {
    if (this.ended) return false;
    const chunk = await this.source.read();
    if (chunk === null) {
      this.ended = true;
      return false;
    }
    if (chunk.length === 0) return true;
    this.received += chunk.length;
    if (this.received > this.limits.maxPackBytes) throw limitError("maxPackBytes", `the pack is larger than ${showBytes(this.limits.maxPackBytes)}`, this.limits.maxPackBytes);
    if (this.outLen + chunk.length > this.out.length) this.flush();
    if (chunk.length >= this.out.length) writeSync(this.fd, chunk);
    else {
      this.out.set(chunk, this.outLen);
      this.outLen += chunk.length;
    }
    this.hashConsumed(); // the window may move what was consumed
    this.w.append(chunk);
    return true;
  }

  /** Write what is pending to the file (before it is read back). */
  flush(): void {
    let at = 0;
    while (at < this.outLen) at += writeSync(this.fd, this.out, at, this.outLen - at);
    this.outLen = 0;
  }

  /** Make at least `n` bytes available; false if the stream ends first. */
  async need(n: number): Promise<boolean> {
    while (this.available < n) if (!(await this.more())) return false;
    return true;
  }

  /** The window: bytes [pos, pos + available) of the pack, at buf[start…]; the same object each time, valid until the window next changes. */
  view(): { buf: Buffer; start: number; end: number; pos: number } {
    // One object, brought up to date on each call (it is asked for several times per entry).
    const v = this.current;
    v.buf = this.w.buf;
    v.start = this.w.start;
    v.end = this.w.end;
    v.pos = this.pos;
    return v;
  }
  private readonly current: { buf: Buffer; start: number; end: number; pos: number } = { buf: Buffer.alloc(0), start: 0, end: 0, pos: 0 };

  /** Take `n` bytes; they go into the pack's checksum (`sum`) in large spans, not entry by entry (unless `hashed` is false: the trailer). */
  consume(n: number, hashed = true): void {
    this.w.start += n;
    this.pos += n;
    if (hashed) this.unhashed += n;
  }

  /** The checksum of every byte consumed so far. */
  hashConsumed(): void {
    if (this.unhashed === 0) return;
    this.sum.update(this.w.buf.subarray(this.w.start - this.unhashed, this.w.start));
    this.unhashed = 0;
  }

  /** Anything after the trailer is an error: the stream must end there. */
  async atEnd(): Promise<boolean> {
    if (this.available > 0) return false;
    while (await this.more()) if (this.available > 0) return false;
    return true;
  }
}

/**
 * Blobs of at least this size are named as they inflate, piece by piece into
 * the hash, never held whole (git's index-pack streams what is over
 * core.bigFileThreshold): a few compressed bytes declaring hundreds of
 * megabytes cost a megabyte here.
 */
const STREAM_BYTES = 8 * 1024 * 1024;

/** The blob entry whose header `h` starts the window, named as it inflates: its id and the length of its zlib stream. */
async function streamBlob(rx: Receiver, h: Header, offset: number): Promise<{ oid: Buffer; used: number }> {
  const hasher = new Bun.CryptoHasher("sha1");
  hasher.update(`blob ${h.size}\0`);
  const inflater = createInflate({ chunkSize: 1 << 20 });
  let produced = 0;
  let failure: BadPack | null = null;
  let ended = false;
  // The feed waiting for the inflater: woken by its write's callback, or by a failure that ends the stream.
  let wake: (() => void) | null = null;
  inflater.on("data", (piece: Buffer) => {
    produced += piece.length;
    if (produced <= h.size) hasher.update(piece);
    else if (!failure) {
      failure = new BadPack(`the entry at offset ${offset} inflates to more than the ${h.size} bytes it declares`);
      inflater.destroy();
    }
  });
  inflater.on("error", () => {
    failure ??= new BadPack(`the entry at offset ${offset} is not valid zlib data`);
    wake?.();
  });
  inflater.on("close", () => wake?.());
  inflater.on("end", () => {
    ended = true;
  });
  const feed = (piece: Buffer | null) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      if (piece) inflater.write(piece, () => resolve());
      else inflater.end(() => resolve());
    });
  try {
    // Bytes past the stream's end (the next entries) are ignored by the inflater, which counts what it used.
    let fed = offset + h.len;
    for (;;) {
      const v = rx.view();
      if (v.pos + (v.end - v.start) > fed) {
        await feed(Buffer.from(v.buf.subarray(v.start + (fed - v.pos), v.end)));
        fed = v.pos + (v.end - v.start);
      }
      if (ended || failure) break;
      // Deflate barely grows what it cannot compress: a stream much longer than its declared output is not an honest entry.
      if (fed - offset - h.len > h.size + (h.size >> 2) + 65536) throw new BadPack(`the entry at offset ${offset} goes on far past the ${h.size} bytes it declares`);
      if (!(await rx.more())) {
        // The pack ended: the entry must end in what arrived (an inflater told to finish early fails: that is this).
        await feed(null);
        if (!ended) failure = new BadPack(`it ends inside the entry at offset ${offset}`);
        break;
      }
    }
    if (failure) throw failure;
    if (produced !== h.size) throw new BadPack(`the entry at offset ${offset} inflates to ${produced} bytes, not the ${h.size} it declares`);
    return { oid: hasher.digest() as Buffer, used: inflater.bytesWritten };
  } finally {
    inflater.destroy();
  }
}

/** Walk the pack as it arrives: every entry's header, extent, CRC and (for whole objects) name; deltas go to `stash` as far as it takes them. */
export async function receive(rx: Receiver, e: Entries, limits: TransferLimits, keep: Map<string, GitObject> | null, refKids: Map<string, number[]>, links: PackLinks | undefined, signal: AbortSignal, stash?: DeltaStash): Promise<{ trailer: Buffer; end: number }> {
  if (!(await rx.need(12))) throw new BadPack("it ends before its header");
  const gc = new Collector();
  let v = rx.view();
  if (v.buf.toString("latin1", v.start, v.start + 4) !== "PACK") throw new BadPack("it does not start with PACK");
  const version = v.buf.readUInt32BE(v.start + 4);
  if (version !== 2 && version !== 3) throw new BadPack(`version ${version} is not supported`);
  const count = v.buf.readUInt32BE(v.start + 8);
  if (count > limits.maxPackObjects) throw limitError("maxPackObjects", `the pack says it holds ${count} objects`, limits.maxPackObjects);
  rx.consume(12);
  e.reserve(count);
  const scratch = new Scratch();
  for (let n = 0; n < count; n++) {
    if (n % 256 === 0) {
      throwIfAborted(signal);
      reportActivity({ phase: "receiving", done: n, total: count });
    }
    let h: Header | null;
    for (;;) {
      v = rx.view();
      h = parseHeader(v.buf, v.start, v.end);
      if (h || !(await rx.more())) break;
    }
    if (!h) throw new BadPack(`it ends after ${n} of ${count} objects`);
    const offset = v.pos;
    const isDelta = h.kind === OFS_DELTA || h.kind === REF_DELTA;
    if (!TYPES[h.kind] && !isDelta) throw new BadPack(`the entry at offset ${offset} has unknown type ${h.kind}`);
    if (h.size > limits.maxObjectBytes) throw limitError("maxObjectBytes", `the pack holds an object of ${showBytes(h.size)} at offset ${offset}, over the largest allowed`, limits.maxObjectBytes);
    let base = -1;
    if (h.kind === OFS_DELTA) {
      base = e.at(offset - h.baseRel);
      if (h.baseRel <= 0 || base < 0) throw new BadPack(`the delta at offset ${offset} points at no entry before it`);
    }
    if (TYPES[h.kind] === "blob" && h.size >= STREAM_BYTES && !keep) {
      const { oid, used } = await streamBlob(rx, h, offset);
      v = rx.view();
      const bytes = v.buf.subarray(v.start, v.start + h.len + used);
      e.setOid(e.push(offset, h.kind, Bun.hash.crc32(bytes) >>> 0, base), oid);
      rx.consume(h.len + used);
      gc.add(bytes.length + PER_OBJECT_GARBAGE);
      continue;
    }
    // Inflate, reading more until the entry's stream ends inside the window; the window is at least doubled each time, so a large entry costs a few attempts, not one per chunk.
    // What is only named (or, for a delta, sized) goes to the scratch buffer; what is kept for loose writing gets its own.
    const into = keep && !isDelta ? undefined : scratch;
    let got: { data: Buffer; used: number } | "more";
    for (;;) {
      v = rx.view();
      got = inflateEntry(v.buf, v.start + h.len, v.end, h.size, offset, into);
      if (got !== "more") break;
      // Deflate barely grows what it cannot compress: a stream much longer than its declared output is not an honest entry.
      if (rx.available - h.len > h.size + (h.size >> 2) + 65536) throw new BadPack(`the entry at offset ${offset} goes on far past the ${h.size} bytes it declares`);
      if (!(await rx.need(rx.available * 2 + 4096))) {
        // The stream ended: the entry must end in what arrived.
        v = rx.view();
        got = inflateEntry(v.buf, v.start + h.len, v.end, h.size, offset, into);
        if (got === "more") throw new BadPack(`it ends inside the entry at offset ${offset}`);
        break;
      }
    }
    v = rx.view();
    const len = h.len + got.used;
    const i = e.push(offset, h.kind, Bun.hash.crc32(new Uint8Array(v.buf.buffer, v.buf.byteOffset + v.start, len)) >>> 0, base);
    if (isDelta) {
      const result = deltaResultSize(got.data);
      if (result > limits.maxObjectBytes) throw limitError("maxObjectBytes", `a delta in the pack at offset ${offset} builds an object of ${showBytes(result)}, over the largest allowed`, limits.maxObjectBytes);
      if (h.baseOid) refKids.set(h.baseOid, [...(refKids.get(h.baseOid) ?? []), i]);
      stash?.put(i, got.data);
    } else {
      const type = TYPES[h.kind] as ObjectType;
      e.setOid(i, nameOf(type, got.data));
      links?.record(i, type, got.data);
      keep?.set(e.oidHex(i), { type, data: got.data });
    }
    rx.consume(len);
    const garbage = scratch.holds(got.data) ? 0 : got.data.length;
    got = "more"; // dropped before collecting: a large object is handed back before the next one is inflated
    if (!keep) gc.add(garbage === 0 ? PER_OBJECT_GARBAGE / 4 : garbage + PER_OBJECT_GARBAGE);
  }
  reportActivity({ phase: "receiving", done: count, total: count });
  const end = rx.view().pos;
  if (!(await rx.need(20))) throw new BadPack(`it ends after its last object, without its checksum`);
  v = rx.view();
  const trailer = Buffer.from(v.buf.subarray(v.start, v.start + 20));
  rx.hashConsumed();
  if (!(rx.sum.digest() as Buffer).equals(trailer)) throw new BadPack("its checksum does not match");
  rx.consume(20, false);
  if (!(await rx.atEnd())) throw new BadPack("it has bytes after its checksum");
  rx.flush();
  return { trailer, end };
}
