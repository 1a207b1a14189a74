// The one way grex runs a child process (exec actions, scripted hooks, the
// `exec` verb, the system-git fallback):
// - its own process group, so cancelling stops grandchildren too;
// - on abort SIGTERM to the group, then SIGKILL after a grace period;
// - output captured up to a bound per stream, keeping the tail (the end is
//   what explains a failure), optionally also handed over line by line;
// - no hang when a grandchild keeps the pipes open after the child exited:
//   once the child is gone the pipes get a short moment to drain, then grex
//   stops reading.
import { type ChildProcess, spawn } from "node:child_process";
import { CancelledError } from "./errors.ts";

export const KILL_GRACE_MS = 2000;
/** How long the pipes may stay open after the child exited (a grandchild holding them). */
const DRAIN_MS = 200;

export interface ProcOptions {
  argv: readonly string[];
  cwd?: string;
  env: Record<string, string | undefined>;
  signal: AbortSignal;
  /** Bytes kept per stream (the last ones). */
  maxBytes: number;
  /** Each complete line of stdout / stderr as it arrives (live output). */
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** Windows: hand the command line over as is (cmd.exe quoting). */
  verbatim?: boolean;
  /** SIGTERM → SIGKILL grace on abort. */
  graceMs?: number;
  /**
   * Run in a new session and process group (default), so cancelling reaches
   * grandchildren. False keeps the terminal: ssh under the system git may
   * need it to ask for a passphrase; cancelling then stops the child only.
   */
  ownGroup?: boolean;
}

export interface ProcResult {
  /** Exit code; null when killed by a signal or never started. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The program could not be started (ENOENT: not found). */
  spawnError: NodeJS.ErrnoException | null;
  stdout: string;
  stderr: string;
  /** Bytes dropped from the front of each stream to stay within maxBytes. */
  dropped: { stdout: number; stderr: number };
}

/** Keeps the last `max` bytes of a stream, and splits lines for a listener. */
class Capture {
  private chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;
  private partial = "";
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly max: number,
    private readonly onLine: ((line: string) => void) | undefined,
  ) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - (this.chunks[0] as Buffer).length >= this.max) {
      const first = this.chunks.shift() as Buffer;
      this.size -= first.length;
      this.dropped += first.length;
    }
    if (this.onLine) {
      const lines = (this.partial + this.decoder.decode(chunk, { stream: true })).split("\n");
      this.partial = lines.pop() ?? "";
      for (const line of lines) this.onLine(line);
    }
  }

  /** The kept tail as text, never starting inside a UTF-8 sequence; flushes a last partial line. */
  finish(): string {
    if (this.onLine && this.partial !== "") this.onLine(this.partial);
    this.partial = "";
    let buf = Buffer.concat(this.chunks);
    if (buf.length > this.max) {
      this.dropped += buf.length - this.max;
      buf = buf.subarray(buf.length - this.max);
    }
    let start = 0;
    while (start < buf.length && start < 4 && ((buf[start] as number) & 0xc0) === 0x80) start++;
    return buf.subarray(start).toString("utf8");
  }
}

function killGroup(child: ChildProcess, sig: NodeJS.Signals, group: boolean): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, sig);
    else child.kill(sig);
  } catch {
    // Already gone.
  }
}

function definedEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Run `argv` to completion; rejects with CancelledError once `signal` aborts (after stopping the group). */
export function runProcess(opts: ProcOptions): Promise<ProcResult> {
  const windows = process.platform === "win32";
  const group = !windows && opts.ownGroup !== false;
  const { signal } = opts;
  if (signal.aborted) return Promise.reject(new CancelledError());
  return new Promise((resolvePromise, reject) => {
    const out = new Capture(opts.maxBytes, opts.onStdoutLine);
    const err = new Capture(opts.maxBytes, opts.onStderrLine);
    const child = spawn(opts.argv[0] as string, opts.argv.slice(1), {
      cwd: opts.cwd,
      env: definedEnv(opts.env),
      stdio: ["ignore", "pipe", "pipe"],
      detached: group, // own session and process group
      windowsHide: true,
      windowsVerbatimArguments: opts.verbatim === true,
    });
    child.stdout?.on("data", (c: Buffer) => out.push(c));
    child.stderr?.on("data", (c: Buffer) => err.push(c));
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    const timers: Array<ReturnType<typeof setTimeout>> = [];
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      for (const t of timers) clearTimeout(t);
      fn();
    };
    const done = () =>
      settle(() => {
        if (signal.aborted) return reject(new CancelledError());
        const stdout = out.finish();
        const stderr = err.finish();
        resolvePromise({
          code: exit?.code ?? null,
          signal: exit?.signal ?? null,
          spawnError: null,
          stdout,
          stderr,
          dropped: { stdout: out.dropped, stderr: err.dropped },
        });
      });
    const onAbort = () => {
      killGroup(child, "SIGTERM", group);
      const kill = setTimeout(() => killGroup(child, "SIGKILL", group), opts.graceMs ?? KILL_GRACE_MS);
      kill.unref?.();
      if (exit) done(); // gone already; do not wait for pipes a grandchild may hold
    };
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", (e: NodeJS.ErrnoException) =>
      settle(() =>
        resolvePromise({ code: null, signal: null, spawnError: e, stdout: "", stderr: err.finish(), dropped: { stdout: 0, stderr: 0 } }),
      ),
    );
    child.once("exit", (code, sig) => {
      exit = { code, signal: sig };
      if (signal.aborted) return done();
      // Normally the pipes close right after; a grandchild holding them must not keep us waiting.
      const drain = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        done();
      }, DRAIN_MS);
      drain.unref?.();
      timers.push(drain);
    });
    child.once("close", () => {
      if (exit) done();
    });
  });
}
