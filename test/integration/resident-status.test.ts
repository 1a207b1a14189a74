// The resident dirty answers of `grex serve` (src/core/git/worktree/resident-status.ts)
// against a fresh scan, differentially: a seeded random walk of changes to a
// real clone — new, edited, deleted, renamed and chmod'ed files, same-size
// edits with the mtime put back, ignored files, new directories, commits,
// resets and branch switches by the git CLI, a pack removed and cloned again,
// and induced watch overflows — and after each one the resident answer must
// be the answer of a scan that proves every file (no status cache), and every
// 50th step git's verdict by content (and dirty whenever plain `git status
// --porcelain` says dirty). Steps with no change in between must be answered
// from the kept answer (so the test also fails if nothing is ever kept).
// GREX_FUZZ_STEPS raises the count (default 1000), GREX_FUZZ_SEED replays a
// run.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, copyFileSync, existsSync, type FSWatcher, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { EventEmitter } from "node:events";
import { join } from "node:path";
import { backendFor, workTreeGitdir } from "../../src/core/git/backend.ts";
import { readHeadSync } from "../../src/core/git/refs/refs.ts";
import type { DirtyQuery } from "../../src/core/git/worktree/dirty-oracle.ts";
import { ResidentStatus } from "../../src/core/git/worktree/resident-status.ts";
import { commit, git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const STEPS = Number(process.env.GREX_FUZZ_STEPS ?? 1000);
const SEED = Number(process.env.GREX_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let tmp: { path: string; cleanup: () => void };
let upstream: string;

beforeAll(() => {
  tmp = tempDir("grex-resident-");
  upstream = join(tmp.path, "up");
  const files: Record<string, string> = { ".gitignore": "*.log\nbuild/\n", "README.md": "readme\n" };
  for (let i = 0; i < 12; i++) files[`src/d${i % 3}/f${i}.txt`] = `file ${i}\n`;
  makeRepo(upstream, files);
  git(upstream, "checkout", "-q", "-b", "other");
  commit(upstream, { "src/d0/f0.txt": "file 0 on other\n", "src/d1/only-other.txt": "o\n", "src/d2/f2.txt": null }, "other");
  git(upstream, "checkout", "-q", "main");
});
afterAll(() => tmp.cleanup());

let clones = 0;
function cloneAt(dir: string): void {
  git(tmp.path, "clone", "-q", upstream, dir);
  git(dir, "branch", "-q", "other", "origin/other");
}

function query(dir: string, stateDir: string): DirtyQuery {
  const gitdir = workTreeGitdir(dir) as string;
  return { dir, gitdir, head: readHeadSync(dir)?.sha ?? null, url: "", stateDir, statusCache: join(stateDir, "status-cache", "p.json") };
}

/** The resident answer (the scan it runs uses a status cache, as `status` does). */
function resident(status: ResidentStatus, dir: string, stateDir: string): Promise<boolean> {
  const q = query(dir, stateDir);
  return status.dirty(q, () => backendFor(dir).isDirty(dir, { statusCache: q.statusCache, head: q.head ?? undefined, gitdir: q.gitdir }));
}

/**
 * `git status --porcelain` on a copy of the index whose file is dated 1 s
 * after the epoch: every entry is racy to git, so each is re-hashed and no
 * stat data is trusted. The index itself is left as it is.
 */
function gitContentStatus(dir: string): string {
  const copy = join(tmp.path, "index-content-copy");
  copyFileSync(join(dir, ".git", "index"), copy);
  utimesSync(copy, 1, 1);
  const p = Bun.spawnSync(["git", "status", "--porcelain"], { cwd: dir, env: { ...gitEnv(), GIT_INDEX_FILE: copy, GIT_OPTIONAL_LOCKS: "0" }, stdout: "pipe", stderr: "pipe" });
  rmSync(copy, { force: true });
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  return p.stdout.toString().trim();
}

/** A scan that proves every file. */
const fresh = (dir: string): Promise<boolean> => backendFor(dir).isDirty(dir, { gitdir: workTreeGitdir(dir) as string });

function filesOf(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    if (rel === "" && e.name === ".git") continue;
    const r = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...filesOf(dir, r));
    else if (e.isFile()) out.push(r);
  }
  return out;
}

describe(`resident status against a fresh scan (seed ${SEED}, ${STEPS} steps)`, () => {
  test("every change shows, or makes grex scan; an unchanged tree is answered from what was kept", async () => {
    const random = rng(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const dir = join(tmp.path, `pack${clones++}`);
    const stateDir = join(tmp.path, "state");
    cloneAt(dir);
    const status = new ResidentStatus({ retryMs: 0 });
    const seen: Record<string, number> = {};
    let keptOnNoop = 0;
    let overflows = 0;
    try {
      for (let step = 0; step < STEPS; step++) {
        const files = filesOf(dir);
        const file = files.length > 0 ? pick(files) : "README.md";
        const kind = pick([
          "noop", "noop", "write-new", "append", "same-size", "same-size", "rename", "delete", "chmod", "ignored", "new-dir",
          "commit", "reset", "checkout", "checkout", "overflow", "reclone",
        ] as const);
        const keptBefore = status.counters.kept;
        switch (kind) {
          case "noop":
            break;
          case "write-new":
            writeFileSync(join(dir, pick(["", "src/d0/", "src/d1/"]) + `new-${step}.txt`), `new ${step}\n`);
            break;
          case "append":
            appendFileSync(join(dir, file), "x");
            break;
          case "same-size": {
            // Same length, other bytes, and the mtime put back: only an event (or the ctime) tells.
            const path = join(dir, file);
            const st = statSync(path);
            const text = readFileSync(path);
            if (text.length === 0) break;
            text[0] = text[0] === 0x5a ? 0x59 : 0x5a;
            writeFileSync(path, text);
            utimesSync(path, st.atime, st.mtime);
            break;
          }
          case "rename":
            renameSync(join(dir, file), join(dir, `${file}.moved`));
            break;
          case "delete":
            rmSync(join(dir, file));
            break;
          case "chmod": {
            const path = join(dir, file);
            chmodSync(path, statSync(path).mode & 0o100 ? 0o644 : 0o755);
            break;
          }
          case "ignored":
            mkdirSync(join(dir, "build"), { recursive: true });
            writeFileSync(join(dir, pick(["", "build/"]) + `out-${step}.log`), "log\n");
            break;
          case "new-dir":
            mkdirSync(join(dir, `n${step}`, "deep"), { recursive: true });
            writeFileSync(join(dir, `n${step}`, "deep", "f.txt"), "deep\n");
            break;
          case "commit":
            git(dir, "add", "-A");
            git(dir, "commit", "-q", "--allow-empty", "-m", `step ${step}`);
            break;
          case "reset":
            git(dir, "reset", "-q", "--hard");
            git(dir, "clean", "-q", "-fd");
            break;
          case "checkout":
            git(dir, "checkout", "-q", "-f", pick(["main", "other"]));
            break;
          case "overflow":
            if (status.induceOverflow(dir)) {
              overflows++;
              expect(status.report().find((r) => r.dir === dir)?.reason).toContain("overflowed");
            }
            break;
          case "reclone":
            // The pack removed and cloned again at the same path: the old watch sees nothing of the new tree.
            if (random() < 0.2) {
              rmSync(dir, { recursive: true, force: true });
              cloneAt(dir);
            }
            break;
        }
        seen[kind] = (seen[kind] ?? 0) + 1;
        const want = await fresh(dir);
        const got = await resident(status, dir, stateDir);
        if (got !== want) throw new Error(`step ${step} (${kind} ${file}, seed ${SEED}): resident says dirty=${got}, a fresh scan ${want}`);
        if (kind === "noop" && status.counters.kept > keptBefore) keptOnNoop++;
        // Every 50th step, git too, both ways, against what git says when it trusts no stat data (every
        // entry racy, so re-hashed): the content's verdict. Plain `git status` only one way: it compares
        // whole seconds of ctime, so a same-size edit with the mtime put back, in the second the entry's
        // ctime was taken in, is clean to it (test/integration/racy-entries.test.ts shows one), where grex
        // compares nanoseconds and hashes the file; a pack it calls dirty must be dirty to grex too.
        if (step % 50 === 0) {
          const content = gitContentStatus(dir);
          if (got !== (content !== "")) throw new Error(`step ${step} (${kind} ${file}, seed ${SEED}): grex says dirty=${got}, git by content: ${JSON.stringify(content)}`);
          if (git(dir, "status", "--porcelain") !== "") expect(got).toBe(true);
        }
      }
    } finally {
      status.close();
    }
    // The walk did what it claims, and the kept answers were used.
    for (const kind of ["same-size", "rename", "checkout", "overflow", "commit"]) expect(seen[kind] ?? 0).toBeGreaterThan(0);
    expect(overflows).toBeGreaterThan(0);
    expect(keptOnNoop).toBeGreaterThan(0);
  }, 180_000);

  test("a file system that reports no change: every report scans, and the report says why", async () => {
    const dir = join(tmp.path, `pack${clones++}`);
    cloneAt(dir);
    const silent = (): FSWatcher => Object.assign(new EventEmitter(), { close() {}, ref() {}, unref() {} }) as unknown as FSWatcher;
    const status = new ResidentStatus({ watch: silent, retryMs: 60_000, cookieLostMs: 1500 });
    try {
      const stateDir = join(tmp.path, "state-silent");
      expect(await resident(status, dir, stateDir)).toBe(false);
      writeFileSync(join(dir, "README.md"), "changed\n");
      expect(await resident(status, dir, stateDir)).toBe(true);
      expect(status.counters.kept).toBe(0);
      const [r] = status.report();
      expect(r?.resident).toBe(false);
      expect(r?.reason).toContain("did not report a change");
      expect(readdirSync(join(dir, ".git")).filter((f) => f.startsWith("grex-serve-cookie-"))).toEqual([]);
    } finally {
      status.close();
    }
  }, 30_000);

  test("a pack whose git dir is not its .git directory is scanned on every report, and says why", async () => {
    const dir = join(tmp.path, `pack${clones++}`);
    cloneAt(dir);
    const elsewhere = join(tmp.path, `gitdir${clones}`);
    renameSync(join(dir, ".git"), elsewhere);
    writeFileSync(join(dir, ".git"), `gitdir: ${elsewhere}\n`);
    const status = new ResidentStatus();
    try {
      const stateDir = join(tmp.path, "state-gitfile");
      expect(await resident(status, dir, stateDir)).toBe(false);
      appendFileSync(join(dir, "README.md"), "x");
      expect(await resident(status, dir, stateDir)).toBe(true);
      expect(status.counters.kept).toBe(0);
      expect(status.report()[0]?.reason).toContain("not a .git directory");
      expect(existsSync(dir)).toBe(true);
    } finally {
      status.close();
    }
  }, 30_000);

  test("a long scan of one pack that holds the event loop past the cookie deadline costs no other pack its watch", async () => {
    const a = join(tmp.path, `pack${clones++}`);
    const b = join(tmp.path, `pack${clones++}`);
    cloneAt(a);
    cloneAt(b);
    const stateDir = join(tmp.path, "state-busy");
    const status = new ResidentStatus();
    try {
      // Both watched, each scanned once and kept.
      await Promise.all([resident(status, a, stateDir), resident(status, b, stateDir)]);
      // A's next scan holds the loop for longer than the cookie deadline (as a scan of a large pack does on a busy machine).
      appendFileSync(join(a, "README.md"), "x");
      const qa = query(a, stateDir);
      let askB: Promise<boolean> | undefined;
      const slowScan = async () => {
        // B is asked now: once its cookie is written, the loop is held past the deadline before the cookie's event can be read.
        askB = resident(status, b, stateDir);
        const cookieOfB = () => readdirSync(join(b, ".git")).some((f) => f.startsWith("grex-serve-cookie-"));
        for (let i = 0; i < 1000 && !cookieOfB(); i++) await Promise.resolve();
        expect(cookieOfB()).toBe(true);
        const until = Date.now() + 1500;
        while (Date.now() < until) {
          // busy: the event loop hears nothing meanwhile
        }
        return fresh(a);
      };
      const da = await status.dirty(qa, slowScan);
      const db = await askB;
      expect([da, db]).toEqual([true, false]);
      expect(status.report().map((r) => r.resident)).toEqual([true, true]);
      const kept = status.counters.kept;
      expect(await resident(status, b, stateDir)).toBe(false);
      expect(status.counters.kept).toBe(kept + 1);
    } finally {
      status.close();
    }
  }, 30_000);
});
