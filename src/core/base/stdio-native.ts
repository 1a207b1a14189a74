// stdout/stderr/stdin through Bun's native file I/O. In a compiled binary the
// first touch of `process.stdout` or `process.stdin` builds Node's stream
// machinery and costs about 10 ms, more than the rest of `grex --version`;
// these writers never touch it.
//
// Guarantees: every write is delivered whole and in call order (one chunk in
// flight at a time, later writes batched behind it); a writer waits on a slow
// reader instead of dropping data (`flush()` resolves once everything written
// so far has been handed to the OS); once the reader is gone (EPIPE and other
// write errors) later writes are dropped quietly and the error is reported
// once to whoever subscribed with `onError`.
import type { BunFile } from "bun";

export class NativeWriter {
  private pending: string[] = [];
  private draining: Promise<void> | null = null;
  private failure: unknown = null;
  private readonly listeners: Array<(err: unknown) => void> = [];

  constructor(private readonly target: () => BunFile) {}

  /** Queue `text`; it reaches the file descriptor whole, after everything written before it. */
  write(text: string): void {
    if (this.failure !== null || text === "") return;
    this.pending.push(text);
    this.draining ??= this.drain();
  }

  /** Resolves once every write so far has been handed to the OS (or the writer failed). */
  flush(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /** The error that stopped this writer (EPIPE: the reader went away), or null. */
  get error(): unknown {
    return this.failure;
  }

  /** `listener` is called once, with the first write error (subscribing twice is a no-op); later writes are dropped. */
  onError(listener: (err: unknown) => void): void {
    if (this.failure !== null) listener(this.failure);
    else if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const chunk = this.pending.length === 1 ? (this.pending[0] as string) : this.pending.join("");
        this.pending = [];
        await Bun.write(this.target(), chunk);
      }
    } catch (err) {
      this.failure = err;
      this.pending = [];
      for (const l of this.listeners.splice(0)) l(err);
    } finally {
      this.draining = null;
    }
  }
}

export const stdout = new NativeWriter(() => Bun.stdout);
export const stderr = new NativeWriter(() => Bun.stderr);

/** Whether file descriptor 1 / 2 is a terminal, without building process.stdout. */
export const stdoutIsTTY = (): boolean => isatty(1);
export const stderrIsTTY = (): boolean => isatty(2);

// node:tty costs ~4 ms to load in a compiled binary: only paths that ask about a terminal pay for it.
function isatty(fd: number): boolean {
  const tty = require("node:tty") as typeof import("node:tty");
  return tty.isatty(fd);
}

/** stdin as a byte stream, read natively. */
export const stdinStream = (): ReadableStream<Uint8Array> => Bun.stdin.stream();
