// git's long-running filter process (gitattributes(5) "Long Running Filter
// Process", git's long-running-process protocol, version 2): one process per
// `filter.<driver>.process` command, started on the first file that needs it
// and kept for every later one, spoken to in pkt-lines:
//
//   handshake  → git-filter-client, version=2, flush
//              ← git-filter-server, version=2, flush
//              → capability=clean, capability=smudge, flush   (no `delay`: declined)
//              ← the capabilities it has, flush
//   per file   → command=smudge|clean, pathname=<path>, flush, content, flush
//              ← status=success, flush, content, flush, [status=…], flush
//                (or status=error|abort, flush, and no content)
//   shutdown   stdin closed; the process exits.
//
// The protocol is written once, as generators that yield the reads and writes
// they need (`Io`), and driven two ways: `run` with blocking calls (the dirty
// check's hash site is synchronous) and `runAsync` with the thread pool's
// (a checkout, which keeps reading blobs and writing files meanwhile; its
// requests are queued, one at a time, as the protocol needs). The process's
// stdin and stdout are two FIFOs in a private temp directory, so both drivers
// use plain file descriptors; its stderr goes to a file there, whose last line
// names a failure. A file is converted only when the whole answer arrived with
// `status=success`; anything else (error, abort, a process that died or spoke
// out of protocol) returns null and the caller keeps the content as stored or
// fails a required driver, as git does. After `abort` the process gets no more
// requests of that kind; after a broken exchange it is stopped, and the next
// file starts a new one (as git).
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const MAX_DATA = 65516; // git's LARGE_PACKET_DATA_MAX
const FLUSH = Buffer.from("0000");
const NOTHING = Buffer.alloc(0);
const openAsync = promisify(fs.open);
const readAsync = promisify(fs.read);
const writeAsync = promisify(fs.write);

export type FilterKind = "smudge" | "clean";
/** What the protocol asks of the pipes: write these bytes, or read exactly this many. */
type Io = { write: Uint8Array } | { read: number };
type Step<T> = Generator<Io, T, Buffer>;

/** One running `filter.<driver>.process` command (started on the first request). */
export class FilterProcess {
  private w = -1;
  private r = -1;
  private child: ReturnType<typeof Bun.spawn> | null = null;
  private errFile = "";
  private tmp = "";
  private caps = new Set<string>();
  private ready = false;
  private retired = false;
  /** The async requests, one after another. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The last failure's reason, for a required driver's message. */
  lastError = "";

  constructor(
    private readonly command: string,
    private readonly cwd: string,
  ) {}

  /** `data` converted by the process, or null when it did not convert it (lastError says why); blocks until answered. */
  run(kind: FilterKind, path: string, data: Uint8Array): Uint8Array | null {
    if (this.retired) return null;
    try {
      if (this.child === null) {
        const fifos = this.spawn();
        this.w = fs.openSync(fifos.in, "w");
        this.r = fs.openSync(fifos.out, "r");
      }
      return this.finish(kind, this.driveSync(this.request(kind, path, data)));
    } catch (err) {
      return this.broken(err);
    }
  }

  /** As `run`, without blocking: the pipes are read and written on the thread pool, one request at a time. */
  runAsync(kind: FilterKind, path: string, data: Uint8Array): Promise<Uint8Array | null> {
    const next = this.queue.then(async () => {
      if (this.retired) return null;
      try {
        if (this.child === null) {
          const fifos = this.spawn();
          this.w = await openAsync(fifos.in, "w");
          this.r = await openAsync(fifos.out, "r");
        }
        return this.finish(kind, await this.driveAsync(this.request(kind, path, data)));
      } catch (err) {
        return this.broken(err);
      }
    });
    this.queue = next;
    return next;
  }

  /** Stop it for good: every later request returns null at once (a required driver has failed the checkout). */
  retire(): void {
    this.retired = true;
    this.stop();
  }

  /** Close its stdin and let it exit. */
  stop(): void {
    for (const fd of [this.w, this.r]) if (fd >= 0) fs.closeSync(fd);
    this.w = this.r = -1;
    if (this.child !== null) this.child.unref();
    this.child = null;
    if (this.tmp !== "") fs.rmSync(this.tmp, { recursive: true, force: true });
    this.tmp = "";
    this.caps.clear();
    this.ready = false;
  }

  private finish(kind: FilterKind, answer: { status: string; out: Uint8Array | null }): Uint8Array | null {
    if (answer.out !== null) return answer.out;
    if (answer.status === "abort") this.caps.delete(kind);
    this.lastError = answer.status === "" ? `the filter process does not offer ${kind}` : `the filter process answered status=${answer.status}`;
    return null;
  }

  private broken(err: unknown): null {
    this.lastError = (err as Error).message || "the filter process failed";
    this.stop();
    return null;
  }

  /** Start the command with its stdin and stdout on two FIFOs (opened by the caller: stdin's first, as the shell does). */
  private spawn(): { in: string; out: string } {
    this.tmp = fs.mkdtempSync(join(tmpdir(), "grex-filter-"));
    const fifos = { in: join(this.tmp, "in"), out: join(this.tmp, "out") };
    this.errFile = join(this.tmp, "err");
    const mk = Bun.spawnSync(["mkfifo", "-m", "600", fifos.in, fifos.out]);
    if (mk.exitCode !== 0) throw new Error("could not make the pipes to the filter process");
    this.child = Bun.spawn(["sh", "-c", `exec 2>"$3" <"$1" >"$2"; ${this.command}`, "sh", fifos.in, fifos.out, this.errFile], {
      cwd: this.cwd,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    return fifos;
  }

  private driveSync<T>(g: Step<T>): T {
    for (let r = g.next(NOTHING); ; ) {
      if (r.done) return r.value;
      const io = r.value;
      if ("write" in io) {
        this.writeSync(io.write);
        r = g.next(NOTHING);
      } else r = g.next(this.readSync(io.read));
    }
  }

  private async driveAsync<T>(g: Step<T>): Promise<T> {
    for (let r = g.next(NOTHING); ; ) {
      if (r.done) return r.value;
      const io = r.value;
      if ("write" in io) {
        try {
          for (let off = 0; off < io.write.length; ) off += (await writeAsync(this.w, io.write, off, io.write.length - off, null)).bytesWritten;
        } catch {
          throw new Error(`the filter process stopped reading${this.stderrTail()}`);
        }
        r = g.next(NOTHING);
      } else {
        const b = Buffer.alloc(io.read);
        for (let off = 0; off < io.read; ) {
          const { bytesRead } = await readAsync(this.r, b, off, io.read - off, null);
          if (bytesRead === 0) throw new Error(`the filter process exited mid-answer${this.stderrTail()}`);
          off += bytesRead;
        }
        r = g.next(b);
      }
    }
  }

  private writeSync(b: Uint8Array): void {
    try {
      for (let off = 0; off < b.length; ) off += fs.writeSync(this.w, b, off, b.length - off);
    } catch {
      throw new Error(`the filter process stopped reading${this.stderrTail()}`);
    }
  }

  private readSync(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let off = 0; off < n; ) {
      const got = fs.readSync(this.r, b, off, n - off, null);
      if (got === 0) throw new Error(`the filter process exited mid-answer${this.stderrTail()}`);
      off += got;
    }
    return b;
  }

  private stderrTail(): string {
    try {
      const last = fs.readFileSync(this.errFile, "utf8").trim().split("\n").pop() ?? "";
      return last ? `: ${last}` : "";
    } catch {
      return "";
    }
  }

  // The protocol: generators yielding the I/O they need.

  /** One file: the handshake first when the process is new; status "" when it lacks the capability. */
  private *request(kind: FilterKind, path: string, data: Uint8Array): Step<{ status: string; out: Uint8Array | null }> {
    if (!this.ready) yield* this.handshake();
    if (!this.caps.has(kind)) return { status: "", out: null };
    yield pkt(`command=${kind}\n`);
    yield pkt(`pathname=${path}\n`);
    yield { write: FLUSH };
    for (let i = 0; i < data.length; i += MAX_DATA) yield pkt(data.subarray(i, i + MAX_DATA));
    yield { write: FLUSH };
    let status = statusOf(yield* this.readList(), "");
    if (status !== "success") return { status, out: null };
    const chunks: Buffer[] = [];
    for (let p = yield* this.readPkt(); p !== null; p = yield* this.readPkt()) chunks.push(p);
    status = statusOf(yield* this.readList(), status); // a status after the content overrides
    return status === "success" ? { status, out: Buffer.concat(chunks) } : { status, out: null };
  }

  private *handshake(): Step<void> {
    yield pkt("git-filter-client\n");
    yield pkt("version=2\n");
    yield { write: FLUSH };
    const hello = yield* this.readList();
    if (hello[0] !== "git-filter-server" || !hello.includes("version=2")) throw new Error(`the filter process did not answer the handshake${this.stderrTail()}`);
    yield pkt("capability=clean\n");
    yield pkt("capability=smudge\n");
    yield { write: FLUSH };
    for (const l of yield* this.readList()) if (l.startsWith("capability=")) this.caps.add(l.slice(11));
    this.ready = true;
  }

  /** One packet's payload, or null for a flush packet. */
  private *readPkt(): Step<Buffer | null> {
    const head = (yield { read: 4 }).toString("latin1");
    const len = /^[0-9a-f]{4}$/.test(head) ? Number.parseInt(head, 16) : -1;
    if (len === 0) return null;
    if (len < 5 || len > MAX_DATA + 4) throw new Error("the filter process spoke out of protocol (a bad packet length)");
    return yield { read: len - 4 };
  }

  /** Text packets up to a flush, each without its newline. */
  private *readList(): Step<string[]> {
    const out: string[] = [];
    for (let p = yield* this.readPkt(); p !== null; p = yield* this.readPkt()) out.push(p.toString("utf8").replace(/\n$/, ""));
    return out;
  }
}

/** A data packet (an empty one is never sent: it would read as a flush). */
function pkt(payload: string | Uint8Array): Io {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  return { write: Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body]) };
}

function statusOf(list: string[], current: string): string {
  let s = current;
  for (const l of list) if (l.startsWith("status=")) s = l.slice(7);
  return s;
}
