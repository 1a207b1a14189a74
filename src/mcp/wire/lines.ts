// Newline framing shared by the stdio transport and the gateway's stdio
// children: split a byte stream into lines, with a cap on one line.

/** Messages larger than this are answered with an error and skipped, never buffered whole (same cap as HTTP bodies). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/** Splits a byte stream on LF (a CR before it is dropped); a line over `max` bytes is reported once and discarded. */
export class LineSplitter {
  private parts: Uint8Array[] = [];
  private size = 0;
  private skipping = false;

  constructor(
    private readonly max: number,
    private readonly onLine: (line: Uint8Array) => void,
    private readonly onOversize: () => void,
  ) {}

  push(chunk: Uint8Array): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(LF, start);
      if (nl === -1) {
        // The rest continues on a later chunk: keep a copy, the stream may reuse its buffer.
        if (start < chunk.length) this.append(chunk.slice(start));
        return;
      }
      this.append(chunk.subarray(start, nl));
      this.lineEnd();
      start = nl + 1;
    }
  }

  /** End of input: a last line without a newline still counts. */
  end(): void {
    if (this.size > 0) this.lineEnd();
    this.skipping = false;
  }

  private append(part: Uint8Array): void {
    if (this.skipping || part.length === 0) return;
    if (this.size + part.length > this.max) {
      this.parts = [];
      this.size = 0;
      this.skipping = true;
      this.onOversize();
      return;
    }
    this.parts.push(part);
    this.size += part.length;
  }

  private lineEnd(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    let line = this.parts.length === 1 ? (this.parts[0] as Uint8Array) : concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, line.length - 1);
    this.onLine(line);
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
