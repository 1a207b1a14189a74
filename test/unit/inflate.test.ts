// The pack indexer's zlib decoder (src/core/git/objects/inflate.ts) against
// node:zlib, the reference: on random data of every size, compressed every
// way zlib can (stored, fixed and dynamic blocks, every strategy), each
// stream followed by other bytes as in a pack, the same output and exactly
// the same count of bytes used; every cut-off prefix asks for more; and on
// damaged streams it never accepts what zlib refuses.
import { describe, expect, test } from "bun:test";
import { constants, deflateSync, inflateSync } from "node:zlib";
import { inflateZlib } from "../../src/core/git/objects/inflate.ts";
import { xorshift32 } from "../helpers/prng.ts";

/** Data of `n` bytes in one of several shapes: noise, text-like, runs, repeats of a short pattern. */
function sample(rand: () => number, n: number): Buffer {
  const out = Buffer.alloc(n);
  const shape = rand() % 4;
  const alphabet = 2 + (rand() % 60);
  let i = 0;
  while (i < n) {
    if (shape === 0) out[i++] = rand() & 0xff;
    else if (shape === 1) out[i++] = 0x20 + (rand() % alphabet);
    else if (shape === 2) {
      const b = rand() & 0xff;
      for (let k = rand() % 300; k > 0 && i < n; k--) out[i++] = b;
    } else {
      const len = 1 + (rand() % 40);
      const from = i > len ? i - 1 - (rand() % Math.min(i - 1, 40000)) : -1;
      for (let k = 0; k < len && i < n; k++) out[i++] = from >= 0 ? (out[from + k] as number) : rand() & 0xff;
    }
  }
  return out;
}

const STRATEGIES = [constants.Z_DEFAULT_STRATEGY, constants.Z_FILTERED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE, constants.Z_FIXED];

function compress(rand: () => number, data: Buffer): Buffer {
  const level = rand() % 10;
  const strategy = STRATEGIES[rand() % STRATEGIES.length] as number;
  return deflateSync(data, { level, strategy, memLevel: 1 + (rand() % 9), windowBits: 9 + (rand() % 7) });
}

/** What node:zlib makes of `b[at..]`: output and bytes used, or null when it refuses or wants more. */
function reference(b: Buffer, at: number): { data: Buffer; used: number } | null {
  try {
    const r = inflateSync(b.subarray(at), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    return { data: r.buffer, used: r.engine.bytesWritten };
  } catch {
    return null;
  }
}

const SIZES = [0, 1, 2, 3, 7, 31, 100, 257, 1000, 4096, 32767, 32768, 40000, 70000, 200000];

describe("inflateZlib", () => {
  test("matches node:zlib's output and bytes used on random data of every size, with other bytes after the stream", () => {
    const rand = xorshift32(0x1f1a7e);
    let cases = 0;
    for (const base of SIZES)
      for (let k = 0; k < 12; k++) {
        const n = k === 0 ? base : base + (rand() % (base + 10));
        const data = sample(rand, n);
        const z = compress(rand, data);
        const lead = rand() % 5;
        const tail = Buffer.from(Array.from({ length: rand() % 40 }, () => rand() & 0xff));
        const b = Buffer.concat([Buffer.alloc(lead, 0xaa), z, tail]);
        const got = inflateZlib(b, lead, b.length, data.length);
        if (typeof got === "string") throw new Error(`size ${n}: ${got}`);
        expect(got.data.equals(data)).toBe(true);
        expect(got.used).toBe(z.length);
        expect(got.used).toBe(reference(b, lead)?.used as number);
        cases++;
      }
    expect(cases).toBe(SIZES.length * 12);
  });

  test("stored, fixed and dynamic blocks each decode", () => {
    const rand = xorshift32(7);
    const kinds = new Set<number>();
    for (const [level, strategy, n] of [
      [0, constants.Z_DEFAULT_STRATEGY, 70000],
      [6, constants.Z_FIXED, 5000],
      [9, constants.Z_DEFAULT_STRATEGY, 5000],
      [1, constants.Z_HUFFMAN_ONLY, 5000],
    ] as const) {
      const data = level === 0 ? sample(rand, n) : Buffer.from(`${"the quick brown fox ".repeat(n / 40)}${rand()}`);
      const z = deflateSync(data, { level, strategy });
      kinds.add(((z[2] as number) >> 1) & 3);
      const got = inflateZlib(z, 0, z.length, data.length);
      if (typeof got === "string") throw new Error(got);
      expect(got.data.equals(data)).toBe(true);
      expect(got.used).toBe(z.length);
    }
    expect([...kinds].sort()).toEqual([0, 1, 2]);
  });

  test("every cut-off prefix of a stream asks for more", () => {
    const rand = xorshift32(99);
    for (const n of [0, 5, 300, 3000, 70000]) {
      const data = sample(rand, n);
      const z = compress(rand, data);
      const step = Math.max(1, Math.floor(z.length / 400));
      for (let cut = 0; cut < z.length; cut += cut < 50 ? 1 : step) expect(inflateZlib(z, 0, cut, n)).toBe("more");
      expect(inflateZlib(z, 0, z.length - 1, n)).toBe("more");
    }
  });

  test("a stream that inflates past the declared size is stopped there; one that inflates short says how much", () => {
    const data = sample(xorshift32(3), 5000);
    for (const level of [0, 1, 9]) {
      const z = deflateSync(data, { level });
      expect(inflateZlib(z, 0, z.length, 4999)).toBe("too-large");
      expect(inflateZlib(z, 0, z.length, 0)).toBe("too-large");
      const short = inflateZlib(z, 0, z.length, 6000);
      if (typeof short === "string") throw new Error(short);
      expect(short.data.length).toBe(5000);
      expect(short.used).toBe(z.length);
    }
  });

  test("never accepts a damaged stream node:zlib refuses, and agrees with it on those it accepts", () => {
    const rand = xorshift32(0xbad);
    let refused = 0;
    for (let k = 0; k < 3000; k++) {
      const n = SIZES[rand() % SIZES.length] as number;
      const data = sample(rand, Math.min(n, 20000));
      const z = Buffer.from(compress(rand, data));
      for (let flips = 1 + (rand() % 3); flips > 0; flips--) {
        const at = rand() % z.length;
        z[at] = (z[at] as number) ^ (1 << rand() % 8);
      }
      const want = reference(z, 0);
      const got = inflateZlib(z, 0, z.length, want ? want.data.length : data.length);
      if (want === null) {
        expect(typeof got).toBe("string");
        refused++;
      } else {
        if (typeof got === "string") throw new Error(`case ${k}: ${got}, node accepted it`);
        expect(got.data.equals(want.data)).toBe(true);
        expect(got.used).toBe(want.used);
      }
    }
    expect(refused).toBeGreaterThan(1000);
  });

  test("refuses what zlib refuses in the header, the codes and the trailer", () => {
    const z = deflateSync(Buffer.from("hello hello hello hello"));
    const bad = (edit: (b: Buffer) => void) => {
      const b = Buffer.from(z);
      edit(b);
      return inflateZlib(b, 0, b.length, 23);
    };
    expect(bad((b) => (b[0] = 0x79))).toBe("corrupt"); // method 9
    expect(bad((b) => (b[0] = 0x88))).toBe("corrupt"); // a 64 KiB window
    expect(bad((b) => (b[1] = (b[1] as number) ^ 1))).toBe("corrupt"); // header check bits
    expect(bad((b) => (b[b.length - 1] = (b[b.length - 1] as number) ^ 1))).toBe("corrupt"); // Adler-32
    // A preset dictionary (FDICT), with valid check bits.
    const dict = Buffer.from([0x78, 0xbb, 0, 0, 0, 1, 3, 0, 0, 0, 0, 1]);
    expect(inflateZlib(dict, 0, dict.length, 0)).toBe("corrupt");
    // Block type 3.
    expect(inflateZlib(Buffer.from([0x78, 0x9c, 0x07, 0, 0, 0, 0, 0]), 0, 8, 0)).toBe("corrupt");
    // A stored block whose length does not match its complement.
    expect(inflateZlib(Buffer.from([0x78, 0x01, 0x01, 0x01, 0x00, 0xfe, 0xfe, 0x41, 0, 0, 0, 0]), 0, 12, 1)).toBe("corrupt");
    // A distance before the start of the output (fixed block: literal 'a', then length 3 at distance 2).
    const far = Buffer.from([0x78, 0x9c, 0x4b, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]);
    expect(reference(far, 0)).toBeNull();
    expect(inflateZlib(far, 0, far.length, 4)).toBe("corrupt");
  });

  test("a dynamic block's code sets: over-subscribed and incomplete ones are refused as zlib refuses them", () => {
    // A dynamic block with 257 literal/length codes and one distance code, assembled bit by bit: `cl` gives the
    // code-length code's lengths, `lens` the run of code lengths written with it ([symbol, extra bits]); then
    // end-of-block (written as `eob`, its code's bits), and the trailer of an empty output.
    const ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
    const block = (cl: Record<number, number>, lens: number[][], eob: number[]): Buffer => {
      const bits: number[] = [];
      const put = (v: number, n: number) => {
        for (let i = 0; i < n; i++) bits.push((v >> i) & 1);
      };
      put(1, 1);
      put(2, 2);
      put(0, 5);
      put(0, 5);
      put(15, 4);
      for (const s of ORDER) put(cl[s] ?? 0, 3);
      // The code-length code's canonical codes, most significant bit first.
      const codes = new Map<number, string>();
      let code = 0;
      for (let len = 1; len <= 7; len++) {
        for (let s = 0; s < 19; s++) if (cl[s] === len) codes.set(s, (code++).toString(2).padStart(len, "0"));
        code <<= 1;
      }
      for (const [sym, extra] of lens) {
        for (const c of codes.get(sym as number) ?? "") bits.push(Number(c));
        if (sym === 16) put(extra as number, 2);
        if (sym === 17) put(extra as number, 3);
        if (sym === 18) put(extra as number, 7);
      }
      bits.push(...eob);
      const bytes = Buffer.alloc(Math.ceil(bits.length / 8));
      bits.forEach((b, i) => (bytes[i >> 3] = (bytes[i >> 3] as number) | (b << (i & 7))));
      return Buffer.concat([Buffer.from([0x78, 0x9c]), bytes, Buffer.from([0, 0, 0, 1])]);
    };
    const agree = (b: Buffer) => {
      const want = reference(b, 0);
      const got = inflateZlib(b, 0, b.length, 0);
      if (want === null) expect(got).toBe("corrupt");
      else {
        if (typeof got === "string") throw new Error(got);
        expect(got.used).toBe(want.used);
      }
      return want !== null;
    };
    const cl = { 0: 2, 1: 2, 2: 2, 18: 2 }; // four codes of two bits: complete
    const zeros128 = [18, 117]; // 11 + 117 zeros
    // End-of-block alone, one code of one bit (incomplete, allowed); the distance code unused: length 0 (allowed) or one bit (allowed).
    expect(agree(block(cl, [zeros128, zeros128, [1], [0]], [0]))).toBe(true);
    expect(agree(block(cl, [zeros128, zeros128, [1], [1]], [0]))).toBe(true);
    // End-of-block as the only code but of two bits: incomplete, refused.
    expect(agree(block(cl, [zeros128, zeros128, [2], [0]], [0, 0]))).toBe(false);
    // No end-of-block code at all.
    expect(agree(block(cl, [zeros128, zeros128, [0], [0]], [0]))).toBe(false);
    // The code-length code over-subscribed (three codes of one bit), or incomplete (two of two bits): refused.
    expect(agree(block({ 0: 1, 1: 1, 18: 1 }, [zeros128, zeros128, [1], [0]], [0]))).toBe(false);
    expect(agree(block({ 0: 2, 1: 2, 18: 0 }, [[0], [1]], [0]))).toBe(false);
    // A code-length code with no codes at all.
    expect(agree(block({}, [[0]], [0]))).toBe(false);
    // A run longer than the lengths left, and a repeat with nothing before it.
    expect(agree(block(cl, [zeros128, zeros128, [18, 0]], [0]))).toBe(false);
    expect(agree(block({ 0: 2, 1: 2, 16: 2, 18: 2 }, [[16, 0]], [0]))).toBe(false);
  });
});
