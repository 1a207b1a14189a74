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
// The exchange is synchronous (the dirty check's hash site is): the process's
// stdin and stdout are two FIFOs in a private temp directory, read and written
// with blocking calls; its stderr goes to a file, whose last line names a
// failure. A file is converted only when the whole answer arrived with
// `status=success`; anything else (error, abort, a process that died or spoke
// out of protocol) returns null and the caller keeps the content as stored or
// fails a required driver, as git does. After `abort` the process gets no more
// requests of that kind; after a broken exchange it is stopped, and the next
// file starts a new one (as git).
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAX_DATA = 65516; // git's LARGE_PACKET_DATA_MAX
const FLUSH = Buffer.from("0000");

export type FilterKind = "smudge" | "clean";

/** One running `filter.<driver>.process` command (started on the first request). */
export class FilterProcess {
  private w = -1;
  private r = -1;
  private child: ReturnType<typeof Bun.spawn> | null = null;
  private errFile = "";
  private tmp = "";
  private caps = new Set<string>();
  /** The last failure's reason, for a required driver's message. */
  lastError = "";

  constructor(
    private readonly command: string,
    private readonly cwd: string,
  ) {}

  /** `data` converted by the process, or null when it did not convert it (lastError says why). */
  run(kind: FilterKind, path: string, data: Uint8Array): Uint8Array | null {
    try {
      if (this.child === null) this.start();
      if (!this.caps.has(kind)) {
        this.lastError = `the filter process does not offer ${kind}`;
        return null;
      }
      this.writePkt(`command=${kind}\n`);
      this.writePkt(`pathname=${path}\n`);
      this.flush();
      for (let i = 0; i < data.length; i += MAX_DATA) this.writePkt(data.subarray(i, i + MAX_DATA));
      this.flush();
      let status = this.statusOf(this.readList());
      if (status !== "success") return this.refused(kind, status);
      const chunks: Uint8Array[] = [];
      for (let p = this.readPkt(); p !== null; p = this.readPkt()) chunks.push(p);
      status = this.statusOf(this.readList(), status);
      if (status !== "success") return this.refused(kind, status);
      return Buffer.concat(chunks);
    } catch (err) {
      this.lastError = (err as Error).message || "the filter process failed";
      this.stop();
      return null;
    }
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
  }

  private refused(kind: FilterKind, status: string): null {
    if (status === "abort") this.caps.delete(kind);
    this.lastError = `the filter process answered status=${status}`;
    return null;
  }

  private statusOf(list: string[], current = ""): string {
    let s = current;
    for (const l of list) if (l.startsWith("status=")) s = l.slice(7);
    return s;
  }

  private start(): void {
    this.tmp = fs.mkdtempSync(join(tmpdir(), "grex-filter-"));
    const fin = join(this.tmp, "in");
    const fout = join(this.tmp, "out");
    this.errFile = join(this.tmp, "err");
    const mk = Bun.spawnSync(["mkfifo", "-m", "600", fin, fout]);
    if (mk.exitCode !== 0) throw new Error("could not make the pipes to the filter process");
    // The shell opens stdin then stdout, in the order we open their other ends below.
    this.child = Bun.spawn(["sh", "-c", `exec 2>"$3" <"$1" >"$2"; ${this.command}`, "sh", fin, fout, this.errFile], { cwd: this.cwd, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    this.w = fs.openSync(fin, "w");
    this.r = fs.openSync(fout, "r");
    this.writePkt("git-filter-client\n");
    this.writePkt("version=2\n");
    this.flush();
    const hello = this.readList();
    if (hello[0] !== "git-filter-server" || !hello.includes("version=2")) throw new Error(`the filter process did not answer the handshake${this.stderrTail()}`);
    this.writePkt("capability=clean\n");
    this.writePkt("capability=smudge\n");
    this.flush();
    for (const l of this.readList()) if (l.startsWith("capability=")) this.caps.add(l.slice(11));
  }

  private stderrTail(): string {
    try {
      const last = fs.readFileSync(this.errFile, "utf8").trim().split("\n").pop() ?? "";
      return last ? `: ${last}` : "";
    } catch {
      return "";
    }
  }

  private writePkt(payload: string | Uint8Array): void {
    const body = typeof payload === "string" ? Buffer.from(payload) : payload;
    if (body.length === 0) return; // an empty packet is never sent
    const head = Buffer.from((body.length + 4).toString(16).padStart(4, "0"));
    this.writeAll(head);
    this.writeAll(body);
  }

  private flush(): void {
    this.writeAll(FLUSH);
  }

  private writeAll(b: Uint8Array): void {
    try {
      for (let off = 0; off < b.length; ) off += fs.writeSync(this.w, b, off, b.length - off);
    } catch {
      throw new Error(`the filter process stopped reading${this.stderrTail()}`);
    }
  }

  private readExact(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let off = 0; off < n; ) {
      const got = fs.readSync(this.r, b, off, n - off, null);
      if (got === 0) throw new Error(`the filter process exited mid-answer${this.stderrTail()}`);
      off += got;
    }
    return b;
  }

  /** One packet's payload, or null for a flush packet. */
  private readPkt(): Buffer | null {
    const head = this.readExact(4).toString("latin1");
    if (!/^[0-9a-f]{4}$/.test(head)) throw new Error("the filter process spoke out of protocol (a bad packet length)");
    const len = Number.parseInt(head, 16);
    if (len === 0) return null;
    if (len < 4 || len > MAX_DATA + 4) throw new Error("the filter process spoke out of protocol (a bad packet length)");
    return this.readExact(len - 4);
  }

  /** Text packets up to a flush, each without its newline. */
  private readList(): string[] {
    const out: string[] = [];
    for (let p = this.readPkt(); p !== null; p = this.readPkt()) out.push(p.toString("utf8").replace(/\n$/, ""));
    return out;
  }
}
