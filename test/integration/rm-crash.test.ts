// `grex rm` under SIGKILL at random moments (a real process, a fixed seed, a
// pack with thousands of files and installed links in HOME): whatever moment
// the kill hits — teardown, the rename into the trash, the records, the
// deletion — a plain re-run of the same `grex rm` converges: the pack is
// unregistered, its directory, lockfile line, .gitignore block and trash
// leftovers are gone, and HOME is as it was before the add.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { prng } from "../helpers/prng.ts";
import { snapshot, TestWorkspace } from "../helpers/workspace.ts";

const TRIALS = Number(process.env.RMCRASH_TRIALS ?? 20);
const SEED = 0x11c0ffee;
const FILES = 500;

const t = new TestWorkspace("grex-rmcrash-");
const spawned: Bun.Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  t.cleanup();
});

function bigPack(): string {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`data/d${i % 30}/f${i}.txt`] = `file ${i}\n`;
  const actions = ["  - mkdir: { path: $HOME/.big }"];
  for (let i = 0; i < 20; i++) {
    files[`links/l${i}.txt`] = `link ${i}\n`;
    actions.push(`  - symlink: { src: links/l${i}.txt, dst: $HOME/.big/l${i}.txt }`);
  }
  files[".grex/pack.yaml"] = `schema_version: "1"\nname: big\ntype: declarative\nactions:\n${actions.join("\n")}\n`;
  return t.repo("big", files);
}

/** Resolves once `proc` holds the workspace lock (it records its pid there: rm's work has begun), or has exited. */
async function holdsLock(proc: Bun.Subprocess): Promise<void> {
  const path = join(t.ws, ".grex/.state/locks/workspace.lock");
  const mine = new RegExp(`"pid":${proc.pid}\\b`);
  const deadline = Date.now() + 60_000; // a loaded machine can take seconds to start a process
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || (existsSync(path) && mine.test(readFileSync(path, "utf8")))) return;
    await Bun.sleep(1);
  }
  throw new Error(`pid ${proc.pid} never took the workspace lock (lock file: ${existsSync(path) ? readFileSync(path, "utf8") : "absent"})`);
}

async function run(argv: string[]): Promise<{ code: number; stderr: string }> {
  const proc = t.spawnGrex(argv);
  spawned.push(proc);
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  return { code, stderr };
}

/** HOME as the packs see it (bun keeps its transpiler cache in HOME/.bun when it runs grex). */
const homeSnapshot = () => Object.fromEntries(Object.entries(snapshot(t.home)).filter(([p]) => p !== ".bun" && !p.startsWith(".bun/")));

const converged = () => {
  const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
  const live = manifest.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { op: string; id: string });
  const adds = live.filter((e) => e.id === "big" && e.op === "add").length;
  const rms = live.filter((e) => e.id === "big" && e.op === "rm").length;
  return {
    registered: adds > rms,
    dir: existsSync(join(t.ws, "big")),
    lockLine: readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8").includes('"big"'),
    ignoreBlock: readFileSync(join(t.ws, ".gitignore"), "utf8").includes("grex:big"),
    trash: existsSync(join(t.ws, ".grex/.state/trash")) ? readdirSync(join(t.ws, ".grex/.state/trash")) : [],
  };
};

test(`SIGKILL at a random moment of rm (${TRIALS} trials, seed ${SEED.toString(16)}): a plain re-run converges`, async () => {
  expect((await t.grex("init")).code).toBe(0);
  const url = bigPack();
  const home = homeSnapshot();
  const random = prng(SEED);

  // How long an uninterrupted rm takes here sets the range of kill moments:
  // the median of three (the first run, on a cold cache, is the slowest).
  const spans: number[] = [];
  for (let i = 0; i < 3; i++) {
    expect((await t.grex("add", url)).code).toBe(0);
    const first = t.spawnGrex(["rm", "big"]);
    spawned.push(first);
    await holdsLock(first);
    const started = performance.now();
    expect(await first.exited).toBe(0);
    spans.push(performance.now() - started);
  }
  const span = [...spans].sort((a, b) => a - b)[1] as number;

  const outcomes = { killed: 0, finished: 0 };
  const phases = new Map<string, number>();
  for (let trial = 0; trial < TRIALS; trial++) {
    const add = await t.grex("add", url);
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    const proc = t.spawnGrex(["rm", "big"]);
    spawned.push(proc);
    await holdsLock(proc);
    await Bun.sleep(random() * span * 0.8);
    proc.kill("SIGKILL");
    const code = await proc.exited;
    outcomes[code === 0 ? "finished" : "killed"]++;
    const c = converged();
    const phase = code === 0 ? "finished" : !c.registered ? "after the rm event" : c.dir ? "before the rename" : "after the rename";
    phases.set(phase, (phases.get(phase) ?? 0) + 1);

    const again = await run(["rm", "big"]);
    // Killed after the trash was emptied: the pack is already unregistered, which the re-run says.
    if (again.code !== 0) {
      expect(again.code).toBe(2);
      expect(again.stderr).toContain("No pack 'big' is registered");
      expect(c.trash).toEqual([]);
    }
    expect({ trial, ...converged() }).toEqual({ trial, registered: false, dir: false, lockLine: false, ignoreBlock: false, trash: [] });
    expect(homeSnapshot()).toEqual(home);
  }
  console.log(`rm-crash: rm took ${span.toFixed(0)} ms once locked; where the kills landed: ${JSON.stringify(Object.fromEntries(phases))}`);
  // The seed must actually interrupt most runs, or the test proves nothing.
  expect(outcomes.killed).toBeGreaterThanOrEqual(TRIALS / 2);
}, 600_000);

test("killed after its record, before the deletion: the re-run deletes the leftover and reports the pack removed", async () => {
  const w = new TestWorkspace("grex-rmcrash-finish-");
  try {
    expect((await w.grex("init")).code).toBe(0);
    expect((await w.grex("add", w.repo("tools", { "README.md": "t\n" }))).code).toBe(0);
    // The state such a kill leaves: unregistered, the directory in the trash.
    expect((await w.grex("rm", "tools", "--keep-files")).code).toBe(0);
    mkdirSync(join(w.ws, ".grex/.state/trash"), { recursive: true });
    renameSync(join(w.ws, "tools"), join(w.ws, ".grex/.state/trash/tools+1+1+abcdef"));
    expect((await w.grex("doctor", "--json")).json.exit_code).toBe(7);
    const r = await w.grex("rm", "tools", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ id: "tools", removed: true, files_deleted: true });
    expect(readdirSync(join(w.ws, ".grex/.state/trash"))).toEqual([]);
    expect((await w.grex("rm", "tools")).code).toBe(2);
  } finally {
    w.cleanup();
  }
});
