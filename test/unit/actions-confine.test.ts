// The confinement rule inside the action modules: every target and backup is
// checked before anything moves, in dry runs and teardown too, and a refused
// step carries the rule in its details.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import type { PackState } from "../../src/core/actions/types.ts";
import { Confinement } from "../../src/core/fs/confine.ts";
import { modeSnapshot, noHooks, results, sandboxRunOptions } from "../helpers/actions.ts";

let root: string;
let home: string;
let pack: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** HOME holds the workspace (the usual layout); the pack lives in it. */
function sandbox(): void {
  root = realpathSync(mkdtempSync(join(tmpdir(), "grex-actions-confine-")));
  home = join(root, "home");
  pack = join(home, "ws", "p");
  mkdirSync(join(pack, "files"), { recursive: true });
  writeFileSync(join(pack, "files", "a"), "A\n");
}

const opts = (state: PackState, extra: Partial<RunOptions> = {}): RunOptions =>
  sandboxRunOptions(pack, home, state, {
    confine: new Confinement({ home, workspaceRoot: join(home, "ws"), packDirs: [pack, join(home, "ws", "q")], allowOutsideHome: false }),
    ...extra,
  });

describe("actions under the rule", () => {
  test("a refused target is a failed step with the rule, in a real run and a dry run alike; nothing moves", async () => {
    sandbox();
    mkdirSync(join(home, "ws", "q"));
    const before = modeSnapshot(root);
    for (const dryRun of [false, true]) {
      const r = await runActions([{ rmdir: { path: "../q", force: true } }], opts({}, { dryRun }), noHooks);
      expect(results(r)).toEqual(["failed"]);
      expect(r.steps[0]?.details).toMatchObject({ refused: "pack-dir", path: join(home, "ws", "q") });
    }
    expect(modeSnapshot(root)).toEqual(before);
  });

  test("inside its own directory and under HOME the pack works as before", async () => {
    sandbox();
    const r = await runActions(
      [{ mkdir: { path: "build/out" } }, { mkdir: { path: "$HOME/.config/x" } }, { symlink: { src: "files/a", dst: "~/.config/x/a" } }],
      opts({}),
      noHooks,
    );
    expect(r.failed).toBeNull();
    expect(results(r)).toEqual(["performed_change", "performed_change", "performed_change"]);
  });

  test("mkdir never creates HOME itself (HOME missing)", async () => {
    sandbox();
    rmSync(home, { recursive: true });
    mkdirSync(root, { recursive: true });
    const r = await runActions([{ mkdir: { path: "$HOME/.config" } }], opts({}), noHooks);
    expect(r.steps[0]?.details.refused).toBe("home");
  });

  test("a symlink src that is a FIFO is refused", async () => {
    sandbox();
    expect(Bun.spawnSync(["mkfifo", join(pack, "files", "fifo")]).exitCode).toBe(0);
    const r = await runActions([{ symlink: { src: "files/fifo", dst: "$HOME/fifo", kind: "file" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("is not a regular file or a directory");
  });

  test("a symlink with backup may not move a directory holding a repository aside", async () => {
    sandbox();
    mkdirSync(join(home, "proj", ".git"), { recursive: true });
    const r = await runActions([{ symlink: { src: "files/a", dst: "$HOME/proj", backup: true } }], opts({}), noHooks);
    expect(r.steps[0]?.details.refused).toBe("holds-git");
  });

  test("teardown (an explicit list, and the undo of actions) is held to the same rule", async () => {
    sandbox();
    const outside = join(root, "outside");
    mkdirSync(outside);
    const explicit = await teardownActions([], [{ rmdir: { path: outside, force: true } }], opts({}), noHooks);
    expect(explicit.steps[0]?.details.refused).toBe("outside-home");
    const undo = await teardownActions([{ mkdir: { path: join(outside, "x") } }], null, opts({ [`mkdir:${join(outside, "x")}`]: [join(outside, "x")] }), noHooks);
    expect(undo.steps[0]?.details.refused).toBe("outside-home");
  });
});
