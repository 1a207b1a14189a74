// `grex init --from` killed (SIGKILL, a real process) at a few points: while
// the first worktrees are being made, part way through the packs, and after
// grex.jsonl is written (during the setup pass). Running init --from again in
// the same directory (or, once grex.jsonl names the packs, grex sync) finishes
// the task workspace: every pack a clean linked worktree on the topic, the
// source's `git worktree list` naming each once, `git fsck` clean, doctor ok.
// The index of a linked worktree is written without fsync (as git writes it):
// a kill mid-make leaves the registration locked "initializing", which the re-run replaces.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
const NAMES = Array.from({ length: 10 }, (_, i) => `p${i}`);

beforeAll(async () => {
  t = new TestWorkspace("grex-task-kill-");
  expect((await t.grex("init")).code).toBe(0);
  for (const name of NAMES) {
    const files: Record<string, string> = {};
    for (let f = 0; f < 150; f++) files[`d${f % 10}/f${f}.txt`] = `${name} ${f}\n`.repeat(20);
    expect((await t.grex("add", t.repo(name, files))).code).toBe(0);
  }
}, 120_000);
afterAll(() => t.cleanup());

/** The registrations in the source pack `name` (its `.git/worktrees/*`). */
const registrations = (name: string): string[] => {
  const dir = join(t.ws, name, ".git", "worktrees");
  return existsSync(dir) ? readdirSync(dir) : [];
};
const anyLocked = () => NAMES.some((n) => registrations(n).some((r) => existsSync(join(t.ws, n, ".git", "worktrees", r, "locked"))));
const madeCount = (dir: string) => NAMES.filter((n) => existsSync(join(dir, n, ".git"))).length;
const manifestWritten = (dir: string) => existsSync(join(dir, "grex.jsonl")) && readFileSync(join(dir, "grex.jsonl"), "utf8").trim() !== "";

/** Start init --from in `dir`; SIGKILL it as soon as `when()` holds. Returns whether it was killed (false: it had finished first). */
async function killWhen(dir: string, topic: string, when: () => boolean): Promise<boolean> {
  const proc = t.spawnGrex(["init", "--from", t.ws, "--branch", topic], { cwd: dir });
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  while (!exited && !when()) await Bun.sleep(2);
  if (exited) return false;
  proc.kill("SIGKILL");
  await proc.exited;
  return true;
}

/** Every pack a clean linked worktree of the source on `topic`, registered once; fsck clean; doctor ok. */
async function expectWhole(dir: string, topic: string): Promise<void> {
  for (const name of NAMES) {
    const wt = join(dir, name);
    expect(git(wt, "symbolic-ref", "--short", "HEAD")).toBe(topic);
    expect(git(wt, "status", "--porcelain")).toBe("");
    const list = git(join(t.ws, name), "worktree", "list", "--porcelain");
    expect(list.split("\n").filter((l) => l === `worktree ${wt}`)).toHaveLength(1);
    expect(list).not.toContain("locked");
    expect(list).not.toContain("prunable");
    expect(git(join(t.ws, name), "fsck", "--no-dangling")).toBe("");
  }
  const doctor = await t.grex("--manifest", join(dir, "grex.jsonl"), "doctor");
  expect(doctor.code).toBe(0);
}

describe("init --from killed, then run again", () => {
  test("killed while the first worktrees are made: init --from again replaces what it left", async () => {
    const dir = join(t.root, "k1");
    mkdirSync(dir);
    if (await killWhen(dir, "k1", anyLocked)) {
      expect(manifestWritten(dir)).toBe(false);
      expect(NAMES.some((n) => registrations(n).length > 0)).toBe(true);
    }
    const again = t.spawnGrex(["init", "--from", t.ws, "--branch", "k1"], { cwd: dir });
    expect(await new Response(again.stderr).text()).toBe("");
    expect(await again.exited).toBe(0);
    await expectWhole(dir, "k1");
  }, 120_000);

  test("killed part way through the packs: init --from again finishes; the topic branches made before stay", async () => {
    const dir = join(t.root, "k2");
    mkdirSync(dir);
    if (await killWhen(dir, "k2", () => madeCount(dir) >= 4)) expect(manifestWritten(dir)).toBe(false);
    const again = t.spawnGrex(["init", "--from", t.ws, "--branch", "k2"], { cwd: dir });
    expect(await new Response(again.stderr).text()).toBe("");
    expect(await again.exited).toBe(0);
    await expectWhole(dir, "k2");
  }, 120_000);

  test("killed after grex.jsonl is written: init --from refuses the directory in one sentence, grex sync finishes it", async () => {
    const dir = join(t.root, "k3");
    mkdirSync(dir);
    if (await killWhen(dir, "k3", () => manifestWritten(dir))) {
      const again = t.spawnGrex(["init", "--from", t.ws, "--branch", "k3"], { cwd: dir });
      expect(await again.exited).toBe(2);
      expect(await new Response(again.stderr).text()).toContain("already a grex workspace with packs registered");
      const sync = await t.grex("--manifest", join(dir, "grex.jsonl"), "sync");
      expect(sync.code).toBe(0);
    }
    await expectWhole(dir, "k3");
    // The lockfile names each pack's tracked branch, never the topic (a later sync follows it).
    expect(readFileSync(join(dir, "grex.lock.jsonl"), "utf8")).not.toContain('"branch":"k3"');
  }, 120_000);

  test("a leftover worktree with changes is refused, not deleted", async () => {
    const dir = join(t.root, "k4");
    mkdirSync(dir);
    const whole = () => NAMES.find((n) => existsSync(join(dir, n, ".git")) && registrations(n).length > 0 && !registrations(n).some((r) => existsSync(join(t.ws, n, ".git", "worktrees", r, "locked"))));
    expect(await killWhen(dir, "k4", () => whole() !== undefined)).toBe(true);
    const name = whole() as string;
    writeFileSync(join(dir, name, "mine.txt"), "work\n");
    const again = t.spawnGrex(["init", "--from", t.ws, "--branch", "k4"], { cwd: dir });
    expect(await again.exited).toBe(2);
    const err = await new Response(again.stderr).text();
    expect(err).toContain(`pack '${name}' has a worktree at ${join(dir, name)}, left by an earlier grex init --from`);
    expect(err.trim().split("\n")).toHaveLength(1);
    expect(readFileSync(join(dir, name, "mine.txt"), "utf8")).toBe("work\n");
  }, 120_000);
});
