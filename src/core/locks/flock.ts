// flock(2) through bun:ffi, loaded on first use (never on the startup path),
// and what a lock file says about its holder (pid, start time, purpose) for
// `grex doctor` and stale-lock checks. The lock rules themselves are in locks.ts.
import { fstatSync, readFileSync, statSync } from "node:fs";
import { errnoCode, lockError } from "../base/errors.ts";

export const LOCK_SH = 1;
export const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
export const EINTR = 4;

interface Libc {
  flock(fd: number, op: number): number;
  errno(): number;
  ewouldblock: number;
}

let libc: Libc | undefined;

/** Whether `fd` is still the file at `path` (doctor may unlink a lock file between open and flock). */
export function sameFile(fd: number, path: string): boolean {
  try {
    const a = fstatSync(fd);
    const b = statSync(path);
    return a.ino === b.ino && a.dev === b.dev;
  } catch {
    return false;
  }
}

export function loadLibc(): Libc {
  if (libc) return libc;
  if (process.platform === "win32") {
    throw lockError("grex locking needs flock(2), which Windows does not have; run grex under WSL.");
  }
  const ffi = require("bun:ffi") as typeof import("bun:ffi");
  const mac = process.platform === "darwin";
  const errnoSymbol = mac || process.platform.endsWith("bsd") ? "__error" : "__errno_location";
  const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
  const candidates = mac ? ["libc.dylib", "/usr/lib/libSystem.B.dylib"] : ["libc.so.6", `libc.musl-${arch}.so.1`, "libc.so.7", "libc.so"];
  let lastErr: unknown;
  for (const name of candidates) {
    try {
      const lib = ffi.dlopen(name, {
        flock: { args: [ffi.FFIType.i32, ffi.FFIType.i32], returns: ffi.FFIType.i32 },
        [errnoSymbol]: { args: [], returns: ffi.FFIType.ptr },
      });
      const errnoPtr = lib.symbols[errnoSymbol];
      if (!errnoPtr) continue;
      libc = {
        flock: (fd, op) => lib.symbols.flock(fd, op),
        // errno is thread-local and read right after the failing call on the same thread.
        errno: () => {
          const p = errnoPtr();
          return p === null ? 0 : ffi.read.i32(p, 0);
        },
        ewouldblock: mac || process.platform.endsWith("bsd") ? 35 : 11,
      };
      return libc;
    } catch (err) {
      lastErr = err;
    }
  }
  const why = lastErr instanceof Error ? lastErr.message : String(lastErr);
  throw lockError(`Could not load the C library for flock(2) (${why.replace(/\.$/, "")}); grex cannot lock on this system.`);
}

/** One LOCK_NB attempt on `fd`: true = locked, false = someone else holds it. */
export function flockNb(fd: number, path: string, op = LOCK_EX): boolean {
  const c = loadLibc();
  for (;;) {
    if (c.flock(fd, op | LOCK_NB) === 0) return true;
    const e = c.errno();
    if (e === c.ewouldblock) return false;
    if (e === EINTR) continue;
    throw lockError(`Could not lock ${path} (flock errno ${e}); check that the file system supports locks and that grex can write there.`);
  }
}

// ---------------------------------------------------------------------------
// Holder diagnostics

let ownStartTime: string | null | undefined;

/** Kernel start time of `pid` (clock ticks since boot) where /proc exists, else null. */
function startTimeOf(pid: number | "self"): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses; count fields after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return rest[19] ?? null; // field 22
  } catch {
    return null;
  }
}

export function selfStartTime(): string | null {
  if (ownStartTime === undefined) ownStartTime = startTimeOf("self");
  return ownStartTime;
}

export interface Holder {
  pid: number | null;
  startTime: string | null;
  purpose: string | null;
}

function parseHolder(text: string): Holder {
  try {
    const o: unknown = JSON.parse(text);
    if (o && typeof o === "object") {
      const r = o as Record<string, unknown>;
      return {
        pid: typeof r.pid === "number" && Number.isInteger(r.pid) && r.pid > 0 ? r.pid : null,
        startTime: typeof r.start === "string" ? r.start : null,
        purpose: typeof r.purpose === "string" ? r.purpose : null,
      };
    }
  } catch {
    // empty (released) or half-written: no holder known
  }
  return { pid: null, startTime: null, purpose: null };
}

export function readHolder(path: string): Holder {
  try {
    return parseHolder(readFileSync(path, "utf8"));
  } catch {
    return { pid: null, startTime: null, purpose: null };
  }
}

/** Whether the process that wrote a lock file still runs (a recycled pid has another start time). */
export function holderAlive(h: Holder): boolean {
  if (h.pid === null) return false;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if (errnoCode(err) !== "EPERM") return false; // EPERM: alive, owned by someone else
  }
  if (h.startTime === null) return true;
  const now = startTimeOf(h.pid);
  return now === null || now === h.startTime;
}


/** Drop a flock early (closing the descriptor drops it too); a no-op before libc was ever loaded. */
export function unlockFd(fd: number): void {
  libc?.flock(fd, LOCK_UN);
}
