// The file-writer thread (file-writer.ts starts it): creates the files of a
// batch a first checkout sends (its directories first), in order, and answers with their stat data,
// or with the first failure (its errno code, message and file number). The
// main thread meanwhile reads, inflates and converts the next blobs, so a
// large checkout's JavaScript and the kernel's file creation overlap.
import { mkdirSync } from "node:fs";
import { type Batch, type BatchAnswer, STAT_FIELDS, packStat, writeNow } from "./write-now.ts";

declare const self: Worker;

/** Write a batch's files in order; stop at the first that fails. */
function writeBatch(b: Batch): BatchAnswer {
  for (const d of b.dirs === "" ? [] : b.dirs.split("\0")) {
    try {
      mkdirSync(b.dir + d);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return { id: b.id, failure: { at: -1, dir: d, code: e.code, syscall: e.syscall, message: e.message } };
    }
  }
  const names = b.names === "" ? [] : b.names.split("\0");
  const stats = new Float64Array(names.length * STAT_FIELDS);
  let start = 0;
  for (let i = 0; i < names.length; i++) {
    const end = b.ends[i] as number;
    try {
      packStat(stats, i, writeNow(b.dir + (names[i] as string), b.kinds[i] as number, new Uint8Array(b.data, start, end - start)));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return { id: b.id, failure: { at: i, code: e.code, syscall: e.syscall, message: e.message } };
    }
    start = end;
  }
  return { id: b.id, stats };
}

self.onmessage = (event: MessageEvent<Batch>) => {
  const answer = writeBatch(event.data);
  self.postMessage(answer, answer.stats ? [answer.stats.buffer as ArrayBuffer] : []);
};
