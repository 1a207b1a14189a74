// The window the pack receiver and the pkt-line reader parse from: whatever
// the chunk sizes and however much is consumed between them, the live bytes
// are exactly the stream's bytes not yet consumed (property-style, seeded).
import { expect, test } from "bun:test";
import { ByteWindow } from "../../src/core/base/byte-window.ts";
import { prng } from "../helpers/prng.ts";

test("random appends and consumption keep exactly the unconsumed bytes, in a buffer at most four times the largest span", () => {
  for (let seed = 1; seed <= 50; seed++) {
    const rand = prng(seed);
    const w = new ByteWindow(16);
    let stream = Buffer.alloc(0);
    let consumed = 0;
    let largest = 0;
    for (let step = 0; step < 300; step++) {
      const chunk = Buffer.from(Array.from({ length: Math.floor(rand() * (rand() < 0.1 ? 400 : 40)) }, () => Math.floor(rand() * 256)));
      w.append(chunk);
      stream = Buffer.concat([stream, chunk]);
      largest = Math.max(largest, w.available);
      const take = Math.floor(rand() * (w.available + 1));
      w.start += take;
      consumed += take;
      expect(w.available).toBe(stream.length - consumed);
      expect(Buffer.compare(w.buf.subarray(w.start, w.end), stream.subarray(consumed))).toBe(0);
    }
    expect(w.buf.length).toBeLessThanOrEqual(Math.max(16, 4 * largest));
  }
});
