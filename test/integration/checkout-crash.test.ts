// An update killed (SIGKILL) at random points while it rewrites a large work
// tree: the interrupted move is never taken for the user's changes, and the
// next plain `grex sync` finishes it — nothing lost, nothing half-written, a
// user's file outside the update untouched. Real processes, fixed seed.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readJournal } from "../../src/core/git/worktree/checkout-journal.ts";
import { inProcess } from "../../src/core/git/in-process.ts";
import { prng } from "../helpers/prng.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const WORKER = join(import.meta.dir, "..", "helpers", "update-worker.ts");
const TRIALS = 20;
const FILES = 600;
const t = new TestWorkspace("grex-checkout-crash-");
afterAll(() => t.cleanup());

function round(k: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`part${i % 9}/file${i}.txt`] = `round ${k} file ${i}\n${"x".repeat(200 + ((i * 37 + k) % 400))}\n`;
  return files;
}

/** Start an update of the pack and SIGKILL it `delayMs` after it is loaded (unless it finished first: then true). */
async function killDuring(dir: string, url: string, delayMs: number, until?: () => boolean): Promise<boolean> {
  const p = Bun.spawn([process.execPath, WORKER, dir, url], { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: t.env });
  const reader = p.stdout.getReader();
  let out = "";
  const readAll = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      out += new TextDecoder().decode(value);
    }
  })();
  while (!out.includes("ready\n") && p.exitCode === null) await Bun.sleep(1);
  const waitFor = async () => {
    if (!until) return Bun.sleep(delayMs);
    while (!until() && p.exitCode === null) await Bun.sleep(0.5);
    await Bun.sleep(delayMs);
  };
  const exited = await Promise.race([p.exited.then(() => true), waitFor().then(() => false)]);
  if (!exited) p.kill("SIGKILL");
  await p.exited;
  await readAll;
  return out.includes("done\n");
}

async function syncCli(): Promise<{ code: number; stderr: string; stdout: string }> {
  const p = t.spawnGrex(["sync", "--json"]);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("checkout crash journal", () => {
  const up = t.repo("big", { ...round(0), ".gitignore": "*.local\n", "keep.txt": "never changes\n" });
  git(up, "config", "gc.auto", "0"); // a background auto-gc would race the next round's commit
  const dir = join(t.ws, "big");
  const gitdir = join(dir, ".git");

  test(`SIGKILL at ${TRIALS} random points of a large update; plain grex sync converges each time`, async () => {
    expect((await t.grex("init")).code).toBe(0);
    expect((await t.grex("add", up)).code).toBe(0);
    writeFileSync(join(dir, "notes.local"), "the user's own notes\n"); // ignored, outside every update

    // Calibrate: how long one full update takes here, from "ready" to done.
    t.commit(up, round(1), "round 1");
    const t0 = performance.now();
    expect(await killDuring(dir, up, 60_000)).toBe(true);
    const span = Math.max(50, performance.now() - t0);

    const random = prng(18);
    let interrupted = 0;
    for (let k = 2; k < TRIALS + 2; k++) {
      const files = round(k);
      delete files[`part${k % 9}/file${k}.txt`]; // a removal
      files[`new/round${k}.txt`] = `added in round ${k}\n`; // an addition
      rmSync(join(up, `part${k % 9}/file${k}.txt`), { force: true });
      const target = t.commit(up, files, `round ${k}`);

      const finished = await killDuring(dir, up, random() * span * 1.2);
      if (readJournal(gitdir)) {
        interrupted++;
        // Mid-move the work tree mixes two versions: that is the update's work, not the user's.
        expect(await inProcess.isDirty(dir)).toBe(false);
      }
      const r = await syncCli();
      expect({ trial: k, finished, code: r.code, stderr: r.stderr }).toEqual({ trial: k, finished, code: 0, stderr: "" });
      expect(git(dir, "rev-parse", "HEAD")).toBe(target);
      expect(git(dir, "status", "--porcelain", "--untracked-files=all")).toBe("");
      expect(readJournal(gitdir)).toBeNull();
      expect(existsSync(join(gitdir, "index.lock"))).toBe(false); // a kill while grex wrote the index: its lock gone with the next sync
      expect(readFileSync(join(dir, "notes.local"), "utf8")).toBe("the user's own notes\n");
      expect(readFileSync(join(dir, `new/round${k}.txt`), "utf8")).toBe(`added in round ${k}\n`);
      expect(existsSync(join(dir, `part${k % 9}/file${k}.txt`))).toBe(false);
      expect(readFileSync(join(dir, "part1/file100.txt"), "utf8")).toBe(files["part1/file100.txt"] as string);
    }
    expect(interrupted).toBeGreaterThanOrEqual(3); // the kills really landed inside checkouts
  }, 240_000);

  test("a user edit to a half-updated file is kept: sync leaves the pack alone until the user decides", async () => {
    // Kill as soon as the move is journaled (a few tries: the move may win the race).
    for (let k = 100; k < 110 && !readJournal(gitdir); k++) {
      t.commit(up, round(k), `round ${k}`);
      await killDuring(dir, up, 2, () => existsSync(join(gitdir, "grex-checkout.json")));
      if (!readJournal(gitdir)) expect((await syncCli()).code).toBe(0);
    }
    expect(readJournal(gitdir)).not.toBeNull();
    const edited = join(dir, "part0/file0.txt");
    writeFileSync(edited, "the user's edit\n");
    expect(await inProcess.isDirty(dir)).toBe(true);
    const r = await syncCli();
    expect(JSON.parse(r.stdout).packs[0].result).toBe("dirty");
    expect(readFileSync(edited, "utf8")).toBe("the user's edit\n");
    // The user drops the edit; the next sync completes the update.
    rmSync(edited);
    git(dir, "checkout", "--", "part0/file0.txt");
    expect((await syncCli()).code).toBe(0);
    expect(git(dir, "status", "--porcelain")).toBe("");
    expect(git(dir, "rev-parse", "HEAD")).toBe(git(up, "rev-parse", "HEAD"));
    expect(readdirSync(dir).filter((n) => n.endsWith(".grex-checkout-tmp"))).toEqual([]);
  }, 120_000);
});
