// A smart-HTTP server on 127.0.0.1 that misbehaves on purpose, one way per
// repository name: http://127.0.0.1:PORT/<mode>.git. Each mode attacks one
// limit of grex's transport (bytes, time, decompression, inflation, delta
// chains) or sends a broken pack. Honest parts (the advertisement of the
// pack-level modes) are well formed, so the attack is what fails. Every
// response stream stops when the client goes away; stop() ends the rest.
import { deflateSync, gzipSync } from "node:zlib";

export const HOSTILE_MODES = [
  "endless-pack",
  "endless-entry",
  "endless-refs",
  "gzip-refs",
  "inflate-bomb",
  "lying-size",
  "delta-bomb",
  "deep-chain",
  "slow-refs",
  "slow-pack",
  "silent",
  "truncated-pack",
  "trailing-bytes",
  "bad-checksum",
  "brotli-refs",
  "dropped-pack",
  "dropped-refs",
] as const;
export type HostileMode = (typeof HOSTILE_MODES)[number];

export interface HostileServer {
  url: string;
  /** Requests answered so far, and connections the client dropped before a response stream ended. */
  readonly requests: number;
  stop(): Promise<void>;
}

const FAKE_TIP = "1".repeat(40);

function pkt(payload: string | Buffer): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body]);
}

/** A type-and-size entry header (git's pack varint). */
function entryHeader(kind: number, size: number): Buffer {
  const out: number[] = [];
  let c = (kind << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    out.push(c | 0x80);
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  out.push(c);
  return Buffer.from(out);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  do {
    let c = v & 0x7f;
    v = Math.floor(v / 128);
    if (v > 0) c |= 0x80;
    out.push(c);
  } while (v > 0);
  return Buffer.from(out);
}

/** An OFS_DELTA's distance to its base, in git's offset encoding. */
function ofsDistance(rel: number): Buffer {
  const out = [rel & 0x7f];
  let v = Math.floor(rel / 128);
  while (v > 0) {
    v -= 1;
    out.unshift(0x80 | (v & 0x7f));
    v = Math.floor(v / 128);
  }
  return Buffer.from(out);
}

export const blobEntry = (data: Buffer, declared = data.length): Buffer => Buffer.concat([entryHeader(3, declared), deflateSync(data)]);

/** A delta that copies its whole base `times` times (a result `times` the base's size, from a few bytes). */
export function copyDelta(baseSize: number, times: number): Buffer {
  const copy: number[] = [];
  // Copies of at most 64 KiB each (0x10000 is "size 0"), offset encoded in 4 bytes.
  for (let t = 0; t < times; t++) {
    for (let off = 0; off < baseSize; off += 0x10000) {
      const len = Math.min(0x10000, baseSize - off);
      copy.push(0x80 | 0x0f | 0x30, off & 0xff, (off >> 8) & 0xff, (off >> 16) & 0xff, (off >>> 24) & 0xff, len & 0xff, (len >> 8) & 0xff);
    }
  }
  return Buffer.concat([varint(baseSize), varint(baseSize * times), Buffer.from(copy)]);
}

export function ofsDeltaEntry(rel: number, delta: Buffer): Buffer {
  return Buffer.concat([entryHeader(6, delta.length), ofsDistance(rel), deflateSync(delta)]);
}

/** A whole pack: header, entries, SHA-1 trailer. */
export function packOf(entries: Buffer[], count = entries.length): Buffer {
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(count, 8);
  const body = Buffer.concat([head, ...entries]);
  const h = new Bun.CryptoHasher("sha1");
  h.update(body);
  return Buffer.concat([body, h.digest() as Buffer]);
}

/** A pack of one base blob and a chain of `depth` deltas, each `times` its base's size. */
export function deltaChainPack(depth: number, times: number, baseSize = 1024): Buffer {
  const entries: Buffer[] = [blobEntry(Buffer.alloc(baseSize, 0x61))];
  let size = baseSize;
  for (let d = 0; d < depth; d++) {
    entries.push(ofsDeltaEntry(entries.at(-1)?.length as number, copyDelta(size, times)));
    size *= times;
  }
  return packOf(entries);
}

/** The advertisement of one branch at `tip`. */
function advertisement(tip = FAKE_TIP, caps = "ofs-delta symref=HEAD:refs/heads/main agent=hostile"): Buffer {
  return Buffer.concat([pkt("# service=git-upload-pack\n"), Buffer.from("0000"), pkt(`${tip} HEAD\0${caps}\n`), pkt(`${tip} refs/heads/main\n`), Buffer.from("0000")]);
}

const ADVERT = { "content-type": "application/x-git-upload-pack-advertisement" };
const RESULT = { "content-type": "application/x-git-upload-pack-result" };

/** A body produced by `next` (null = end); pulled only as the client reads, and dropped when it cancels. */
function streamOf(next: () => Promise<Buffer | null> | Buffer | null): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      const chunk = await next();
      if (chunk === null) c.close();
      else c.enqueue(new Uint8Array(chunk));
    },
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface HostileOptions {
  /** Delay between the single bytes of the slow modes. */
  slowMs?: number;
  /** What the gzip advertisement decodes to, in MiB. */
  gzipRefsMiB?: number;
  /** What each blob of the inflate bomb declares and inflates to, in MiB. */
  bombMiB?: number;
}

export async function startHostileServer(opts: HostileOptions = {}): Promise<HostileServer> {
  const slowMs = opts.slowMs ?? 300;
  const gzipRefsMiB = opts.gzipRefsMiB ?? 32;
  const bombMiB = opts.bombMiB ?? 16;
  // The costly bodies are made before the server listens: made on a request, they
  // could take longer than the client's connect timeout on a loaded machine.
  const line = pkt(`${FAKE_TIP} refs/tags/same\n`);
  const gzipRefs = gzipSync(
    Buffer.concat([advertisement().subarray(0, -4), Buffer.concat(Array.from({ length: Math.ceil((gzipRefsMiB * 1024 * 1024) / line.length) }, () => line))]),
    { level: 9 },
  );
  const bomb = blobEntry(Buffer.alloc(bombMiB * 1024 * 1024));
  const lying = packOf([blobEntry(Buffer.alloc(64 * 1024 * 1024), 1024)]);
  const deltaBomb = deltaChainPack(16, 2, 65536);
  const deepChain = deltaChainPack(300, 1);
  let stopped = false;
  let requests = 0;
  const waiters = new Set<() => void>();

  const endlessPack = (entry: Buffer): ReadableStream<Uint8Array> => {
    const head = Buffer.concat([pkt("NAK\n"), packOf([], 4_000_000).subarray(0, 12)]);
    const run = Buffer.concat(Array.from({ length: 4096 }, () => entry));
    let first = true;
    return streamOf(() => (stopped ? null : first ? ((first = false), head) : run));
  };
  const slow = (bytes: Buffer): ReadableStream<Uint8Array> => {
    let i = 0;
    return streamOf(async () => {
      if (stopped || i >= bytes.length) return null;
      await sleep(slowMs);
      return bytes.subarray(i, ++i);
    });
  };

  /** `bytes`, then the connection is cut (the stream errors, so the server never sends the chunked end). */
  const dropAfter = (bytes: Buffer): ReadableStream<Uint8Array> =>
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        controller.enqueue(bytes);
        await sleep(50);
        controller.error(new Error("the test server drops the connection"));
      },
    });

  const packResponse = (pack: Buffer) => new Response(Buffer.concat([pkt("NAK\n"), pack]), { headers: RESULT });

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      requests++;
      const url = new URL(req.url);
      const mode = url.pathname.split("/")[1]?.replace(/\.git$/, "") as HostileMode;
      const isRefs = url.pathname.endsWith("/info/refs");
      if (isRefs) {
        switch (mode) {
          case "endless-refs": {
            let first = true;
            let n = 0;
            return new Response(
              streamOf(() => {
                if (stopped) return null;
                if (first) {
                  first = false;
                  return Buffer.concat([pkt("# service=git-upload-pack\n"), Buffer.from("0000"), pkt(`${FAKE_TIP} HEAD\0ofs-delta\n`)]);
                }
                const lines: Buffer[] = [];
                for (let k = 0; k < 1000; k++) lines.push(pkt(`${FAKE_TIP} refs/tags/t${n++}\n`));
                return Buffer.concat(lines);
              }),
              { headers: ADVERT },
            );
          }
          case "gzip-refs": {
            // A small body on the wire that decodes to gzipRefsMiB of the same ref line over and over.
            return new Response(gzipRefs, { headers: { ...ADVERT, "content-encoding": "gzip" } });
          }
          case "dropped-refs":
            return new Response(dropAfter(advertisement().subarray(0, 60)), { headers: ADVERT });
          case "brotli-refs":
            return new Response(advertisement(), { headers: { ...ADVERT, "content-encoding": "br" } });
          case "slow-refs":
            return new Response(slow(advertisement()), { headers: ADVERT });
          case "silent":
            // Accept the connection, never answer.
            await new Promise<void>((r) => waiters.add(r));
            return new Response("", { status: 503 });
          default:
            return new Response(advertisement(), { headers: ADVERT });
        }
      }
      // The upload-pack POST.
      await req.arrayBuffer();
      switch (mode) {
        case "endless-pack":
          return new Response(endlessPack(blobEntry(Buffer.from("x"))), { headers: RESULT });
        case "endless-entry": {
          // One blob declaring 1 KiB whose deflate stream never ends: empty stored blocks, forever.
          const start = Buffer.concat([pkt("NAK\n"), packOf([], 1).subarray(0, 12), entryHeader(3, 1024), Buffer.from([0x78, 0x01])]);
          const empty = Buffer.concat(Array.from({ length: 16384 }, () => Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff])));
          let first = true;
          return new Response(
            streamOf(() => (stopped ? null : first ? ((first = false), start) : empty)),
            { headers: RESULT },
          );
        }
        case "inflate-bomb": {
          // Each blob declares (and inflates to) bombMiB of zeros: about a thousandth of that on the wire.
          return packResponse(packOf([bomb, bomb, bomb]));
        }
        case "lying-size":
          // Declares 1 KiB, inflates to 64 MiB.
          return packResponse(lying);
        case "delta-bomb":
          // Each delta doubles its base: 16 of them on 64 KiB build 4 GiB from a few hundred KB.
          return packResponse(deltaBomb);
        case "deep-chain":
          return packResponse(deepChain);
        case "slow-pack":
          return new Response(slow(Buffer.concat([pkt("NAK\n"), deltaChainPack(2, 1)])), { headers: RESULT });
        case "dropped-pack": {
          // 300 KiB of a pack's entries, then the connection is gone.
          const entries = Buffer.concat(Array.from({ length: 2400 }, () => blobEntry(Buffer.from("x".repeat(200)))));
          return new Response(dropAfter(Buffer.concat([pkt("NAK\n"), packOf([], 4_000_000).subarray(0, 12), entries.subarray(0, 300 * 1024)])), { headers: RESULT });
        }
        case "truncated-pack": {
          const p = deltaChainPack(4, 1, 4096);
          return packResponse(p.subarray(0, p.length - 30));
        }
        case "trailing-bytes":
          return packResponse(Buffer.concat([deltaChainPack(4, 1), Buffer.from("and then some")]));
        case "bad-checksum": {
          const p = Buffer.from(deltaChainPack(4, 1));
          p[p.length - 1] = (p[p.length - 1] as number) ^ 0xff;
          return packResponse(p);
        }
        default:
          return packResponse(deltaChainPack(1, 1));
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    get requests() {
      return requests;
    },
    async stop() {
      stopped = true;
      for (const w of waiters) w();
      await server.stop(true);
    },
  };
}
