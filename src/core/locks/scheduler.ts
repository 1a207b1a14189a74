// Bounded parallelism shared by every call in a process (SPEC §7: the
// scheduler permit is level 2 of the lock order). Waits are FIFO and
// cancellable; a released permit goes straight to the next waiter, so a
// permit is never lost and never double-counted.
import { CancelledError, throwIfAborted, usageError } from "../base/errors.ts";
import type * as Locks from "./locks.ts";

// The lock-order check lives with the locks (flock, node:fs), which load on the
// first permit rather than with the scheduler: `grex serve` builds a scheduler
// before its first reply and may never take a permit.
const atLevel: typeof Locks.atLevel = (level, fn, what, mode) => (require("./locks.ts") as typeof Locks).atLevel(level, fn, what, mode);

export interface Scheduler {
  /** Maximum concurrent permits; 0 = unbounded. */
  readonly limit: number;
  /** Run `fn` while holding one permit; waiting for the permit is cancellable through `signal`. */
  withPermit<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T>;
}

/** FIFO counting semaphore; `limit` 0 = unbounded. */
class Permits {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Resolves once a permit is ours; rejects with CancelledError (holding nothing) if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(new CancelledError());
    if (this.limit === 0 || (this.active < this.limit && this.waiters.length === 0)) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i < 0) return; // already granted: the caller releases it
        this.waiters.splice(i, 1);
        reject(new CancelledError());
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next(); // hand over: `active` stays the same
    else this.active--;
  }
}

export class PermitScheduler implements Scheduler {
  readonly limit: number;
  private readonly permits: Permits;

  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`scheduler limit must be a whole number >= 0, got ${limit}`);
    this.limit = limit;
    this.permits = new Permits(limit);
  }

  withPermit<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    // Checked before waiting, so an inversion throws instead of deadlocking.
    return atLevel("permit", async () => {
      await this.permits.acquire(signal);
      try {
        throwIfAborted(signal); // aborted between grant and resume
        return await fn();
      } finally {
        this.permits.release();
      }
    });
  }
}

/**
 * A per-call cap on top of a shared scheduler (MCP's `parallel` argument): at
 * most `limit` of this call's tasks hold shared permits at once. The local
 * wait happens before the shared permit is taken, so the lock order holds.
 */
export function capScheduler(shared: Scheduler, limit: number | undefined): Scheduler {
  if (limit === undefined || limit === 0) return shared;
  const local = new Permits(limit);
  return {
    limit: shared.limit === 0 ? limit : Math.min(limit, shared.limit),
    async withPermit<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
      await local.acquire(signal);
      try {
        return await shared.withPermit(signal, fn);
      } finally {
        local.release();
      }
    },
  };
}

const WHOLE = /^\d+$/;

/**
 * The default when neither the flag nor GREX_PARALLEL says: at least 8. A
 * pack's git work mostly waits on the network or the disk, not the CPU:
 * measured on 2 CPUs over loopback smart HTTP, 100 packs cold-cloned in 1.72 s
 * at 8 against 2.26 s at 2 (the CPU count), and no-op synced in 0.37 s against
 * 0.68 s; plain paths were as fast at 8 as at 2 (docs/benchmarks.md).
 */
export const MIN_DEFAULT_PARALLEL = 8;

/** `--parallel` flag > GREX_PARALLEL > the larger of 8 and the CPU count. 0 = unbounded. An empty GREX_PARALLEL counts as unset. */
export function resolveParallel(flag: number | undefined, env: Record<string, string | undefined>): number {
  if (flag !== undefined) {
    if (!Number.isSafeInteger(flag) || flag < 0) {
      throw usageError(`--parallel must be a whole number >= 0 (0 = unbounded), got '${flag}'.`, { field: "parallel" });
    }
    return flag;
  }
  const raw = env.GREX_PARALLEL?.trim();
  if (raw !== undefined && raw !== "") {
    const n = Number(raw);
    if (!WHOLE.test(raw) || !Number.isSafeInteger(n)) {
      throw usageError(`GREX_PARALLEL must be a whole number >= 0 (0 = unbounded), got '${raw}'; fix or unset it.`, {
        field: "GREX_PARALLEL",
      });
    }
    return n;
  }
  // Bun's navigator.hardwareConcurrency is os.availableParallelism() (CPU affinity included) without loading node:os (~0.5 ms).
  return Math.max(MIN_DEFAULT_PARALLEL, navigator.hardwareConcurrency);
}

/**
 * Map with at most `limit` calls of `fn` in flight (0 = unbounded), on top of
 * any shared scheduler `fn` itself uses. Results keep input order. On the first
 * failure (or when `signal` aborts) no further items start; the calls already
 * running are awaited — never left running unobserved — then the first error
 * (or CancelledError) is thrown.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`mapBounded limit must be a whole number >= 0, got ${limit}`);
  throwIfAborted(signal);
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < items.length) {
      if (signal.aborted) {
        failure = { err: new CancelledError() };
        return;
      }
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  const workers = limit === 0 ? items.length : Math.min(limit, items.length);
  await Promise.all(Array.from({ length: workers }, worker));
  if (failure !== null) throw (failure as { err: unknown }).err;
  return results;
}
