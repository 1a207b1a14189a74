// Resident dirty answers for a process that stays (`grex serve`): each pack a
// report asks about gets one recursive file-system watch over its work tree
// (its `.git` directory included), and the last scan's answer is kept with the
// watch's generation — bumped by every event in the tree. A report is answered
// from that answer only when
//   1. the watch is up, and a sync file written into the pack's `.git` (a
//      "cookie", as git's own fsmonitor daemon and watchman do) has come back
//      as an event, so every change made before the question has been seen;
//   2. no event arrived since that scan began (a same-size edit with its mtime
//      put back is still a write and an attribute change, a rename two events),
//      and no directory appeared in the NEW_DIR_SETTLE_MS before it began (a
//      new directory is watched a moment after its own event);
//   3. the work tree and `.git` are the same directories (inodes) as when the
//      watch began (a pack removed and cloned again at the same path);
//   4. HEAD is the commit it was, and what the scan read outside the pack —
//      the user's git config files, the global excludes and attributes files
//      — has the same stamp (size, mtime, ctime, inode) and the process the
//      same environment.
// Anything else is a scan, whose answer is then kept. A pack whose watch
// cannot be set up (its git dir lies outside its work tree, the watch limit,
// a read-only `.git`), whose watch failed or overflowed, or whose file system
// does not deliver events (the cookie never comes back) is scanned on every
// report; `report()` says which and why (doctor shows it), and a failed watch
// is tried again after RETRY_MS. A cookie that is only slow (a loaded machine)
// makes that one report scan and keeps the watch.
import { type FSWatcher, lstatSync, rmSync, statSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { userConfigFiles, xdgConfigPath } from "../refs/config.ts";
import type { DirtyOracle, DirtyQuery, WatchReport } from "./dirty-oracle.ts";
import { excludesFilePath } from "./ignore-rules.ts";
import { gitPath } from "../layout/layout.ts";

/** How long a report waits for its cookie before it scans instead (the watch stays). */
export const COOKIE_TIMEOUT_MS = 1000;
/** How long a cookie may take to come back at all before the pack's file system counts as silent (the watch is dropped). */
export const COOKIE_LOST_MS = 10_000;
/** How long after a watch failed it is set up again. */
export const RETRY_MS = 30_000;
/**
 * How long after a directory appeared no answer is kept: a recursive watch
 * adds a new directory's watch a moment after the directory's own event, and
 * a change inside it in that moment is never reported.
 */
export const NEW_DIR_SETTLE_MS = 2000;
const COOKIE = "grex-serve-cookie-";
/** A timer this much late means the event loop was busy, not that the file system was silent. */
const LOOP_LATENESS_MS = 100;

interface PackWatch {
  dir: string;
  gitdir: string;
  watcher: FSWatcher | null;
  /** Why this pack is scanned on every report, or null while the watch is up. */
  reason: string | null;
  retryAt: number;
  /** Inodes of the work tree and of `.git` when the watch began. */
  inodes: [number, number];
  gen: number;
  /** When a directory last appeared in the tree (Date.now()), or 0. */
  dirBornAt: number;
  waiting: Map<string, () => void>;
  kept: { gen: number; key: string; dirty: boolean } | null;
  /** Settles once the watch is up (or known not to be). */
  ready: Promise<void>;
}

export interface ResidentCounters {
  /** Reports answered from a kept answer. */
  kept: number;
  /** Scans run (no answer kept, something changed, or no watch). */
  scans: number;
}

let seq = 0;

export interface ResidentOptions {
  /** How long after a failed watch it is set up again (default RETRY_MS). */
  retryMs?: number;
  /** How long an unanswered cookie takes to count as a silent file system (default COOKIE_LOST_MS). */
  cookieLostMs?: number;
  /** How a work tree is watched (default: node:fs `watch`, recursive); the tests stand in a file system that reports nothing. */
  watch?: (dir: string, onEvent: (event: string, name: string | null) => void) => FSWatcher;
}

const watchRecursive = (dir: string, onEvent: (event: string, name: string | null) => void): FSWatcher => watch(dir, { recursive: true }, onEvent);

export class ResidentStatus implements DirtyOracle {
  private readonly packs = new Map<string, PackWatch>();
  readonly counters: ResidentCounters = { kept: 0, scans: 0 };
  private readonly retryMs: number;
  private readonly cookieLostMs: number;
  private readonly watch: NonNullable<ResidentOptions["watch"]>;

  constructor(o: ResidentOptions = {}) {
    this.retryMs = o.retryMs ?? RETRY_MS;
    this.cookieLostMs = o.cookieLostMs ?? COOKIE_LOST_MS;
    this.watch = o.watch ?? watchRecursive;
  }

  async dirty(q: DirtyQuery, scan: () => Promise<boolean>): Promise<boolean> {
    const w = await this.watchOf(q);
    if (w.reason !== null || !(await this.settle(w))) {
      this.counters.scans++;
      return scan();
    }
    const key = externalKey(q);
    // Shortly after a directory appeared, a change inside it may have gone unreported: scan, keep nothing.
    const settled = Date.now() - w.dirBornAt >= NEW_DIR_SETTLE_MS;
    if (settled && w.kept !== null && w.kept.gen === w.gen && w.kept.key === key) {
      this.counters.kept++;
      return w.kept.dirty;
    }
    const gen = w.gen;
    this.counters.scans++;
    const dirty = await scan();
    w.kept = w.reason === null && settled ? { gen, key, dirty } : null;
    return dirty;
  }

  /** Each watched pack: resident, or scanned on every report and why. */
  report(): WatchReport[] {
    return [...this.packs.values()].map((w) => ({ dir: w.dir, resident: w.reason === null, reason: w.reason }));
  }

  watchReport(): Promise<WatchReport[]> {
    return Promise.resolve(this.report());
  }

  /**
   * Lose the pack's watch as an overflow of the kernel's event queue would
   * (the watcher's error path): for the differential test, which must show
   * that a lost watch makes grex scan.
   */
  induceOverflow(dir: string): boolean {
    const w = this.packs.get(dir);
    if (!w?.watcher) return false;
    w.watcher.emit("error", Object.assign(new Error("the event queue overflowed"), { code: "EOVERFLOW" }));
    return true;
  }

  close(): void {
    for (const w of this.packs.values()) this.lose(w, "the server is stopping", Number.POSITIVE_INFINITY);
    this.packs.clear();
  }

  private async watchOf(q: DirtyQuery): Promise<PackWatch> {
    let w = this.packs.get(q.dir);
    const inodes = inodesOf(q.dir);
    if (w !== undefined && w.gitdir === q.gitdir) {
      const moved = inodes === null || inodes[0] !== w.inodes[0] || inodes[1] !== w.inodes[1];
      if ((w.reason === null || Date.now() < w.retryAt) && !moved) {
        await w.ready;
        return w;
      }
    }
    if (w !== undefined) this.lose(w, "replaced", 0);
    const fresh: PackWatch = { dir: q.dir, gitdir: q.gitdir, watcher: null, reason: null, retryAt: 0, inodes: inodes ?? [0, 0], gen: 0, dirBornAt: 0, waiting: new Map(), kept: null, ready: Promise.resolve() };
    this.packs.set(q.dir, fresh);
    fresh.ready = this.start(fresh);
    await fresh.ready;
    return fresh;
  }

  private async start(w: PackWatch): Promise<void> {
    if (w.gitdir !== join(w.dir, ".git") || w.inodes[1] === 0) {
      w.reason = "its git directory is not a .git directory inside its work tree, so one watch cannot see both";
      w.retryAt = Number.POSITIVE_INFINITY;
      return;
    }
    const pack = w;
    try {
      pack.watcher = this.watch(pack.dir, (event, name) => this.onEvent(pack, event, name));
    } catch (e) {
      this.lose(pack, `its work tree could not be watched (${e instanceof Error ? e.message : String(e)})`, Date.now() + this.retryMs);
      return;
    }
    pack.watcher.on("error", (e: Error) => this.lose(pack, `its watch failed (${e.message})`, Date.now() + this.retryMs));
    // The first cookie proves the file system delivers events at all.
    if (!(await this.settle(pack))) return;
  }

  private onEvent(w: PackWatch, event: string, name: string | null): void {
    const file = name === null ? null : String(name);
    const at = file === null ? -1 : file.indexOf(COOKIE);
    if (file !== null && at >= 0 && (file.slice(0, at) === ".git/" || file.slice(0, at) === ".git\\")) {
      const done = w.waiting.get(file.slice(at));
      if (done) done();
      return; // grex's own sync files change nothing a report sees
    }
    w.gen++;
    if (event === "rename" && (file === null || isDirectory(join(w.dir, file)))) w.dirBornAt = Date.now();
  }

  /**
   * Write a cookie into `.git` and wait for its event: every earlier change
   * has then been delivered. Not heard within COOKIE_TIMEOUT_MS of time the
   * event loop was free to hear it: false (the report scans and keeps
   * nothing), while the wait goes on; never heard within cookieLostMs: the
   * file system does not deliver events, and the watch is dropped.
   */
  private settle(w: PackWatch): Promise<boolean> {
    if (w.reason !== null) return Promise.resolve(false);
    const name = `${COOKIE}${process.pid}-${++seq}`;
    const file = gitPath(w.gitdir, name);
    return new Promise<boolean>((resolve) => {
      let answered = false;
      const answer = (ok: boolean) => {
        if (answered) return;
        answered = true;
        resolve(ok && w.reason === null);
      };
      const done = (heard: boolean) => {
        clearTimeout(timer);
        clearTimeout(lost);
        w.waiting.delete(name);
        rmSync(file, { force: true });
        if (!heard) this.lose(w, `its file system did not report a change within ${this.cookieLostMs} ms (it may not deliver change events)`, Date.now() + this.retryMs);
        answer(heard);
      };
      // A timer that fires late means a long scan held the loop, not that the
      // file system is silent: a short wait more, so a queued event is read first.
      let due = Date.now() + COOKIE_TIMEOUT_MS;
      const check = () => {
        if (Date.now() - due <= LOOP_LATENESS_MS) return answer(false);
        due = Date.now() + LOOP_LATENESS_MS;
        timer = setTimeout(check, LOOP_LATENESS_MS);
      };
      let timer = setTimeout(check, COOKIE_TIMEOUT_MS);
      const lost = setTimeout(() => done(false), this.cookieLostMs);
      w.waiting.set(name, () => done(true));
      try {
        writeFileSync(file, "");
      } catch (e) {
        clearTimeout(timer);
        clearTimeout(lost);
        w.waiting.delete(name);
        this.lose(w, `grex could not write its sync file into ${w.gitdir} (${e instanceof Error ? e.message : String(e)})`, Date.now() + this.retryMs);
        answer(false);
      }
    });
  }

  private lose(w: PackWatch, reason: string, retryAt: number): void {
    w.reason = reason;
    w.retryAt = retryAt;
    w.kept = null;
    const watcher = w.watcher;
    w.watcher = null;
    try {
      watcher?.close();
    } catch {
      // already closed
    }
    for (const done of [...w.waiting.values()]) done();
  }
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function inodesOf(dir: string): [number, number] | null {
  try {
    const gitdir = lstatSync(join(dir, ".git"));
    return [statSync(dir).ino, gitdir.isDirectory() ? gitdir.ino : 0];
  } catch {
    return null;
  }
}

const ENV_KEYS = ["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_COUNT"];

/** What the scan read outside the pack, as stamps: a change there means scanning again. */
function externalKey(q: DirtyQuery): string {
  const files = [...userConfigFiles().map((f) => f.path), "/etc/gitattributes", xdgConfigPath("attributes"), excludesFilePath(q.gitdir, q.dir)].filter((f): f is string => f !== null);
  const stamps = files.map((f) => {
    try {
      const s = statSync(f);
      return `${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}`;
    } catch {
      return "-";
    }
  });
  return JSON.stringify([q.head, stamps, ENV_KEYS.map((k) => process.env[k] ?? null)]);
}
