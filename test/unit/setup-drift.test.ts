// Setup drift at the action level: apply records what each action left, the
// checks see each kind of hand-made undo (never re-running anything), a
// rolled-back run records nothing, teardown forgets it all, and off-branch /
// interrupted-install rules read the right facts.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHECKS } from "../../src/core/actions/checks.ts";
import { setupDrift, driftedItems } from "../../src/core/actions/drift.ts";
import { actionDef, actionNames } from "../../src/core/actions/index.ts";
import { type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import type { ActionItem, PackState } from "../../src/core/actions/types.ts";
import { makeEvent } from "../../src/core/workspace/manifest.ts";
import { interruptedPacks } from "../../src/core/sync/install-state.ts";
import { checkoutOf, offBranch, trackedBranch } from "../../src/core/sync/off-branch.ts";
import { noHooks, persisted, sandboxRunOptions } from "../helpers/actions.ts";

let root = "";
afterEach(() => rmSync(root, { recursive: true, force: true }));

function sandbox() {
  root = mkdtempSync(join(tmpdir(), "grex-drift-"));
  const home = join(root, "home");
  const pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(join(pack, "files"), { recursive: true });
  writeFileSync(join(pack, "files", "a.conf"), "a\n");
  const opts = (state: PackState): RunOptions => ({ ...sandboxRunOptions(pack, home, state), now: undefined, os: "linux" });
  return { home, pack, opts };
}

const ITEMS: ActionItem[] = [
  { mkdir: { path: "$HOME/.cfg" } },
  { symlink: { src: "files/a.conf", dst: "$HOME/.cfg/a.conf" } },
  { env: { name: "GREX_A", value: "1" } },
  { when: { os: "linux", actions: [{ mkdir: { path: "$HOME/.nested" } }] } },
  { exec: { cmd: ["true"] } },
];

describe("setup drift", () => {
  test("one report reads a shared file once: packs checked with the same map see the same ~/.bashrc", async () => {
    const { home, opts } = sandbox();
    const a: PackState = {};
    const b: PackState = {};
    expect((await runActions([{ env: { name: "GREX_A", value: "1" } }], opts(a), noHooks)).failed).toBeNull();
    expect((await runActions([{ env: { name: "GREX_B", value: "2" } }], opts(b), noHooks)).failed).toBeNull();
    const reads = new Map<string, string | null>();
    expect(setupDrift(persisted(a), reads)).toEqual([]);
    expect([...reads.keys()]).toEqual([join(home, ".bashrc")]);
    // Changed after the first pack's check: the report goes on with the text it read...
    writeFileSync(join(home, ".bashrc"), "");
    expect(setupDrift(persisted(b), reads)).toEqual([]);
    // ...and the next report (a new map) reads it again.
    expect(setupDrift(persisted(b), new Map()).map((d) => d.differs)).toEqual([`${join(home, ".bashrc")} has no GREX_B block`]);
  });

  test("a fresh install has none; each undo is seen with action, path and what differs", async () => {
    const { home, opts } = sandbox();
    const state: PackState = {};
    expect((await runActions(ITEMS, opts(state), noHooks)).failed).toBeNull();
    const saved = persisted(state);
    expect(setupDrift(saved)).toEqual([]);
    expect(Object.keys(saved).filter((k) => k.startsWith("expect:")).sort()).toEqual([
      "expect:actions[0]",
      "expect:actions[1]",
      "expect:actions[2]",
      "expect:actions[3].when.actions[0]",
    ]);

    rmSync(join(home, ".cfg/a.conf"));
    writeFileSync(join(home, ".bashrc"), readFileSync(join(home, ".bashrc"), "utf8").replace("'1'", "'2'"));
    rmSync(join(home, ".nested"), { recursive: true });
    const drift = setupDrift(saved);
    expect(drift.map((d) => [d.action, d.idx, d.where, d.path])).toEqual([
      ["symlink", 1, "actions[1]", join(home, ".cfg/a.conf")],
      ["env", 2, "actions[2]", join(home, ".bashrc")],
      ["mkdir", 3, "actions[3].when.actions[0]", join(home, ".nested")],
    ]);
    expect(drift[0]?.differs).toMatch(/missing/);
    expect(drift[1]?.differs).toMatch(/differently/);
    // The items to re-apply are the declared ones, at their own place.
    const healed = driftedItems(saved, drift, { actions: ITEMS });
    expect(healed.items.map((d) => [d.list, d.idx])).toEqual([
      ["actions", 1],
      ["actions", 2],
      ["actions[3].when.actions", 0],
    ]);
    expect(healed.items[0]?.item).toBe(ITEMS[1] as Record<string, unknown>);
    expect(healed.forgotten).toEqual([]);
    // A declaration that dropped or changed an item: its record is forgotten, never re-applied.
    const copy = structuredClone(saved);
    const changed = structuredClone(ITEMS) as Array<Record<string, unknown>>;
    changed.splice(2, 1, { mkdir: { path: "$HOME/.other" } });
    const partial = driftedItems(copy, drift, { actions: changed.slice(0, 3) });
    expect(partial.items.map((d) => [d.list, d.idx])).toEqual([["actions", 1]]);
    expect(partial.forgotten).toEqual(["actions[2]", "actions[3].when.actions[0]"]);
    expect(Object.keys(copy).filter((k) => k.startsWith("expect:")).sort()).toEqual(["expect:actions[0]", "expect:actions[1]"]);

    // A file where the link was, and a file where the directory was.
    writeFileSync(join(home, ".cfg/a.conf"), "mine\n");
    rmSync(join(home, ".cfg"), { recursive: true });
    writeFileSync(join(home, ".cfg"), "x");
    expect(setupDrift(saved).find((d) => d.action === "mkdir")?.differs).toMatch(/not a directory/);
  });

  test("a link pointing elsewhere is drift; the checks never change anything", async () => {
    const { home, opts } = sandbox();
    const state: PackState = {};
    await runActions(ITEMS.slice(0, 2), opts(state), noHooks);
    rmSync(join(home, ".cfg/a.conf"));
    symlinkSync("/etc/hostname", join(home, ".cfg/a.conf"));
    const before = JSON.stringify(state);
    expect(setupDrift(state)[0]?.differs).toMatch(/links to \/etc\/hostname/);
    expect(JSON.stringify(state)).toBe(before);
  });

  test("a rolled-back install records nothing; teardown forgets everything", async () => {
    const { opts } = sandbox();
    const state: PackState = {};
    const r = await runActions([...ITEMS.slice(0, 2), { exec: { cmd: ["false"] } }], opts(state), noHooks);
    expect(r.failed).not.toBeNull();
    expect(Object.keys(state).filter((k) => k.startsWith("expect:"))).toEqual([]);
    const ok: PackState = {};
    await runActions(ITEMS, opts(ok), noHooks);
    await teardownActions(ITEMS, null, opts(ok), noHooks);
    expect(ok).toEqual({});
  });

  test("every action that records an expectation has a check, and no check is left without its action", () => {
    const recording = actionNames().filter((n) => actionDef(n)?.expect !== undefined);
    expect(recording.sort()).toEqual(Object.keys(CHECKS).sort());
  });

  test("an unreadable record is reported, not trusted", () => {
    expect(setupDrift({ "expect:actions[0]": { nonsense: true } })[0]?.differs).toMatch(/unreadable/);
  });
});

describe("off-branch", () => {
  const lock = (branch: string | null, checkout?: { sha: string; branch: string | null }) => ({ id: "p", sha: "a".repeat(40), branch, installed_at: "", actions_hash: "", type: "meta", ...(checkout ? { checkout } : {}) });
  test("only a HEAD the user detached is off-branch; a topic branch is work, not drift", () => {
    expect(offBranch({ sha: "a".repeat(40), branch: "main" }, lock("main"))).toBeNull();
    expect(offBranch({ sha: "a".repeat(40), branch: "feature" }, lock("main"))).toBeNull();
    expect(offBranch({ sha: "b".repeat(40), branch: null }, lock("main"))).toMatch(/detached at bbbbbbb but tracks branch 'main'/);
    expect(offBranch({ sha: "a".repeat(40), branch: null }, lock(null))).toBeNull();
    expect(offBranch({ sha: "a".repeat(40), branch: "x" }, undefined)).toBeNull();
    // Where grex left it (sync --locked, detached) stays grex's after the lock moved on.
    expect(offBranch({ sha: "b".repeat(40), branch: null }, lock("main", { sha: "b".repeat(40), branch: null }))).toBeNull();
    expect(offBranch({ sha: "c".repeat(40), branch: null }, lock("main", { sha: "b".repeat(40), branch: null }))).toMatch(/detached/);
  });

  test("whose checkout: tracked, grex, topic, off-branch", () => {
    const head = (sha: string, branch: string | null) => ({ sha: sha.repeat(40), branch });
    expect(checkoutOf(head("a", "main"), "main", lock("main")).kind).toBe("tracked");
    expect(checkoutOf(head("a", "feature"), "main", lock("main"))).toEqual({ kind: "topic", base: "main", why: null });
    // A teammate re-pinned the pack: the branch grex last put it on is still grex's to move.
    expect(checkoutOf(head("a", "main"), "dev", lock("main")).kind).toBe("tracked");
    expect(checkoutOf(head("a", null), "main", lock("main")).kind).toBe("grex");
    expect(checkoutOf(head("b", null), "main", lock("main", { sha: "b".repeat(40), branch: null })).kind).toBe("grex");
    expect(checkoutOf(head("b", null), "main", lock("main")).kind).toBe("off-branch");
    expect(checkoutOf(head("a", "x"), null, lock(null))).toEqual({ kind: "topic", base: null, why: null });
  });

  test("the tracked branch: a pinned branch origin has, else origin/HEAD, else the lock's", () => {
    const refs = (map: Record<string, string>) => ({ loose: (r: string) => map[r] ?? null, resolve: (r: string) => map[r] ?? null });
    const sha = "a".repeat(40);
    expect(trackedBranch(refs({ "refs/remotes/origin/dev": sha }), "dev", undefined)).toBe("dev");
    expect(trackedBranch(refs({ "refs/remotes/origin/dev": sha }), "refs/heads/dev", undefined)).toBe("dev");
    expect(trackedBranch(refs({}), "v1.0", undefined)).toBeNull();
    expect(trackedBranch(refs({ "refs/remotes/origin/HEAD": "ref: refs/remotes/origin/trunk" }), null, lock("main"))).toBe("trunk");
    expect(trackedBranch(refs({}), null, lock("main"))).toBe("main");
  });
});

describe("interrupted installs", () => {
  test("an action_started with no end marks its pack; a later completed run of the same action clears it", () => {
    const started = (id: string, idx: number) => makeEvent("action_started", id, { action: "mkdir", idx });
    const done = (id: string, idx: number) => makeEvent("action_completed", id, { action: "mkdir", idx, changed: true });
    expect([...interruptedPacks([started("a", 0), done("a", 0), started("b", 1)])]).toEqual(["b"]);
    expect([...interruptedPacks([started("b", 1), started("b", 1), done("b", 1)])]).toEqual([]);
    // A successful sync of the pack afterwards closes what no longer exists in its pack.yaml.
    expect([...interruptedPacks([started("b", 7), makeEvent("sync", "a", {})])]).toEqual(["b"]);
    expect([...interruptedPacks([started("b", 7), makeEvent("sync", "b", {})])]).toEqual([]);
  });
});
