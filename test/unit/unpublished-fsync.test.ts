// Files written through git's lock files into a clone still under its temp
// name defer their fsyncs to the clone's publish (src/core/git/layout/unpublished.ts);
// everywhere else they fsync as they go. And the phase timers behind
// GREX_PROFILE (src/core/base/profile.ts) write their document at exit only when asked.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LockFile } from "../../src/core/git/layout/lockfile.ts";
import { writeThroughLock } from "../../src/core/git/layout/git-lock.ts";
import { deferFsync, endUnpublished, startUnpublished, syncUnpublished } from "../../src/core/git/layout/unpublished.ts";
import { tempDir } from "../helpers/git-fixtures.ts";

const tmp = tempDir("grex-unpublished-");
afterAll(() => tmp.cleanup());

describe("fsyncs deferred inside a clone being built", () => {
  test("only paths under a registered directory are deferred, and only until it ends", () => {
    const clone = join(tmp.path, ".p.grex-clone-1-abc");
    const sibling = join(tmp.path, ".p.grex-clone-1-abcd"); // a name that merely starts the same
    startUnpublished(clone);
    try {
      expect(deferFsync(join(clone, ".git", "config"))).toBe(true);
      expect(deferFsync(join(sibling, ".git", "config"))).toBe(false);
      expect(deferFsync(join(tmp.path, "other", "config"))).toBe(false);
    } finally {
      endUnpublished(clone);
    }
    expect(deferFsync(join(clone, ".git", "config"))).toBe(false);
  });

  test("a lock-file write and a git-lock write land whole inside the clone; the publish sync finds them (a removed one is skipped)", async () => {
    const clone = join(tmp.path, ".q.grex-clone-1-xyz");
    const gitdir = join(clone, ".git");
    mkdirSync(gitdir, { recursive: true });
    startUnpublished(clone);
    try {
      const index = join(gitdir, "index");
      const lock = LockFile.tryAcquire(index) as LockFile;
      await lock.writeAsync(Buffer.from("index bytes"));
      await lock.commitAsync();
      const config = join(gitdir, "config");
      writeThroughLock(config, "[core]\n\tbare = false\n", { timeoutMs: 100, fsync: true });
      writeFileSync(join(gitdir, "gone"), "x");
      expect(deferFsync(join(gitdir, "gone"))).toBe(true);
      rmSync(join(gitdir, "gone"));
      await syncUnpublished(clone);
      expect(readFileSync(index, "utf8")).toBe("index bytes");
      expect(readFileSync(config, "utf8")).toBe("[core]\n\tbare = false\n");
      expect(existsSync(`${index}.lock`) || existsSync(`${config}.lock`)).toBe(false);
    } finally {
      endUnpublished(clone);
    }
  });

  test("a nested clone (a submodule's inside its superproject's) takes its own files", async () => {
    const outer = join(tmp.path, ".o.grex-clone-1-aaa");
    const inner = join(outer, "sub", ".s.grex-clone-1-bbb");
    mkdirSync(join(inner, ".git"), { recursive: true });
    startUnpublished(outer);
    startUnpublished(inner);
    try {
      const file = join(inner, ".git", "config");
      writeFileSync(file, "x");
      expect(deferFsync(file)).toBe(true);
      await syncUnpublished(inner);
      endUnpublished(inner);
      rmSync(inner, { recursive: true }); // renamed away (published): the outer sync must not look for it
      await syncUnpublished(outer);
    } finally {
      endUnpublished(inner);
      endUnpublished(outer);
    }
  });
});

describe("GREX_PROFILE", () => {
  const script = `import { phaseEnd, phaseStart, timePhase } from ${JSON.stringify(join(import.meta.dir, "../../src/core/base/profile.ts"))};
phaseEnd("a", phaseStart()); phaseEnd("a", phaseStart()); await timePhase("b", async () => 1);`;
  const run = (env: Record<string, string>) => Bun.spawnSync([process.execPath, "-e", script], { env: { ...process.env, ...env }, stderr: "pipe" });

  test("names a file: the phases, counted, with the process's wall and CPU time, written at exit", () => {
    const out = join(tmp.path, "profile.json");
    expect(run({ GREX_PROFILE: out }).exitCode).toBe(0);
    const doc = JSON.parse(readFileSync(out, "utf8")) as { wall_ms: number; cpu_user_ms: number; phases: Record<string, { n: number }> };
    expect(doc.phases.a?.n).toBe(2);
    expect(doc.phases.b?.n).toBe(1);
    expect(doc.wall_ms).toBeGreaterThan(0);
    expect(doc.cpu_user_ms).toBeGreaterThan(0);
  });
});
