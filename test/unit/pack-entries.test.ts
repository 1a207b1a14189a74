// The indexer's per-entry helpers (src/core/git/objects/pack-entries.ts):
// the delta stash keeps what fits in its budget, byte for byte, and nothing
// else; the scratch buffer is reused up to its bound and never past it;
// object ids are git's, call after call with one reused hasher.
import { describe, expect, test } from "bun:test";
import { DeltaStash, nameOf, objectId, Scratch } from "../../src/core/git/objects/pack-entries.ts";

describe("DeltaStash", () => {
  test("keeps deltas byte for byte within its budget, and refuses what is too large or past the budget", () => {
    const stash = new DeltaStash(3 * 1024 * 1024);
    const kept = new Map<number, Buffer>();
    let i = 0;
    for (let total = 0; total < 4 * 1024 * 1024; i++) {
      const n = 1 + ((i * 7919) % 9000);
      const data = Buffer.alloc(n, i & 0xff);
      if (n >= 4) data.writeUInt32LE(i, 0);
      stash.put(i * 2, data); // entries need not be dense
      kept.set(i * 2, data);
      total += n;
    }
    let held = 0;
    let missing = 0;
    for (const [k, data] of kept) {
      const got = stash.get(k);
      if (got === null) missing++;
      else {
        expect(got.equals(data)).toBe(true);
        held += got.length;
      }
      expect(stash.get(k + 1)).toBeNull();
    }
    expect(held).toBeLessThanOrEqual(3 * 1024 * 1024);
    expect(held).toBeGreaterThan(2 * 1024 * 1024);
    expect(missing).toBeGreaterThan(0);
    const big = new DeltaStash(1 << 30);
    big.put(0, Buffer.alloc(65 * 1024, 1));
    expect(big.get(0)).toBeNull();
    expect(new DeltaStash(0).get(5)).toBeNull();
  });
});

describe("Scratch", () => {
  test("one buffer reused and grown up to 1 MiB; larger sizes get none", () => {
    const s = new Scratch();
    const a = s.room(100) as Buffer;
    expect(s.room(200)).toBe(a);
    const b = s.room(300 * 1024) as Buffer;
    expect(b.length).toBeGreaterThanOrEqual(300 * 1024);
    expect(s.holds(b.subarray(5, 10))).toBe(true);
    expect(s.holds(Buffer.alloc(10))).toBe(false);
    expect(s.room(1024 * 1024)?.length).toBe(1024 * 1024);
    expect(s.room(1024 * 1024 + 1)).toBeUndefined();
  });
});

test("object ids match git's, one call after another", () => {
  const samples: [string, Buffer][] = [
    ["blob", Buffer.alloc(0)],
    ["blob", Buffer.from("hello\n")],
    ["blob", Buffer.alloc(100_000, 7)],
    ...[9, 10, 99, 100, 101, 999, 1000, 65536].map((n): [string, Buffer] => ["tree", Buffer.alloc(n, 0x41)]),
    ["commit", Buffer.from("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n\nm\n")],
  ];
  for (const [type, data] of samples) {
    const p = Bun.spawnSync(["git", "hash-object", "-t", type, "--stdin", "--literally"], { stdin: data, stdout: "pipe", stderr: "pipe" });
    const want = p.stdout.toString().trim();
    expect(want).toMatch(/^[0-9a-f]{40}$/);
    expect(objectId(type as "blob", data).toString("hex")).toBe(want);
    expect(Buffer.from(nameOf(type as "blob", data)).toString("hex")).toBe(want);
  }
});
