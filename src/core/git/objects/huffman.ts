// The canonical Huffman codes of DEFLATE (RFC 1951 3.2.2) for inflate.ts:
// a code built from its code lengths under zlib's rules, decoded by a table on
// its first bits and, for a longer code, bit by bit.

/** Each 15-bit value with its bits reversed: a code's bits are stored first bit first (lowest). */
const REV15 = new Uint16Array(1 << 15);
for (let i = 1; i < 1 << 15; i++) REV15[i] = ((REV15[i >>> 1] as number) >>> 1) | ((i & 1) << 14);

/**
 * A canonical Huffman code: a lookup table on the first `root` bits of the
 * input (entry = symbol << 4 | length; 0 for a longer code, or none), and the
 * counts and sorted symbols from which a longer code is decoded bit by bit.
 */
export class Huffman {
  readonly table: Int32Array;
  readonly count = new Uint16Array(16);
  readonly symbol: Uint16Array;
  private readonly offs = new Uint16Array(16);
  mask = 0;
  /** The table's width in bits, and whether some codes are longer. */
  private root = 0;
  private long = false;

  constructor(
    private readonly maxRoot: number,
    symbols: number,
  ) {
    this.table = new Int32Array(1 << maxRoot);
    this.symbol = new Uint16Array(symbols);
  }

  /**
   * Build the code whose lengths are `lengths[first..first + n)`: false for a set zlib
   * refuses (over-subscribed; incomplete, unless it is one code of one bit and
   * `single` allows it, as for literal/length and distance codes).
   */
  build(lengths: Uint8Array, n: number, single: boolean, first = 0): boolean {
    const { count, offs, symbol, table } = this;
    count.fill(0);
    for (let s = 0; s < n; s++) {
      const len = lengths[first + s] as number;
      count[len] = (count[len] as number) + 1;
    }
    count[0] = 0;
    let max = 15;
    while (max > 0 && count[max] === 0) max--;
    let left = 1;
    for (let len = 1; len <= 15; len++) {
      left = (left << 1) - (count[len] as number);
      if (left < 0) return false;
    }
    if (max === 0) {
      // No codes at all: allowed (a block may use no distance); any code read is then invalid.
      if (!single) return false;
      this.mask = 0;
      this.root = 0;
      this.long = false;
      table[0] = 0;
      return true;
    }
    if (left > 0 && (!single || max !== 1)) return false;
    const root = Math.min(max, this.maxRoot);
    const size = 1 << root;
    this.mask = size - 1;
    this.root = root;
    this.long = max > root;
    if (this.long) {
      // Codes longer than the table: their symbols in canonical order, for decoding bit by bit (`slow`).
      offs[1] = 0;
      for (let len = 1; len < 15; len++) offs[len + 1] = (offs[len] as number) + (count[len] as number);
      for (let s = 0; s < n; s++) {
        const len = lengths[first + s] as number;
        if (len === 0) continue;
        const at = offs[len] as number;
        symbol[at] = s;
        offs[len] = at + 1;
      }
    }
    // Entries no code of at most `root` bits fills stay 0: the prefixes of longer codes, and the hole of an incomplete code.
    if (this.long || left > 0) table.fill(0, 0, size);
    // Canonical codes: the first code of each length, then symbols in order take the next code of their length.
    let code = 0;
    for (let len = 1; len <= max; len++) {
      code = (code + (count[len - 1] as number)) << 1;
      offs[len] = code;
    }
    for (let s = 0; s < n; s++) {
      const len = lengths[first + s] as number;
      if (len === 0) continue;
      const c = offs[len] as number;
      offs[len] = c + 1;
      if (len > root) continue;
      const rev = (REV15[c] as number) >>> (15 - len);
      const entry = (s << 4) | len;
      for (let j = rev; j < size; j += 1 << len) table[j] = entry;
    }
    return true;
  }

  /**
   * Decode what the table did not (a code longer than its root, a hole, or
   * too few bits left) from the low `cnt` bits of `buf`: symbol << 4 | length,
   * -1 for no code, -2 when more bits are needed.
   */
  slow(buf: number, cnt: number): number {
    if (!this.long) return cnt >= this.root ? -1 : -2;
    const { count, symbol } = this;
    let code = 0;
    let first = 0;
    let index = 0;
    for (let len = 1; len <= 15; len++) {
      if (len > cnt) return -2;
      code |= (buf >>> (len - 1)) & 1;
      const c = count[len] as number;
      if (code - first < c) return ((symbol[index + code - first] as number) << 4) | len;
      index += c;
      first = (first + c) << 1;
      code <<= 1;
    }
    return -1;
  }
}

function fixedCodes(): [Huffman, Huffman] {
  const lengths = new Uint8Array(288);
  lengths.fill(8, 0, 144);
  lengths.fill(9, 144, 256);
  lengths.fill(7, 256, 280);
  lengths.fill(8, 280, 288);
  const lit = new Huffman(9, 288);
  lit.build(lengths, 288, true);
  const dist = new Huffman(5, 32);
  dist.build(lengths.fill(5, 0, 32), 32, true);
  return [lit, dist];
}

/** The fixed literal/length and distance codes of a type-1 block. */
export const [FIXED_LIT, FIXED_DIST] = fixedCodes();
