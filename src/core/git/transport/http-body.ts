// One HTTP request under the transfer limits: a connect timeout until the
// response starts, a low-speed limit while its body arrives (as git's
// http.lowSpeedLimit/lowSpeedTime), a byte cap on the body, and any
// Content-Encoding decoded here (never transparently by fetch) so that the cap
// counts decoded bytes. Whichever limit fires, the error names it.
import { reportActivity } from "../../base/activity.ts";
import { CancelledError, GrexError, packOpError, runtimeWords } from "../../base/errors.ts";
import { limitError, showBytes, type TransferLimits } from "../objects/limits.ts";
import { displayUrl } from "./url.ts";
import { isConnectionDrop } from "./git-errors.ts";

/** The body of a response, chunk by chunk; null at its end. */
export interface BodyReader {
  read(): Promise<Uint8Array | null>;
  /** The server showed it is alive while preparing (a side-band keep-alive): the low-speed clock restarts. */
  keepalive(): void;
  /** Bytes read so far (decoded). */
  readonly bytes: number;
  close(): Promise<void>;
}

/** A keep-alive may hold the low-speed clock back only this long in total (the server preparing a very large pack). */
const PREPARE_ALLOWANCE_MS = 10 * 60 * 1000;

export interface Transfer {
  res: Response;
  body: BodyReader;
}

type TransferOpts = { url: string; limits: TransferLimits; signal: AbortSignal; cap: number; capKey: "maxRefsBytes" | "maxPackBytes"; what: string };

/**
 * The limits' clock of one transfer: the connect timeout until the response
 * starts, then the low-speed window while its body arrives. Whichever fires
 * (or the caller's cancel) aborts the request and fails what `guard` waits on.
 */
class TransferClock {
  readonly ctrl = new AbortController();
  fired: GrexError | null = null;
  /** Decoded body bytes so far. */
  bytes = 0;
  private failWaiter: ((err: GrexError) => void) | null = null;
  private readonly started = Date.now();
  private phase: "connect" | "body" = "connect";
  private windowStart = this.started;
  private windowBytes = 0;
  private prepared = 0;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly onAbort = () => this.fire(new CancelledError());

  constructor(
    private readonly opts: TransferOpts,
    private readonly shown: string,
  ) {
    const { limits } = opts;
  const lowSpeedMs = limits.lowSpeedTime * 1000;
  const tickMs = Math.max(50, Math.min(1000, lowSpeedMs > 0 ? lowSpeedMs / 4 : 1000, (limits.connectTimeout * 1000) / 4));
    opts.signal.addEventListener("abort", this.onAbort, { once: true });
    this.timer = setInterval(() => this.tick(), tickMs);
  }

  fire(err: GrexError): void {
    if (this.fired) return;
    this.fired = err;
    this.failWaiter?.(err);
    this.ctrl.abort(err);
  }

  stop(): void {
    clearInterval(this.timer);
    this.opts.signal.removeEventListener("abort", this.onAbort);
  }

  /** The response has started: from now on the low-speed limit applies. */
  bodyStarts(): void {
    this.phase = "body";
    this.windowStart = Date.now();
  }

  /** The server showed it is alive while preparing: the low-speed window restarts (within the allowance). */
  keepalive(): void {
    const now = Date.now();
    if (this.prepared === 0) this.prepared = now;
    if (now - this.prepared > PREPARE_ALLOWANCE_MS) return;
    this.windowStart = now;
    this.windowBytes = this.bytes;
  }

  /** Wait for `p`, or fail at once when a limit fires. */
  guard<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.fired) return reject(this.fired);
      this.failWaiter = reject;
      p.then(resolve, (err) => reject(this.fired ?? err)).finally(() => {
        this.failWaiter = null;
      });
    });
  }

  private tick(): void {
    const { limits, what } = this.opts;
    const now = Date.now();
    if (this.phase === "connect") {
      if (limits.connectTimeout > 0 && now - this.started >= limits.connectTimeout * 1000) {
        this.fire(limitError("connectTimeout", `${this.shown} did not answer within ${limits.connectTimeout} s`, limits.connectTimeout));
      }
      return;
    }
    const lowSpeedMs = limits.lowSpeedTime * 1000;
    if (lowSpeedMs <= 0 || now - this.windowStart < lowSpeedMs) return;
    const rate = ((this.bytes - this.windowBytes) * 1000) / (now - this.windowStart);
    if (rate < limits.lowSpeedLimit) {
      const speed = rate < 10 ? `${rate.toFixed(1)} bytes` : showBytes(Math.floor(rate));
      this.fire(
        limitError(
          "lowSpeedLimit",
          `the ${what} from ${this.shown} arrived at ${speed}/s for ${limits.lowSpeedTime} s, under the low-speed limit of ${showBytes(limits.lowSpeedLimit)}/s`,
          limits.lowSpeedLimit,
        ),
      );
      return;
    }
    this.windowStart = now;
    this.windowBytes = this.bytes;
  }
}

/**
 * Send `init` to `href` and return the response with a reader for its body,
 * capped at `cap` bytes (`capKey` names the limit; `what` the body in messages).
 */
export async function openTransfer(href: string, init: RequestInit, opts: TransferOpts): Promise<Transfer> {
  const shown = displayUrl(opts.url);
  if (opts.signal.aborted) throw new CancelledError();
  const clock = new TransferClock(opts, shown);
  let res: Response;
  try {
    // decompress: false: an encoded body reaches us as sent, and is decoded below under the cap.
    res = await clock.guard(fetch(href, { ...init, signal: clock.ctrl.signal, decompress: false } as RequestInit));
  } catch (err) {
    clock.stop();
    throw err;
  }
  clock.bodyStarts();
  let stream = res.body;
  const encoding = (res.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  if (stream && encoding !== "identity" && encoding !== "") {
    const format = encoding === "gzip" || encoding === "x-gzip" ? "gzip" : encoding === "deflate" ? "deflate" : null;
    if (!format) {
      clock.stop();
      await res.body?.cancel().catch(() => undefined);
      throw packOpError(`${shown} sent its ${opts.what} with Content-Encoding ${encoding}, which grex does not decode; ask for it without compression or use an ssh URL.`, { url: shown });
    }
    stream = stream.pipeThrough(new DecompressionStream(format));
  }
  return { res, body: bodyReader(stream?.getReader() ?? null, clock, opts, shown) };
}

/** What the body reader needs of a stream's reader. */
interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
  cancel(): Promise<void>;
}

/** The body, chunk by chunk, under the byte cap and the clock; a read error or a limit becomes one sentence. */
function bodyReader(reader: ChunkReader | null, clock: TransferClock, opts: TransferOpts, shown: string): BodyReader {
  let done = false;
  const finish = async () => {
    clock.stop();
    if (!done) {
      done = true;
      await reader?.cancel().catch(() => undefined);
      clock.ctrl.abort();
    }
  };
  return {
    get bytes() {
      return clock.bytes;
    },
    async read() {
      if (!reader || done) return null;
      let r: { done: true; value?: undefined } | { done: false; value: Uint8Array };
      try {
        r = (await clock.guard(reader.read())) as typeof r;
      } catch (err) {
        await finish();
        if (clock.fired) throw clock.fired;
        if (isConnectionDrop(err)) {
          throw packOpError(`the server at ${shown} closed the connection after ${showBytes(clock.bytes)} of the ${opts.what}; retry, and if it keeps happening check the server or use an ssh URL.`, { url: shown, bytes: clock.bytes });
        }
        const msg = runtimeWords(err instanceof Error ? err.message : String(err));
        throw packOpError(`the ${opts.what} from ${shown} could not be read (${msg}); check the server, or retry.`, { url: shown });
      }
      if (r.done) {
        done = true;
        clock.stop();
        return null;
      }
      clock.bytes += r.value.length;
      if (opts.what === "pack") reportActivity({ phase: "receiving", bytes: clock.bytes });
      if (clock.bytes > opts.cap) {
        const err = limitError(opts.capKey, `the ${opts.what} from ${shown} is larger than ${showBytes(opts.cap)}`, opts.cap);
        await finish();
        throw err;
      }
      return r.value;
    },
    keepalive: () => clock.keepalive(),
    async close() {
      // A body read to its last packet usually has only its end left: reading it keeps the connection for the next request.
      for (let drained = 0; !done && !clock.fired && drained < 64 * 1024; ) {
        if (!reader) break;
        const r: { done: boolean; value?: Uint8Array } = await clock.guard<{ done: boolean; value?: Uint8Array }>(reader.read()).catch(() => ({ done: true }));
        if (r.done) {
          done = true;
          break;
        }
        drained += r.value?.length ?? 0;
      }
      await finish();
    },
  };
}
