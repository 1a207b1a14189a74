// The bytes of a stream kept while they are parsed: the live part
// [start, end) of a buffer that chunks are appended to. It is compacted in
// place while what is live fits in half of it and grown (at least doubled)
// otherwise, so many tiny chunks cost no copying of what came before, and the
// buffer never grows past four times the largest span kept at once.
export class ByteWindow {
  buf: Buffer;
  start = 0;
  end = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  get available(): number {
    return this.end - this.start;
  }

  append(chunk: Uint8Array): void {
    if (this.end + chunk.length > this.buf.length) {
      const live = this.end - this.start;
      if (live + chunk.length <= this.buf.length / 2) this.buf.copy(this.buf, 0, this.start, this.end);
      else {
        const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, live + chunk.length));
        this.buf.copy(bigger, 0, this.start, this.end);
        this.buf = bigger;
      }
      this.start = 0;
      this.end = live;
    }
    this.buf.set(chunk, this.end);
    this.end += chunk.length;
  }
}
