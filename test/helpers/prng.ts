// xorshift32: a seeded source of 32-bit numbers, the same on every run and
// machine (generated fixtures, property-style cases).
export function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}
