// A zlib stream decoder (RFC 1950 around RFC 1951 DEFLATE) for the many
// small streams of a pack. node:zlib builds a stream object and a native
// engine for every call, which on a long history (hundreds of thousands of
// commits, trees and deltas of a few hundred bytes) cost several times the
// decoding itself; this decoder keeps its tables from call to call and writes
// straight into one buffer of the size the entry declares. It reports exactly
// how many input bytes the stream used (trailer included), as the indexer
// needs to find the next entry, and it accepts and refuses what zlib does:
// the header's method, window and check bits, no preset dictionary, stored
// lengths that match their complement, no over-subscribed code and no
// incomplete one except a single code of one bit, no symbol or distance
// outside the alphabet, no distance before the start of the output, and the
// Adler-32 of the output. test/unit/inflate.test.ts checks it against
// node:zlib on random and corrupt input.

import { FIXED_DIST, FIXED_LIT, Huffman } from "./huffman.ts";

/** Why a stream could not be decoded: it goes on past `end`, it inflates past `size`, or it is not valid zlib data. */
export type InflateFailure = "more" | "too-large" | "corrupt";

const LEN_BASE = Uint16Array.from([3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]);
const LEN_EXTRA = Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]);
const DIST_BASE = Uint16Array.from([1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]);
const DIST_EXTRA = Uint8Array.from([0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]);
/** The order in which a dynamic block lists the code lengths of its code-length alphabet. */
const CL_ORDER = Uint8Array.from([16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]);

const dynLit = new Huffman(9, 288);
const dynDist = new Huffman(7, 32);
const clCode = new Huffman(7, 19);
const lengths = new Uint8Array(288 + 32);

/** A failure thrown from deep in the decoder and returned by `inflateZlib`. */
class Stop {
  constructor(readonly why: InflateFailure) {}
}
const MORE = new Stop("more");
const CORRUPT = new Stop("corrupt");
const TOO_LARGE = new Stop("too-large");
const FAIL_MORE = -1;
const FAIL_CORRUPT = -2;
const FAIL_TOO_LARGE = -3;
const STOPS = [MORE, MORE, CORRUPT, TOO_LARGE];

/** The output position `codes` returned, or its failure thrown. */
function checked(op: number): number {
  if (op < 0) throw STOPS[-op];
  return op;
}

/** Bit reader state for the parts that are not hot (block headers); the block loop keeps its own copy in locals. */
const EMPTY: Uint8Array = new Uint8Array(0);
const r = { src: EMPTY, pos: 0, end: 0, buf: 0, cnt: 0 };

function bits(n: number): number {
  while (r.cnt < n) {
    if (r.pos >= r.end) throw MORE;
    r.buf |= (r.src[r.pos++] as number) << r.cnt;
    r.cnt += 8;
  }
  const v = r.buf & ((1 << n) - 1);
  r.buf >>>= n;
  r.cnt -= n;
  return v;
}

/** A dynamic block's header: its literal/length and distance codes into dynLit and dynDist (the reader in locals: this runs once per block of every small object). */
function readDynamic(): void {
  const { src, end } = r;
  let { pos, buf, cnt } = r;
  // A failure throws at once: the reader state goes with the stream (inflateZlib starts over on more input).
  while (cnt < 24 && pos < end) {
    buf |= (src[pos++] as number) << cnt;
    cnt += 8;
  }
  if (cnt < 14) throw MORE;
  const nlit = (buf & 31) + 257;
  const ndist = ((buf >>> 5) & 31) + 1;
  const ncl = ((buf >>> 10) & 15) + 4;
  buf >>>= 14;
  cnt -= 14;
  if (nlit > 286 || ndist > 30) throw CORRUPT;
  lengths.fill(0, 0, 19);
  for (let i = 0; i < ncl; i++) {
    if (cnt < 3) {
      while (cnt < 24 && pos < end) {
        buf |= (src[pos++] as number) << cnt;
        cnt += 8;
      }
      if (cnt < 3) throw MORE;
    }
    lengths[CL_ORDER[i] as number] = buf & 7;
    buf >>>= 3;
    cnt -= 3;
  }
  if (!clCode.build(lengths, 19, false)) throw CORRUPT;
  // The code-length code is complete and at most 7 bits long: its table holds every code.
  const table = clCode.table;
  const mask = clCode.mask;
  const total = nlit + ndist;
  let i = 0;
  while (i < total) {
    while (cnt < 24 && pos < end) {
      buf |= (src[pos++] as number) << cnt;
      cnt += 8;
    }
    const e = table[buf & mask] as number;
    const len = e & 15;
    if (e === 0 || len > cnt) throw e === 0 ? CORRUPT : MORE;
    buf >>>= len;
    cnt -= len;
    const sym = e >>> 4;
    if (sym < 16) {
      lengths[i++] = sym;
      continue;
    }
    let value = 0;
    let extra = 7;
    let repeat = 11;
    if (sym === 16) {
      if (i === 0) throw CORRUPT;
      value = lengths[i - 1] as number;
      extra = 2;
      repeat = 3;
    } else if (sym === 17) {
      extra = 3;
      repeat = 3;
    }
    if (cnt < extra) throw MORE;
    repeat += buf & ((1 << extra) - 1);
    buf >>>= extra;
    cnt -= extra;
    if (i + repeat > total) throw CORRUPT;
    for (const stop = i + repeat; i < stop; i++) lengths[i] = value;
  }
  r.pos = pos;
  r.buf = buf;
  r.cnt = cnt;
  if (lengths[256] === 0) throw CORRUPT; // no end-of-block code
  if (!dynLit.build(lengths, nlit, true)) throw CORRUPT;
  if (!dynDist.build(lengths, ndist, true, nlit)) throw CORRUPT;
}

function adler32(b: Uint8Array, n: number): number {
  let a = 1;
  let s = 0;
  let i = 0;
  while (i < n) {
    const stop = Math.min(i + 5552, n);
    for (; i < stop; i++) {
      a += b[i] as number;
      s += a;
    }
    a %= 65521;
    s %= 65521;
  }
  return (s * 65536 + a) >>> 0;
}

/** Decode one block's symbols with `lit`/`dist` into `out` from `op`: the new output position, or a failure (FAIL_*). */
function codes(lit: Huffman, dist: Huffman, out: Uint8Array, op: number, size: number): number {
  const src = r.src;
  const end = r.end;
  const lt = lit.table;
  const lmask = lit.mask;
  const dt = dist.table;
  const dmask = dist.mask;
  let pos = r.pos;
  let buf = r.buf;
  let cnt = r.cnt;
  // A failure returns at once: the reader state goes with the stream (inflateZlib starts over on more input).
  for (;;) {
    while (cnt < 24 && pos < end) {
      buf |= (src[pos++] as number) << cnt;
      cnt += 8;
    }
    let e = lt[buf & lmask] as number;
    if (e === 0 || (e & 15) > cnt) {
      e = lit.slow(buf, cnt);
      if (e < 0) return e === -2 ? FAIL_MORE : FAIL_CORRUPT;
    }
    buf >>>= e & 15;
    cnt -= e & 15;
    let sym = e >>> 4;
    if (sym < 256) {
      if (op >= size) return FAIL_TOO_LARGE;
      out[op++] = sym;
      continue;
    }
    if (sym === 256) break;
    sym -= 257;
    if (sym >= 29) return FAIL_CORRUPT;
    let n = LEN_BASE[sym] as number;
    let extra = LEN_EXTRA[sym] as number;
    if (extra > 0) {
      if (cnt < extra) return FAIL_MORE; // the reader holds at least 24 bits unless the input ended
      n += buf & ((1 << extra) - 1);
      buf >>>= extra;
      cnt -= extra;
    }
    while (cnt < 24 && pos < end) {
      buf |= (src[pos++] as number) << cnt;
      cnt += 8;
    }
    e = dt[buf & dmask] as number;
    if (e === 0 || (e & 15) > cnt) {
      e = dist.slow(buf, cnt);
      if (e < 0) return e === -2 ? FAIL_MORE : FAIL_CORRUPT;
    }
    buf >>>= e & 15;
    cnt -= e & 15;
    sym = e >>> 4;
    if (sym >= 30) return FAIL_CORRUPT;
    let d = DIST_BASE[sym] as number;
    extra = DIST_EXTRA[sym] as number;
    if (extra > 0) {
      while (cnt < 24 && pos < end) {
        buf |= (src[pos++] as number) << cnt;
        cnt += 8;
      }
      if (cnt < extra) return FAIL_MORE;
      d += buf & ((1 << extra) - 1);
      buf >>>= extra;
      cnt -= extra;
    }
    if (d > op) return FAIL_CORRUPT; // before the start of the output
    if (op + n > size) return FAIL_TOO_LARGE;
    let from = op - d;
    if (d >= n && n > 32) {
      out.copyWithin(op, from, from + n);
      op += n;
    } else for (const stop = op + n; op < stop; ) out[op++] = out[from++] as number;
  }
  r.pos = pos;
  r.buf = buf;
  r.cnt = cnt;
  return op;
}

/**
 * Inflate the zlib stream at `src[at..end)`, which declares (from the pack
 * entry's header) that it holds `size` bytes: the output, which is shorter
 * than `size` only when the stream ends early, and the number of bytes the
 * stream used; or why not. The output is written into `into` when it is
 * given and large enough (a caller's scratch buffer, for data it drops before
 * the next call), else into a new buffer.
 */
export function inflateZlib(src: Uint8Array, at: number, end: number, size: number, into?: Buffer): { data: Buffer; used: number } | InflateFailure {
  if (end - at < 2) return "more";
  const cmf = src[at] as number;
  const flg = src[at + 1] as number;
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7 || (cmf * 256 + flg) % 31 !== 0 || flg & 0x20) return "corrupt";
  r.src = src;
  r.pos = at + 2;
  r.end = end;
  r.buf = 0;
  r.cnt = 0;
  const out = into !== undefined && into.length >= size ? into : Buffer.allocUnsafeSlow(size);
  let op = 0;
  try {
    let last = 0;
    while (!last) {
      last = bits(1);
      const type = bits(2);
      if (type === 0) {
        // Stored: the rest of the current byte is dropped, and the whole bytes still in the reader go back to the input.
        r.pos -= r.cnt >>> 3;
        r.buf = 0;
        r.cnt = 0;
        if (r.pos + 4 > end) throw MORE;
        const len = (src[r.pos] as number) | ((src[r.pos + 1] as number) << 8);
        const nlen = (src[r.pos + 2] as number) | ((src[r.pos + 3] as number) << 8);
        if (len !== (~nlen & 0xffff)) throw CORRUPT;
        if (op + len > size) throw TOO_LARGE;
        if (r.pos + 4 + len > end) throw MORE;
        out.set(src.subarray(r.pos + 4, r.pos + 4 + len), op);
        op += len;
        r.pos += 4 + len;
      } else if (type === 1) op = checked(codes(FIXED_LIT, FIXED_DIST, out, op, size));
      else if (type === 2) {
        readDynamic();
        op = checked(codes(dynLit, dynDist, out, op, size));
      } else throw CORRUPT;
    }
    r.pos -= r.cnt >>> 3;
    if (r.pos + 4 > end) return "more";
    const p = r.pos;
    const check = ((src[p] as number) * 0x1000000 + (((src[p + 1] as number) << 16) | ((src[p + 2] as number) << 8) | (src[p + 3] as number))) >>> 0;
    if (check !== adler32(out, op)) return "corrupt";
    return { data: op === out.length ? out : out.subarray(0, op), used: p + 4 - at };
  } catch (err) {
    if (err instanceof Stop) return err.why;
    throw err;
  } finally {
    r.src = EMPTY; // never keeps a caller's buffer alive
  }
}
