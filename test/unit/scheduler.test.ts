import { describe, expect, test } from "bun:test";
import { availableParallelism } from "node:os";
import { CancelledError, GrexError } from "../../src/core/base/errors.ts";
import { mapBounded, PermitScheduler, resolveParallel } from "../../src/core/locks/scheduler.ts";

const never = new AbortController().signal;
const tick = () => new Promise<void>((r) => setTimeout(r, 0));

function deferred() {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return { gate, open };
}

/** Run `n` tasks through the scheduler at once; returns the highest concurrency seen. */
async function maxConcurrency(s: PermitScheduler, n: number): Promise<number> {
  let active = 0;
  let max = 0;
  await Promise.all(
    Array.from({ length: n }, () =>
      s.withPermit(never, async () => {
        active++;
        max = Math.max(max, active);
        await tick();
        await tick();
        active--;
      }),
    ),
  );
  return max;
}

describe("PermitScheduler", () => {
  test("never runs more than `limit` at once, and does reach it", async () => {
    const s = new PermitScheduler(3);
    expect(s.limit).toBe(3);
    expect(await maxConcurrency(s, 20)).toBe(3);
  });

  test("limit 0 is unbounded", async () => {
    expect(await maxConcurrency(new PermitScheduler(0), 25)).toBe(25);
  });

  test("waiters are served first in, first out", async () => {
    const s = new PermitScheduler(1);
    const { gate, open } = deferred();
    const order: string[] = [];
    const first = s.withPermit(never, () => gate);
    const rest = ["a", "b", "c", "d"].map((name) => s.withPermit(never, async () => void order.push(name)));
    await tick();
    expect(order).toEqual([]);
    open();
    await Promise.all([first, ...rest]);
    expect(order).toEqual(["a", "b", "c", "d"]);
  });

  test("an aborted waiter leaves the queue, never runs, and loses no permit", async () => {
    const s = new PermitScheduler(2);
    const { gate, open } = deferred();
    const holders = [s.withPermit(never, () => gate), s.withPermit(never, () => gate)];
    const ac = new AbortController();
    const ran: string[] = [];
    const cancelled = s.withPermit(ac.signal, async () => void ran.push("cancelled"));
    const later = s.withPermit(never, async () => void ran.push("later"));
    await tick();
    ac.abort();
    await expect(cancelled).rejects.toBeInstanceOf(CancelledError);
    open();
    await Promise.all([...holders, later]);
    expect(ran).toEqual(["later"]);
    expect(await maxConcurrency(s, 10)).toBe(2);
  });

  test("an already aborted signal is refused without running", async () => {
    const s = new PermitScheduler(1);
    const ac = new AbortController();
    ac.abort();
    let ran = false;
    await expect(s.withPermit(ac.signal, async () => void (ran = true))).rejects.toBeInstanceOf(CancelledError);
    expect(ran).toBe(false);
    expect(await maxConcurrency(s, 3)).toBe(1);
  });

  test("a failing task releases its permit", async () => {
    const s = new PermitScheduler(1);
    await expect(
      s.withPermit(never, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(await s.withPermit(never, async () => "next")).toBe("next");
  });

  test("stress: random aborts and failures never leak or duplicate permits", async () => {
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const s = new PermitScheduler(3);
    let active = 0;
    let max = 0;
    const tasks: Array<Promise<unknown>> = [];
    const controllers: AbortController[] = [];
    for (let i = 0; i < 200; i++) {
      const ac = new AbortController();
      controllers.push(ac);
      const fail = rand() < 0.2;
      tasks.push(
        s
          .withPermit(ac.signal, async () => {
            active++;
            max = Math.max(max, active);
            for (let k = Math.floor(rand() * 3); k >= 0; k--) await tick();
            active--;
            if (fail) throw new Error("task failed");
          })
          .catch(() => undefined),
      );
      if (rand() < 0.3) controllers[Math.floor(rand() * controllers.length)]?.abort();
      if (rand() < 0.2) await tick();
    }
    await Promise.all(tasks);
    expect(max).toBe(3);
    expect(active).toBe(0);
    expect(await maxConcurrency(s, 12)).toBe(3);
  });

  test("rejects a negative or fractional limit", () => {
    expect(() => new PermitScheduler(-1)).toThrow(RangeError);
    expect(() => new PermitScheduler(1.5)).toThrow(RangeError);
  });
});

describe("resolveParallel", () => {
  const usage = (f: () => unknown) => {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).kind).toBe("usage");
  };

  test("flag > GREX_PARALLEL > the larger of 8 and the CPU count", () => {
    expect(resolveParallel(4, { GREX_PARALLEL: "7" })).toBe(4);
    expect(resolveParallel(0, { GREX_PARALLEL: "7" })).toBe(0);
    expect(resolveParallel(undefined, { GREX_PARALLEL: "7" })).toBe(7);
    expect(resolveParallel(undefined, { GREX_PARALLEL: "0" })).toBe(0);
    expect(resolveParallel(undefined, { GREX_PARALLEL: " 3 " })).toBe(3);
    expect(resolveParallel(undefined, {})).toBe(Math.max(8, availableParallelism()));
    expect(resolveParallel(undefined, { GREX_PARALLEL: "" })).toBe(Math.max(8, availableParallelism()));
  });

  test("invalid values are usage errors", () => {
    usage(() => resolveParallel(-1, {}));
    usage(() => resolveParallel(1.5, {}));
    usage(() => resolveParallel(Number.NaN, {}));
    usage(() => resolveParallel(undefined, { GREX_PARALLEL: "abc" }));
    usage(() => resolveParallel(undefined, { GREX_PARALLEL: "-2" }));
    usage(() => resolveParallel(undefined, { GREX_PARALLEL: "2.5" }));
    usage(() => resolveParallel(undefined, { GREX_PARALLEL: "1e3" }));
  });
});

describe("mapBounded", () => {
  test("keeps input order and respects its cap", async () => {
    let active = 0;
    let max = 0;
    const items = Array.from({ length: 30 }, (_, i) => i);
    const out = await mapBounded(items, 4, never, async (n, i) => {
      active++;
      max = Math.max(max, active);
      for (let k = n % 3; k >= 0; k--) await tick();
      active--;
      return n * 10 + (i === n ? 0 : 1);
    });
    expect(out).toEqual(items.map((n) => n * 10));
    expect(max).toBe(4);
  });

  test("0 is unbounded; an empty list is fine", async () => {
    let active = 0;
    let max = 0;
    await mapBounded(Array.from({ length: 15 }), 0, never, async () => {
      active++;
      max = Math.max(max, active);
      await tick();
      active--;
    });
    expect(max).toBe(15);
    expect(await mapBounded([], 3, never, async () => 1)).toEqual([]);
  });

  test("composes with a shared scheduler: the lower cap wins", async () => {
    const s = new PermitScheduler(2);
    let active = 0;
    let max = 0;
    await mapBounded(Array.from({ length: 12 }), 5, never, () =>
      s.withPermit(never, async () => {
        active++;
        max = Math.max(max, active);
        await tick();
        active--;
      }),
    );
    expect(max).toBe(2);
  });

  test("after a failure nothing new starts, running calls finish, the first error is thrown", async () => {
    const started: number[] = [];
    let running = 0;
    const p = mapBounded([0, 1, 2, 3, 4, 5, 6, 7], 2, never, async (n) => {
      started.push(n);
      running++;
      await tick();
      running--;
      if (n === 1) throw new Error("item 1 failed");
      return n;
    });
    await expect(p).rejects.toThrow("item 1 failed");
    expect(running).toBe(0);
    expect(started.length).toBeLessThan(8);
  });

  test("abort stops starting items and throws CancelledError", async () => {
    const ac = new AbortController();
    const started: number[] = [];
    const p = mapBounded([0, 1, 2, 3, 4, 5], 1, ac.signal, async (n) => {
      started.push(n);
      if (n === 1) ac.abort();
      await tick();
      return n;
    });
    await expect(p).rejects.toBeInstanceOf(CancelledError);
    expect(started).toEqual([0, 1]);
  });
});

describe("capScheduler (per-call cap over a shared scheduler)", () => {
  test("at most `limit` of one call's tasks run, while another call still uses the shared permits", async () => {
    const { capScheduler, PermitScheduler } = await import("../../src/core/locks/scheduler.ts");
    const shared = new PermitScheduler(4);
    const capped = capScheduler(shared, 2);
    const signal = new AbortController().signal;
    let inCapped = 0;
    let maxCapped = 0;
    let total = 0;
    let maxTotal = 0;
    const task = (counted: boolean) => async () => {
      total++;
      maxTotal = Math.max(maxTotal, total);
      if (counted) maxCapped = Math.max(maxCapped, ++inCapped);
      await Bun.sleep(5);
      if (counted) inCapped--;
      total--;
    };
    await Promise.all([
      ...Array.from({ length: 6 }, () => capped.withPermit(signal, task(true))),
      ...Array.from({ length: 6 }, () => shared.withPermit(signal, task(false))),
    ]);
    expect(maxCapped).toBe(2);
    expect(maxTotal).toBe(4);
    expect(capScheduler(shared, 0)).toBe(shared);
  });
});
