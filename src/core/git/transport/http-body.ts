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

/**
 * Send `init` to `href` and return the response with a reader for its body,
 * capped at `cap` bytes (`capKey` names the limit; `what` the body in messages).
 */
export async function openTransfer(
  href: string,
  init: RequestInit,
  opts: { url: string; limits: TransferLimits; signal: AbortSignal; cap: number; capKey: "maxRefsBytes" | "maxPackBytes"; what: string },
): Promise<Transfer> {
  const { limits, signal } = opts;
  const shown = displayUrl(opts.url);
  const ctrl = new AbortController();
  let fired: GrexError | null = null;
  let failWaiter: ((err: GrexError) => void) | null = null;
  const fire = (err: GrexError) => {
    if (fired) return;
    fired = err;
    failWaiter?.(err);
    ctrl.abort(err);
  };
  const onAbort = () => fire(new CancelledError());
  if (signal.aborted) throw new CancelledError();
  signal.addEventListener("abort", onAbort, { once: true });

  const started = Date.now();
  let phase: "connect" | "body" = "connect";
  let bytes = 0;
  let windowStart = started;
  let windowBytes = 0;
  let prepared = 0;
  const lowSpeedMs = limits.lowSpeedTime * 1000;
  const tickMs = Math.max(50, Math.min(1000, lowSpeedMs > 0 ? lowSpeedMs / 4 : 1000, (limits.connectTimeout * 1000) / 4));
  const timer = setInterval(() => {
    const now = Date.now();
    if (phase === "connect") {
      if (limits.connectTimeout > 0 && now - started >= limits.connectTimeout * 1000) {
        fire(limitError("connectTimeout", `${shown} did not answer within ${limits.connectTimeout} s`, limits.connectTimeout));
      }
      return;
    }
    if (lowSpeedMs <= 0 || now - windowStart < lowSpeedMs) return;
    const rate = ((bytes - windowBytes) * 1000) / (now - windowStart);
    if (rate < limits.lowSpeedLimit) {
      fire(
        limitError(
          "lowSpeedLimit",
          `the ${opts.what} from ${shown} arrived at ${rate < 10 ? `${rate.toFixed(1)} bytes` : showBytes(Math.floor(rate))}/s for ${limits.lowSpeedTime} s, under the low-speed limit of ${showBytes(limits.lowSpeedLimit)}/s`,
          limits.lowSpeedLimit,
        ),
      );
      return;
    }
    windowStart = now;
    windowBytes = bytes;
  }, tickMs);
  const stop = () => {
    clearInterval(timer);
    signal.removeEventListener("abort", onAbort);
  };
  /** Wait for `p`, or fail at once when a limit fires. */
  const guard = <T>(p: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (fired) return reject(fired);
      failWaiter = reject;
      p.then(resolve, (err) => reject(fired ?? err)).finally(() => {
        failWaiter = null;
      });
    });

  let res: Response;
  try {
    // decompress: false: an encoded body reaches us as sent, and is decoded below under the cap.
    res = await guard(fetch(href, { ...init, signal: ctrl.signal, decompress: false } as RequestInit));
  } catch (err) {
    stop();
    throw err;
  }
  phase = "body";
  windowStart = Date.now();
  let stream = res.body;
  const encoding = (res.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  if (stream && encoding !== "identity" && encoding !== "") {
    const format = encoding === "gzip" || encoding === "x-gzip" ? "gzip" : encoding === "deflate" ? "deflate" : null;
    if (!format) {
      stop();
      await res.body?.cancel().catch(() => undefined);
      throw packOpError(`${shown} sent its ${opts.what} with Content-Encoding ${encoding}, which grex does not decode; ask for it without compression or use an ssh URL.`, { url: shown });
    }
    stream = stream.pipeThrough(new DecompressionStream(format));
  }
  const reader = stream?.getReader() ?? null;
  let done = false;
  const finish = async () => {
    stop();
    if (!done) {
      done = true;
      await reader?.cancel().catch(() => undefined);
      ctrl.abort();
    }
  };
  const body: BodyReader = {
    get bytes() {
      return bytes;
    },
    async read() {
      if (!reader || done) return null;
      let r: { done: true; value?: undefined } | { done: false; value: Uint8Array };
      try {
        r = (await guard(reader.read())) as typeof r;
      } catch (err) {
        await finish();
        if (fired) throw fired;
        if (isConnectionDrop(err)) {
          throw packOpError(`the server at ${shown} closed the connection after ${showBytes(bytes)} of the ${opts.what}; retry, and if it keeps happening check the server or use an ssh URL.`, { url: shown, bytes });
        }
        const msg = runtimeWords(err instanceof Error ? err.message : String(err));
        throw packOpError(`the ${opts.what} from ${shown} could not be read (${msg}); check the server, or retry.`, { url: shown });
      }
      if (r.done) {
        done = true;
        stop();
        return null;
      }
      bytes += r.value.length;
      if (opts.what === "pack") reportActivity({ phase: "receiving", bytes });
      if (bytes > opts.cap) {
        const err = limitError(opts.capKey, `the ${opts.what} from ${shown} is larger than ${showBytes(opts.cap)}`, opts.cap);
        await finish();
        throw err;
      }
      return r.value;
    },
    keepalive() {
      const now = Date.now();
      if (prepared === 0) prepared = now;
      if (now - prepared > PREPARE_ALLOWANCE_MS) return;
      windowStart = now;
      windowBytes = bytes;
    },
    async close() {
      // A body read to its last packet usually has only its end left: reading it keeps the connection for the next request.
      for (let drained = 0; !done && !fired && drained < 64 * 1024; ) {
        if (!reader) break;
        const r: { done: boolean; value?: Uint8Array } = await guard<{ done: boolean; value?: Uint8Array }>(reader.read()).catch(() => ({ done: true }));
        if (r.done) {
          done = true;
          break;
        }
        drained += r.value?.length ?? 0;
      }
      await finish();
    },
  };
  return { res, body };
}
