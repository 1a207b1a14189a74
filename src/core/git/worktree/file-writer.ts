// A large first checkout's file creation on a second thread: the main thread
// reads, inflates and converts blobs (JavaScript), the writer thread
// (file-writer-worker.ts) creates the directories and files (the kernel's
// work), and the two overlap. While a task workspace holds the thread, a new
// linked worktree's registration files go through it as well. Files go in
// batches (a few hundred, or 1 MiB of bytes, gathered in one buffer that is
// handed over, not copied again), at most a few batches in flight, so memory
// stays bounded whatever the tree's size. One thread serves every checkout of
// the process at once; it ends when the last one finishes. Writing files in
// two threads at once was measured no faster (ext4 serialises most of the
// work, and the main thread needs the other core), so there is one writer.
import { sep } from "node:path";
import type { Batch, BatchAnswer, StatData } from "./write-now.ts";
import { unpackStat, writeNow } from "./write-now.ts";

/** Below this many files a checkout writes them itself: starting the thread (~20 ms) would cost more than it saves. */
export const WRITER_THREAD_MIN_FILES = 2000;
const BATCH_FILES = 256;
const BATCH_BYTES = 1 << 20;
const IN_FLIGHT = 4;
/** A checkout's first staging buffer: a task workspace's packs (a few dozen small files each) rarely outgrow it. */
const STAGING_START = 16 * 1024;

/**
 * The worker's module. From source it is this file's neighbour; the compiled
 * binary embeds it as a second entry point (scripts/compile.ts), named by its
 * path under src/, which is what a Worker is given there.
 */
function workerSpecifier(): string {
  return import.meta.url.includes("$bunfs") ? "./core/git/worktree/file-writer-worker.ts" : new URL("./file-writer-worker.ts", import.meta.url).href;
}

interface Thread {
  worker: Worker;
  users: number;
  waiting: Map<number, (answer: BatchAnswer) => void>;
  /** Why the thread cannot write (it failed to start, or died): every batch, waiting or new, fails with it. */
  broken: string | null;
}

let thread: Thread | null = null;
let nextBatch = 0;

function startThread(): Thread {
  const t: Thread = { worker: new Worker(workerSpecifier()), users: 0, waiting: new Map(), broken: null };
  t.worker.onmessage = (event: MessageEvent<BatchAnswer>) => {
    const done = t.waiting.get(event.data.id);
    t.waiting.delete(event.data.id);
    done?.(event.data);
  };
  // A thread that cannot start or dies fails every batch it holds (never a silent hang).
  const fail = (why: string) => {
    t.broken ??= `the file-writer thread failed: ${why}`;
    for (const [id, done] of t.waiting) done({ id, failure: { at: -1, message: t.broken } });
    t.waiting.clear();
    if (thread === t) thread = null; // the next checkout starts a new one
  };
  t.worker.onerror = (event: ErrorEvent) => fail(event.message);
  t.worker.addEventListener("close", () => fail("it exited"));
  return t;
}

/** The running thread (started if none), one more user counted. */
function useThread(): Thread {
  thread ??= startThread();
  thread.users++;
  return thread;
}

/** One user fewer; the last one ends the thread. */
function letGo(t: Thread): void {
  if (--t.users > 0) return;
  if (thread === t) thread = null;
  t.broken ??= "it was stopped"; // its close event, once terminated, has no batch left to fail
  t.worker.terminate();
}

/**
 * Keep the writer thread for a run of many checkouts (a task workspace's
 * packs, each a few dozen files): while held, every first checkout hands its
 * files to it whatever its size, so one pack's files are created while the
 * next pack's blobs are read. Returns the release (call it once, at the end).
 */
export function holdWriterThread(): () => void {
  const t = useThread();
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    letGo(t);
  };
}

/** Whether a first checkout of `files` files creates them through the thread: a large one, or any while the thread is held. */
export function writesThroughThread(files: number): boolean {
  return files >= WRITER_THREAD_MIN_FILES || (thread !== null && thread.broken === null);
}

interface Pending {
  names: string[];
  kinds: number[];
  ends: number[];
  used: number;
  onStat: Array<(st: StatData) => void>;
}

/** One checkout's use of the writer thread: `add` files in order, then `finish`; `close` always. */
export class FileWriter {
  private readonly dir: string;
  private readonly thread: Thread;
  private batch: Pending | null = null;
  /**
   * Where a batch's bytes are gathered, grown as needed up to BATCH_BYTES (a
   * small checkout's batch stays small). It is handed to the thread as it is,
   * not copied; the next batch gathers into a new one of the same size.
   */
  private staging: Uint8Array | null = null;
  private stagingSize = STAGING_START;
  private readonly inFlight: Array<Promise<void>> = [];
  private closed = false;
  /** Directories for the next batch to make before its files (makeDirs). */
  private dirs: string[] = [];

  /** `dir`: the directory the names are under; "" when they are absolute paths. */
  constructor(dir: string) {
    this.dir = dir === "" || dir.endsWith(sep) ? dir : `${dir}${sep}`;
    this.thread = useThread();
  }

  /**
   * Queue the file `rel` (`kind` from write-now.ts); `onStat` gets its stat
   * data once it is written. Returns a promise only when the caller must wait
   * (too many batches in flight). A file larger than a batch is written here at once.
   */
  add(rel: string, kind: number, bytes: Uint8Array, onStat: (st: StatData) => void): Promise<void> | undefined {
    if (bytes.length > BATCH_BYTES) {
      onStat(writeNow(this.dir + rel, kind, bytes));
      return undefined;
    }
    let wait: Promise<void> | undefined;
    if (this.batch !== null && this.batch.used + bytes.length > BATCH_BYTES) wait = this.send();
    const b = (this.batch ??= { names: [], kinds: [], ends: [], used: 0, onStat: [] });
    let staging = (this.staging ??= Buffer.allocUnsafeSlow(this.stagingSize));
    if (b.used + bytes.length > staging.length) {
      this.stagingSize = Math.min(BATCH_BYTES, Math.max(2 * staging.length, b.used + bytes.length));
      const grown = Buffer.allocUnsafeSlow(this.stagingSize);
      grown.set(staging.subarray(0, b.used));
      this.staging = staging = grown;
    }
    staging.set(bytes, b.used);
    b.used += bytes.length;
    b.names.push(rel);
    b.kinds.push(kind);
    b.ends.push(b.used);
    b.onStat.push(onStat);
    // (A batch just begun holds one file: when the last one was sent above, this one is not full.)
    return b.names.length >= BATCH_FILES ? this.send() : wait;
  }

  /** Have the thread make these directories (under the checkout's, parents first) before any file queued after them. */
  makeDirs(dirs: readonly string[]): void {
    this.dirs.push(...dirs);
  }

  /** Every queued file written (their `onStat` called), or the first failure thrown as the fs call's error. */
  async finish(): Promise<void> {
    if (this.batch !== null || this.dirs.length > 0) await this.send();
    const results = await Promise.allSettled(this.inFlight.splice(0));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Let go of the thread (it ends when no checkout uses it). Waits for batches still being written, so nothing writes after. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.inFlight.splice(0));
    letGo(this.thread);
  }

  /** Hand the batch to the thread; a promise to wait for when too many are in flight. */
  private send(): Promise<void> | undefined {
    const b = this.batch ?? { names: [], kinds: [], ends: [], used: 0, onStat: [] }; // none: directories alone
    this.batch = null;
    const id = nextBatch++;
    // The staging buffer itself goes (allocUnsafeSlow's own memory: nothing else lives in it); a next batch gets a new one.
    const staging = this.staging ?? new Uint8Array(0);
    this.staging = null;
    const data = staging.byteOffset === 0 && staging.byteLength === staging.buffer.byteLength ? (staging.buffer as ArrayBuffer) : staging.slice(0, b.used).buffer;
    const kinds = Uint8Array.from(b.kinds);
    const ends = Uint32Array.from(b.ends);
    const msg: Batch = { id, dir: this.dir, dirs: this.dirs.join("\0"), names: b.names.join("\0"), kinds, ends, data };
    this.dirs = [];
    const broken = this.thread.broken;
    const answered =
      broken !== null ? Promise.resolve<BatchAnswer>({ id, failure: { at: -1, message: broken } }) : new Promise<BatchAnswer>((resolve) => this.thread.waiting.set(id, resolve));
    if (broken === null) this.thread.worker.postMessage(msg, [data, kinds.buffer, ends.buffer]);
    const written = answered.then((a) => {
      if (a.failure) {
        const f = a.failure;
        const path = f.dir !== undefined ? this.dir + f.dir : f.at >= 0 ? this.dir + (b.names[f.at] as string) : undefined;
        throw Object.assign(new Error(f.message), { code: f.code, syscall: f.syscall, path });
      }
      const stats = a.stats as Float64Array;
      for (let i = 0; i < b.onStat.length; i++) (b.onStat[i] as (st: StatData) => void)(unpackStat(stats, i));
    });
    written.catch(() => {}); // awaited later (back pressure or `finish`): not an unhandled rejection meanwhile
    this.inFlight.push(written);
    // Back pressure: the oldest batch is written before more are made; its failure ends the checkout here.
    return this.inFlight.length >= IN_FLIGHT ? this.inFlight.shift() : undefined;
  }
}
