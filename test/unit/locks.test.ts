import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CancelledError, GrexError } from "../../src/core/base/errors.ts";
import {
  assertWorkspaceLockHeld,
  backendLockPath,
  tryAcquireWorkspaceLock,
  withBackendLock,
  withManifestLock,
  withPackLock,
  withWorkspaceLock,
  workspaceLockPath,
} from "../../src/core/locks/locks.ts";
import { PermitScheduler } from "../../src/core/locks/scheduler.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";

const HOLDER = join(import.meta.dir, "..", "helpers", "lock-holder.ts");
const never = new AbortController().signal;

let root: string;
let ws: Workspace;
const procs: Array<ReturnType<typeof Bun.spawn>> = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "grex-locks-"));
  ws = workspaceAt(root);
});

afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  rmSync(root, { recursive: true, force: true });
});

function deferred() {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return { gate, open };
}

function startHolder(kind: string, arg?: string) {
  const proc = Bun.spawn([process.execPath, HOLDER, root, kind, ...(arg === undefined ? [] : [arg])], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, HOME: root },
  });
  procs.push(proc);
  return proc;
}

const heldSeen = new WeakMap<object, Promise<void>>();

/** Resolves when the holder prints "held"; rejects if it exits first. Memoised per process. */
function waitHeld(proc: ReturnType<typeof Bun.spawn>): Promise<void> {
  let p = heldSeen.get(proc);
  if (!p) {
    p = (async () => {
      const stdout = proc.stdout as ReadableStream<Uint8Array>;
      const reader = stdout.getReader();
      let out = "";
      while (!out.includes("held\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`lock holder exited early: ${await new Response(proc.stderr as ReadableStream).text()}`);
        out += new TextDecoder().decode(value);
      }
      reader.releaseLock();
    })();
    heldSeen.set(proc, p);
  }
  return p;
}

/** Start lock-holder.ts and wait until it holds its lock. */
async function spawnHolder(kind: string, arg?: string) {
  const proc = startHolder(kind, arg);
  await waitHeld(proc);
  return proc;
}

describe("exclusion within one process", () => {
  test("the same pack lock is never held by two tasks at once", async () => {
    const dir = join(root, "a");
    let active = 0;
    let max = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        withPackLock(ws, dir, never, async () => {
          active++;
          max = Math.max(max, active);
          await Bun.sleep(2);
          active--;
        }),
      ),
    );
    expect(max).toBe(1);
  });

  test("a waiter enters only after the holder leaves", async () => {
    const dir = join(root, "a");
    const events: string[] = [];
    const { gate, open } = deferred();
    const first = withBackendLock(ws, dir, never, async () => {
      events.push("first in");
      await gate;
      events.push("first out");
    });
    const second = withBackendLock(ws, dir, never, async () => {
      events.push("second in");
    });
    await Bun.sleep(30);
    expect(events).toEqual(["first in"]);
    open();
    await Promise.all([first, second]);
    expect(events).toEqual(["first in", "first out", "second in"]);
  });

  test("different packs do not exclude each other", async () => {
    const { gate, open } = deferred();
    // Would deadlock (test timeout) if the two locks excluded each other.
    await Promise.all([
      withPackLock(ws, join(root, "a"), never, () => gate),
      withPackLock(ws, join(root, "b"), never, async () => open()),
    ]);
  });

  test("pack and backend locks on the same directory are distinct locks", async () => {
    const dir = join(root, "a");
    const r = await withPackLock(ws, dir, never, () => withBackendLock(ws, dir, never, async () => 42));
    expect(r).toBe(42);
  });

  test("the manifest lock accepts a synchronous callback and returns its value", async () => {
    expect(await withManifestLock(ws, undefined, () => "ok")).toBe("ok");
  });

  test("a second workspace lock in the same process fails fast", () => {
    const held = tryAcquireWorkspaceLock(ws, "sync");
    try {
      expect(() => tryAcquireWorkspaceLock(ws, "update")).toThrow(GrexError);
    } finally {
      held.release();
    }
    tryAcquireWorkspaceLock(ws, "update").release();
  });

  test("the holder's pid and purpose are recorded while held and cleared on release", () => {
    const held = tryAcquireWorkspaceLock(ws, "sync");
    const info = JSON.parse(readFileSync(held.path, "utf8")) as { pid: number; purpose: string };
    expect(info.pid).toBe(process.pid);
    expect(info.purpose).toBe("sync");
    expect(held.path).toBe(workspaceLockPath(ws));
    held.release();
    held.release(); // idempotent
    expect(readFileSync(workspaceLockPath(ws), "utf8")).toBe("");
  });
});

describe("exclusion across processes", () => {
  test("a live holder makes tryAcquireWorkspaceLock fail at once with kind lock and its pid", async () => {
    const holder = await spawnHolder("workspace", "sync");
    let err: unknown;
    try {
      tryAcquireWorkspaceLock(ws, "update");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    const g = err as GrexError;
    expect(g.kind).toBe("lock");
    expect(g.exitCode).toBe(5);
    expect(g.message).toBe(`Another grex sync (pid ${holder.pid}) is running in ${root}; wait for it to finish and try again.`);
  });

  test("a pack lock held by another process is waited for, then taken once it is released", async () => {
    const dir = join(root, "pkg");
    const holder = await spawnHolder("pack", dir);
    let entered = false;
    const waiting = withPackLock(ws, dir, never, async () => {
      entered = true;
    });
    await Bun.sleep(100);
    expect(entered).toBe(false);
    holder.kill("SIGTERM");
    await holder.exited;
    await waiting;
    expect(entered).toBe(true);
  });

  test("another process waits for a lock this process holds", async () => {
    const dir = join(root, "pkg");
    let printed = false;
    let child: ReturnType<typeof Bun.spawn> | undefined;
    await withBackendLock(ws, dir, never, async () => {
      child = startHolder("backend", dir);
      void waitHeld(child).then(() => {
        printed = true;
      });
      await Bun.sleep(150);
      expect(printed).toBe(false); // it cannot take the lock while we hold it
    });
    if (!child) throw new Error("holder not started");
    await waitHeld(child); // released: now it gets the lock
    expect(readFileSync(backendLockPath(ws, dir), "utf8")).toContain(`"pid":${child.pid}`);
  });
});

describe("cancellation", () => {
  test("aborting a wait throws CancelledError and leaves the lock takeable", async () => {
    const dir = join(root, "a");
    const { gate, open } = deferred();
    const holder = withPackLock(ws, dir, never, () => gate);
    const ac = new AbortController();
    let ran = false;
    const waiter = withPackLock(ws, dir, ac.signal, async () => {
      ran = true;
    });
    await Bun.sleep(20);
    ac.abort();
    await expect(waiter).rejects.toBeInstanceOf(CancelledError);
    open();
    await holder;
    expect(ran).toBe(false);
    expect(await withPackLock(ws, dir, never, async () => "again")).toBe("again");
  });

  test("aborting a wait on a lock held by another process", async () => {
    await spawnHolder("manifest");
    const ac = new AbortController();
    const waiter = withManifestLock(ws, ac.signal, () => "never");
    setTimeout(() => ac.abort(), 30);
    await expect(waiter).rejects.toBeInstanceOf(CancelledError);
  });

  test("an already aborted signal never takes the lock", async () => {
    const ac = new AbortController();
    ac.abort();
    let ran = false;
    await expect(
      withPackLock(ws, join(root, "a"), ac.signal, async () => {
        ran = true;
      }),
    ).rejects.toBeInstanceOf(CancelledError);
    expect(ran).toBe(false);
  });
});

describe("acquisition order", () => {
  const expectViolation = async (p: Promise<unknown>) => {
    let err: unknown;
    try {
      await p;
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(GrexError);
    expect((err as Error).message).toContain("Lock order violation");
  };

  test("the documented order works end to end", async () => {
    const sched = new PermitScheduler(2);
    const ws1 = tryAcquireWorkspaceLock(ws, "sync");
    try {
      const dir = join(root, "a");
      const r = await sched.withPermit(never, () =>
        withPackLock(ws, dir, never, () => withBackendLock(ws, dir, never, () => withManifestLock(ws, never, () => "deep"))),
      );
      expect(r).toBe("deep");
      // Skipping levels is fine too.
      expect(await withPackLock(ws, dir, never, () => withManifestLock(ws, never, () => 1))).toBe(1);
    } finally {
      ws1.release();
    }
  });

  test("pack lock inside the manifest lock is refused", async () => {
    await expectViolation(withManifestLock(ws, never, () => withPackLock(ws, join(root, "a"), never, async () => 1)));
  });

  test("pack lock inside a backend lock is refused", async () => {
    await expectViolation(withBackendLock(ws, join(root, "a"), never, () => withPackLock(ws, join(root, "b"), never, async () => 1)));
  });

  test("a second pack lock inside a pack lock is refused", async () => {
    await expectViolation(withPackLock(ws, join(root, "a"), never, () => withPackLock(ws, join(root, "b"), never, async () => 1)));
  });

  test("a scheduler permit inside a pack lock is refused", async () => {
    const sched = new PermitScheduler(1);
    await expectViolation(withPackLock(ws, join(root, "a"), never, () => sched.withPermit(never, async () => 1)));
  });

  test("the workspace lock inside a pack lock is refused", async () => {
    await expectViolation(withPackLock(ws, join(root, "a"), never, async () => tryAcquireWorkspaceLock(ws, "sync")));
  });

  test("levels are per call chain: parallel siblings and later calls are unaffected", async () => {
    const { gate, open } = deferred();
    await Promise.all([
      withBackendLock(ws, join(root, "a"), never, () => gate),
      (async () => {
        await Bun.sleep(5);
        // Runs while a sibling chain holds a backend lock: still allowed.
        await withPackLock(ws, join(root, "b"), never, async () => open());
      })(),
    ]);
    await withManifestLock(ws, never, () => undefined);
    await withPackLock(ws, join(root, "c"), never, async () => undefined); // after the manifest lock was released
  });
});

describe("the workspace lock has one holder per call: the invoke path", () => {
  test("code that runs only in a mutation pass refuses to run outside the lock, and runs inside it", async () => {
    expect(() => assertWorkspaceLockHeld(ws, "grex sync")).toThrow(/runs only under the exclusive workspace lock/);
    await withWorkspaceLock(ws, "sync", "exclusive", async () => {
      assertWorkspaceLockHeld(ws, "grex sync");
      assertWorkspaceLockHeld(ws, "grex run", "shared");
    });
    await withWorkspaceLock(ws, "run", "shared", async () => {
      assertWorkspaceLockHeld(ws, "grex run", "shared");
      expect(() => assertWorkspaceLockHeld(ws, "grex sync")).toThrow(/exclusive workspace lock/);
    });
    // Another workspace's lock does not count.
    const other = mkdtempSync(join(tmpdir(), "grex-locks-other-"));
    try {
      await withWorkspaceLock(workspaceAt(other), "sync", "exclusive", async () => {
        expect(() => assertWorkspaceLockHeld(ws, "grex sync")).toThrow();
      });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test("the sync engine run outside a held lock is refused before it reads anything", async () => {
    const { runSync } = await import("../../src/core/sync/engine.ts");
    const ctx = { workspace: () => ws, scheduler: new PermitScheduler(1), env: { ...process.env }, warn() {}, debug() {} };
    const opts = { mode: "sync" as const, ids: [], only: [], filter: undefined, ref: null, force: false, failFast: false, recursive: true, dryRun: false };
    await expect(runSync(ctx, opts, never, () => {})).rejects.toThrow(/workspace lock/);
  });
});
