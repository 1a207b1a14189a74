// A crashed lock holder (SIGKILL, no cleanup) must never block anyone, and the
// lock file it leaves behind is reported and removable by `grex doctor`.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  inspectLocks,
  packLockPath,
  removeStaleLocks,
  tryAcquireWorkspaceLock,
  withPackLock,
  workspaceLockPath,
} from "../../src/core/locks/locks.ts";
import { runCli } from "../../src/cli/run.ts";
import { makeEvent, parseManifest } from "../../src/core/workspace/manifest.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";

const HOLDER = join(import.meta.dir, "..", "helpers", "lock-holder.ts");
const never = new AbortController().signal;

let root: string;
let ws: Workspace;
const procs: Array<ReturnType<typeof Bun.spawn>> = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "grex-locks-crash-"));
  ws = workspaceAt(root);
});

afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  rmSync(root, { recursive: true, force: true });
});

async function spawnHolder(kind: string, arg?: string) {
  const proc = Bun.spawn([process.execPath, HOLDER, root, kind, ...(arg === undefined ? [] : [arg])], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, HOME: root },
  });
  procs.push(proc);
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("held\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`lock holder exited early: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return proc;
}

async function sigkill(proc: ReturnType<typeof Bun.spawn>) {
  proc.kill("SIGKILL");
  expect(await proc.exited).not.toBe(0);
}

test("a SIGKILLed workspace-lock holder leaves a stale file that blocks nobody and doctor can remove", async () => {
  const holder = await spawnHolder("workspace", "sync");
  const path = workspaceLockPath(ws);

  // While it lives: held, not stale.
  const live = inspectLocks(ws).find((l) => l.path === path);
  expect(live).toMatchObject({ pid: holder.pid, purpose: "sync", held: true, stale: false });
  expect(removeStaleLocks(ws)).toEqual([]);

  await sigkill(holder);

  // The file still names the dead holder, but the kernel dropped the flock.
  const left = inspectLocks(ws).find((l) => l.path === path);
  expect(left).toMatchObject({ pid: holder.pid, purpose: "sync", held: false, stale: true });
  if (existsSync("/proc/self/stat")) expect(left?.startTime).toMatch(/^\d+$/);

  // It does not block the next acquisition...
  const lock = tryAcquireWorkspaceLock(ws, "update");
  expect(inspectLocks(ws).find((l) => l.path === path)).toMatchObject({ pid: process.pid, held: true, stale: false });
  lock.release();
});

test("removeStaleLocks deletes only the leftovers of dead holders", async () => {
  const dead = await spawnHolder("pack", join(root, "dead"));
  await spawnHolder("pack", join(root, "alive"));
  await sigkill(dead);

  const deadPath = packLockPath(ws, join(root, "dead"));
  const alivePath = packLockPath(ws, join(root, "alive"));
  expect(removeStaleLocks(ws)).toEqual([deadPath]);
  expect(existsSync(deadPath)).toBe(false);
  expect(existsSync(alivePath)).toBe(true);
  expect(inspectLocks(ws).map((l) => [l.path, l.held, l.stale])).toEqual([[alivePath, true, false]]);

  // The removed lock is recreated on demand.
  expect(await withPackLock(ws, join(root, "dead"), never, async () => "ok")).toBe("ok");
});

test("a waiter gets the lock when its holder is SIGKILLed", async () => {
  const dir = join(root, "pkg");
  const holder = await spawnHolder("pack", dir);
  let entered = false;
  const waiting = withPackLock(ws, dir, never, async () => {
    entered = true;
  });
  await Bun.sleep(50);
  expect(entered).toBe(false);
  await sigkill(holder);
  await waiting;
  expect(entered).toBe(true);
});

test.skipIf(!existsSync("/proc/self/stat"))("staleness: recycled pid, live holder record, released and foreign files", () => {
  const dir = join(ws.stateDir, "locks");
  mkdirSync(dir, { recursive: true });
  const own = readFileSync("/proc/self/stat", "utf8");
  const ownStart = own.slice(own.lastIndexOf(")") + 2).split(" ")[19];
  // Our own pid but another start time: the recorded process is gone and the pid was reused.
  writeFileSync(join(dir, "pack-recycled.lock"), JSON.stringify({ pid: process.pid, start: "1", purpose: "pack x" }));
  // Our own pid and start time, not held: the holder is alive, so not called stale.
  writeFileSync(join(dir, "pack-alive.lock"), JSON.stringify({ pid: process.pid, start: ownStart, purpose: "pack y" }));
  // Released normally: empty.
  writeFileSync(join(dir, "manifest.lock"), "");
  // Not a lock file: ignored.
  writeFileSync(join(dir, "notes.txt"), "hello");

  const byName = Object.fromEntries(inspectLocks(ws).map((l) => [l.path.slice(dir.length + 1), l]));
  expect(Object.keys(byName).sort()).toEqual(["manifest.lock", "pack-alive.lock", "pack-recycled.lock"]);
  expect(byName["pack-recycled.lock"]).toMatchObject({ pid: process.pid, startTime: "1", held: false, stale: true });
  expect(byName["pack-alive.lock"]).toMatchObject({ held: false, stale: false });
  expect(byName["manifest.lock"]).toMatchObject({ pid: null, purpose: null, held: false, stale: false });
  expect(removeStaleLocks(ws)).toEqual([join(dir, "pack-recycled.lock")]);
});

test("inspectLocks on a workspace that never locked anything", () => {
  expect(inspectLocks(ws)).toEqual([]);
  expect(removeStaleLocks(ws)).toEqual([]);
});

/** `grex <argv>` in process in the workspace; HOME points into the temp dir. */
async function grex(...argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    cwd: root,
    env: { ...process.env, HOME: root },
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    stdoutTTY: false,
    stderrTTY: false,
  });
  return { code, stdout, stderr };
}

function registerPack(id: string): void {
  const add = makeEvent("add", id, { url: `https://example.invalid/${id}.git`, path: id, type: "meta", ref: null });
  writeFileSync(ws.manifestPath, `${JSON.stringify(add)}\n`);
}

const ops = () => parseManifest(readFileSync(ws.manifestPath, "utf8"), ws.manifestPath).events.map((e) => `${e.op} ${e.id}`);

test("a live workspace-lock holder makes `grex rm` fail at once with exit 5 and the lock envelope", async () => {
  registerPack("x");
  const holder = await spawnHolder("workspace", "sync");
  // Returns while the holder is still alive: no waiting (a wait would hang until the test times out).
  const r = await grex("rm", "x", "--json");
  expect(holder.exitCode).toBeNull();
  expect(r.code).toBe(5);
  expect(r.stderr).toBe(`grex: Another grex sync (pid ${holder.pid}) is running in ${root}; wait for it to finish and try again.\n`);
  expect(JSON.parse(r.stdout)).toEqual({
    verb: "rm",
    error: { kind: "lock", code: 5, message: `Another grex sync (pid ${holder.pid}) is running in ${root}; wait for it to finish and try again.` },
  });
  expect(ops()).toEqual(["add x"]); // nothing recorded
});

test("a SIGKILLed workspace-lock holder does not block the next `grex rm`", async () => {
  registerPack("x");
  const holder = await spawnHolder("workspace", "sync");
  await sigkill(holder);
  const r = await grex("rm", "x", "--json");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ id: "x", removed: true });
  expect(ops()).toEqual(["add x", "rm x"]);
  // The lock was released again: a new holder gets it.
  tryAcquireWorkspaceLock(ws, "check").release();
});

test("a SIGKILLed manifest-lock holder does not block appends", async () => {
  registerPack("x");
  const holder = await spawnHolder("manifest");
  await sigkill(holder);
  writeFileSync(join(root, "repos.json"), JSON.stringify([{ url: "https://example.invalid/y.git", path: "y" }]));
  const ok = await grex("import", "--from-repos-json", "repos.json");
  expect(ok).toMatchObject({ code: 0, stderr: "" });
  expect(ops()).toEqual(["add x", "add y"]);
});
