// Storing a received pack natively: the .idx must be the one `git index-pack`
// writes for the same pack (byte for byte), small packs become loose objects,
// thin packs resolve against objects already here, and a damaged pack is an
// error that writes nothing.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { ObjectStore } from "../../src/core/git/objects/object-store.ts";
import { transferLimits } from "../../src/core/git/objects/limits.ts";
import { storePack, storePackStream, UNPACK_LIMIT } from "../../src/core/git/objects/pack-index.ts";
import { blobEntry, deltaChainPack, packOf as packOfEntries } from "../helpers/hostile-http-server.ts";
import { commit, gitEnv, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;

/** `git pack-objects --stdout` of the revisions on stdin. */
function packOf(repo: string, revs: string, flags: string[] = []): Buffer {
  const p = Bun.spawnSync(["git", "pack-objects", "--stdout", "--revs", "-q", ...flags], {
    cwd: repo,
    env: gitEnv(),
    stdin: Buffer.from(`${revs}\n`),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  return p.stdout;
}

/** What git writes as the index of `pack`. */
function gitIndexOf(dir: string, pack: Buffer): Buffer {
  const path = join(dir, "theirs.pack");
  writeFileSync(path, pack); // whole on disk before git reads it
  git(dir, "index-pack", "-o", join(dir, "theirs.idx"), path);
  return readFileSync(join(dir, "theirs.idx"));
}

async function store(gitdir: string, pack: Buffer, keepPack: boolean) {
  const s = new ObjectStore(gitdir);
  try {
    return await storePack(gitdir, pack, { store: s, keepPack, signal: never() });
  } finally {
    s.close();
  }
}

/** Every file under objects/ (to prove a failure wrote nothing). */
function objectFiles(gitdir: string): string[] {
  return readdirSync(join(gitdir, "objects"), { recursive: true }).map(String).sort();
}

let tmp: { path: string; cleanup: () => void };
let src: string;
let dest: string;

beforeEach(() => {
  tmp = tempDir("grex-pack-index-");
  src = join(tmp.path, "src");
  // Enough history for deltas: a large file edited a little in each commit.
  const big = Array.from({ length: 400 }, (_, i) => `line ${i} of a file long enough to be stored as deltas`).join("\n");
  makeRepo(src, { "big.txt": big, "a/b/c.txt": "c\n" });
  for (let i = 0; i < 12; i++) commit(src, { "big.txt": `${big}\nedit ${i}\n`, [`dir${i % 3}/f${i}.txt`]: `file ${i}\n` }, `commit ${i}`);
  git(src, "tag", "-a", "v1", "-m", "release");
  dest = join(tmp.path, "dest.git");
  git(tmp.path, "init", "--quiet", "--bare", dest);
});

afterEach(() => tmp.cleanup());

describe("storePack", () => {
  for (const [name, flags] of [
    ["offset deltas", ["--delta-base-offset"]],
    ["ref deltas", []],
  ] as const) {
    test(`writes the same .idx as git index-pack (${name})`, async () => {
      const pack = packOf(src, "", ["--all", ...flags]);
      const r = await store(dest, pack, true);
      expect(r.objects).toBeGreaterThan(UNPACK_LIMIT / 4);
      const names = readdirSync(join(dest, "objects", "pack")).sort();
      expect(names).toHaveLength(2);
      const idx = names.find((n) => n.endsWith(".idx")) as string;
      expect(new Uint8Array(readFileSync(join(dest, "objects", "pack", idx)))).toEqual(new Uint8Array(gitIndexOf(tmp.path, pack)));
      expect(new Uint8Array(readFileSync(join(dest, "objects", "pack", idx.replace(/idx$/, "pack"))))).toEqual(new Uint8Array(pack));
      git(dest, "update-ref", "refs/heads/main", git(src, "rev-parse", "HEAD"));
      git(dest, "fsck", "--full", "--no-dangling");
    });
  }

  test("a small pack on a fetch becomes loose objects that git reads", async () => {
    const base = git(src, "rev-parse", "HEAD~1");
    await store(dest, packOf(src, base, ["--delta-base-offset"]), true);
    const pack = packOf(src, `HEAD\n^${base}`, ["--delta-base-offset"]);
    expect(pack.readUInt32BE(8)).toBeLessThan(UNPACK_LIMIT);
    await store(dest, pack, false);
    expect(readdirSync(join(dest, "objects", "pack")).filter((n) => n.endsWith(".pack"))).toHaveLength(1);
    git(dest, "update-ref", "refs/heads/main", git(src, "rev-parse", "HEAD"));
    git(dest, "fsck", "--full", "--no-dangling");
    expect(git(dest, "cat-file", "-p", "refs/heads/main:big.txt")).toBe(git(src, "cat-file", "-p", "HEAD:big.txt"));
  });

  test("a thin pack resolves its deltas against objects already here", async () => {
    const base = git(src, "rev-parse", "HEAD~1");
    await store(dest, packOf(src, base), true);
    const thin = packOf(src, `HEAD\n^${base}`, ["--thin"]);
    await store(dest, thin, true); // kept as a pack: the borrowed bases must be appended to it
    git(dest, "update-ref", "refs/heads/main", git(src, "rev-parse", "HEAD"));
    git(dest, "fsck", "--full", "--no-dangling");
  });

  test("a thin pack whose bases are missing is refused and writes nothing", async () => {
    const base = git(src, "rev-parse", "HEAD~1");
    const thin = packOf(src, `HEAD\n^${base}`, ["--thin"]);
    const before = objectFiles(dest);
    await expect(store(dest, thin, true)).rejects.toThrow(/received pack is corrupt: the delta at offset \d+ has a base neither in the pack nor here/);
    expect(objectFiles(dest)).toEqual(before);
  });

  test("a damaged or cut-off pack is refused and writes nothing", async () => {
    const pack = packOf(src, "", ["--all", "--delta-base-offset"]);
    const before = objectFiles(dest);
    const flipped = Buffer.from(pack);
    const mid = Math.floor(pack.length / 2);
    flipped[mid] = (flipped[mid] as number) ^ 0xff;
    await expect(store(dest, flipped, true)).rejects.toThrow(/received pack is corrupt: (its checksum does not match|the entry at offset \d+ is not valid zlib data|the entry at offset \d+ inflates)/);
    await expect(store(dest, pack.subarray(0, pack.length - 100), true)).rejects.toThrow(/received pack is corrupt/);
    await expect(store(dest, Buffer.from("not a pack at all, just text"), true)).rejects.toThrow(/received pack is corrupt/);
    expect(objectFiles(dest)).toEqual(before);
  });

  test("an entry whose end marker also appears in the next entry is still delimited exactly", async () => {
    // Blob A compresses to a few bytes; blob B is stored uncompressed and holds
    // A's adler-32 trailer, so those four bytes occur twice near A's end.
    const a = Buffer.from("a".repeat(1000));
    const adler = deflateSync(a).subarray(-4);
    const b = Buffer.concat([Buffer.from("prefix "), adler, Buffer.from(" suffix")]);
    const entry = (data: Buffer, level: number) => {
      const head: number[] = [];
      let size = data.length;
      let c = (3 << 4) | (size & 0x0f);
      for (size = Math.floor(size / 16); size > 0; size = Math.floor(size / 128)) {
        head.push(c | 0x80);
        c = size & 0x7f;
      }
      head.push(c);
      return Buffer.concat([Buffer.from(head), deflateSync(data, { level })]);
    };
    const body = Buffer.concat([Buffer.from("PACK"), Buffer.from([0, 0, 0, 2, 0, 0, 0, 2]), entry(a, 9), entry(b, 0)]);
    const h = new Bun.CryptoHasher("sha1");
    h.update(body);
    const pack = Buffer.concat([body, h.digest()]);
    await store(dest, pack, true);
    const idx = readdirSync(join(dest, "objects", "pack")).find((n) => n.endsWith(".idx")) as string;
    expect(new Uint8Array(readFileSync(join(dest, "objects", "pack", idx)))).toEqual(new Uint8Array(gitIndexOf(tmp.path, pack)));
    const blobId = (data: Buffer) => new Bun.CryptoHasher("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");
    expect(git(dest, "cat-file", "-p", blobId(a))).toBe(a.toString());
    expect(Buffer.from(git(dest, "cat-file", "-s", blobId(b)))).toEqual(Buffer.from(String(b.length)));
  });

  test("a damaged entry with a valid checksum is still refused", async () => {
    // Rebuild the checksum over a corrupted body: the entries themselves must be checked.
    const pack = Buffer.from(packOf(src, "", ["--all", "--delta-base-offset"]));
    pack[pack.length - 40] = (pack[pack.length - 40] as number) ^ 0xff;
    const h = new Bun.CryptoHasher("sha1");
    h.update(pack.subarray(0, pack.length - 20));
    h.digest().copy(pack, pack.length - 20);
    const before = objectFiles(dest);
    await expect(store(dest, pack, true)).rejects.toThrow(/received pack is corrupt/);
    expect(objectFiles(dest)).toEqual(before);
  });

  test("a pack arriving in tiny pieces, resolved with a tiny delta-base cache, gives the same .idx", async () => {
    const pack = packOf(src, "", ["--all", "--delta-base-offset"]);
    const s = new ObjectStore(dest);
    let at = 0;
    const source = { read: async () => (at >= pack.length ? null : pack.subarray(at, (at += 7))) };
    try {
      await storePackStream(dest, source, { store: s, keepPack: true, signal: never(), limits: { ...transferLimits({}), deltaCacheBytes: 1 } });
    } finally {
      s.close();
    }
    const idx = readdirSync(join(dest, "objects", "pack")).find((n) => n.endsWith(".idx")) as string;
    expect(new Uint8Array(readFileSync(join(dest, "objects", "pack", idx)))).toEqual(new Uint8Array(gitIndexOf(tmp.path, pack)));
  });

  test("a long delta chain resolves within the cache, and its depth is capped", async () => {
    const pack = deltaChainPack(200, 1, 4096);
    const limits = { ...transferLimits({}), deltaCacheBytes: 16 * 1024 };
    const s = new ObjectStore(dest);
    try {
      await storePackStream(dest, { read: (() => { let sent = false; return async () => (sent ? null : ((sent = true), pack)); })() }, { store: s, keepPack: true, signal: never(), limits });
      const before = objectFiles(dest);
      await expect(storePack(dest, deltaChainPack(200, 1, 4000), { store: s, keepPack: true, signal: never(), limits: { ...limits, maxDeltaDepth: 150 } })).rejects.toThrow(/delta chain longer than 150 \(limit 150, GREX_MAX_DELTA_DEPTH\)/);
      expect(objectFiles(dest)).toEqual(before);
    } finally {
      s.close();
    }
    const idx = readdirSync(join(dest, "objects", "pack")).find((n) => n.endsWith(".idx")) as string;
    expect(new Uint8Array(readFileSync(join(dest, "objects", "pack", idx)))).toEqual(new Uint8Array(gitIndexOf(tmp.path, pack)));
  });

  test("blobs over 8 MiB are named as they inflate: the same .idx as git, arriving whole or in small pieces", async () => {
    // One large blob of text (compressible, as source is) and one of random bytes (not), beside the history.
    const text = Buffer.from(Array.from({ length: 260_000 }, (_, i) => `line ${i} of a large generated file\n`).join(""));
    const noise = Buffer.alloc(9 * 1024 * 1024);
    for (let i = 0; i < noise.length; i += 4) noise.writeUInt32LE((Math.imul(i, 2654435761) ^ (i >>> 7)) >>> 0, i);
    await Bun.write(join(src, "big.txt"), text);
    await Bun.write(join(src, "noise.bin"), noise);
    git(src, "add", "big.txt", "noise.bin");
    git(src, "commit", "-q", "-m", "large files");
    expect(text.length).toBeGreaterThan(8 * 1024 * 1024);
    const pack = packOf(src, "", ["--all", "--delta-base-offset"]);
    for (const piece of [pack.length, 65536]) {
      const into = join(tmp.path, `big-${piece}.git`);
      git(tmp.path, "init", "--quiet", "--bare", into);
      const s = new ObjectStore(into);
      let at = 0;
      try {
        await storePackStream(into, { read: async () => (at >= pack.length ? null : pack.subarray(at, (at += piece))) }, { store: s, keepPack: true, signal: never() });
      } finally {
        s.close();
      }
      const idx = readdirSync(join(into, "objects", "pack")).find((n) => n.endsWith(".idx")) as string;
      expect(new Uint8Array(readFileSync(join(into, "objects", "pack", idx)))).toEqual(new Uint8Array(gitIndexOf(tmp.path, pack)));
    }
  });

  test("a large blob that inflates to more or less than it declares, or is cut off, is refused and writes nothing", async () => {
    const size = 9 * 1024 * 1024;
    const cases: Array<[Buffer, RegExp]> = [
      [packOfEntries([blobEntry(Buffer.alloc(size + 1), size)]), /the entry at offset 12 inflates to more than the 9437184 bytes it declares/],
      [packOfEntries([blobEntry(Buffer.alloc(size - 1), size)]), /the entry at offset 12 inflates to 9437183 bytes, not the 9437184 it declares/],
      [packOfEntries([blobEntry(Buffer.alloc(size), size)]).subarray(0, 200), /it ends inside the entry at offset 12/],
      [packOfEntries([Buffer.concat([blobEntry(Buffer.alloc(size), size).subarray(0, 40), Buffer.alloc(64, 0xff)])]), /the entry at offset 12 is not valid zlib data|it ends inside the entry at offset 12/],
    ];
    for (const [pack, says] of cases) {
      const before = objectFiles(dest);
      await expect(store(dest, pack, true)).rejects.toThrow(says);
      expect(objectFiles(dest)).toEqual(before);
    }
  });

  test("no temp file is left in objects/pack when a pack is refused", async () => {
    const pack = packOf(src, "", ["--all"]);
    await expect(store(dest, Buffer.concat([pack, Buffer.from("x")]), true)).rejects.toThrow(/it has bytes after its checksum/);
    await expect(store(dest, pack.subarray(0, pack.length - 10), true)).rejects.toThrow(/received pack is corrupt/);
    expect(readdirSync(join(dest, "objects", "pack"))).toEqual([]);
  });

  test("a temp pack left by a killed fetch is removed by the next one", async () => {
    const dead = Bun.spawnSync(["true"]).pid; // exited: its pid is free
    const stale = join(dest, "objects", "pack", `tmp_pack_${dead}_abc`);
    await Bun.write(stale, "half a pack");
    await store(dest, packOf(src, "", ["--all"]), true);
    expect(readdirSync(join(dest, "objects", "pack")).filter((n) => n.startsWith("tmp_pack_"))).toEqual([]);
  });
});
