// The executor: ordered runs with hooks, rollback of a failed run in reverse,
// cancellation, teardown (explicit list or reverse undo), parsing of action
// items, and picking the actions of one kind for `grex run`.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ActionHooks, type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import { collectNamedActions, parseActionItem } from "../../src/core/actions/index.ts";
import type { ActionItem, PackState } from "../../src/core/actions/types.ts";
import { GrexError } from "../../src/core/base/errors.ts";
import { modeSnapshot, sandboxRunOptions } from "../helpers/actions.ts";

let root: string;
let home: string;
let pack: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function sandbox(): void {
  root = mkdtempSync(join(tmpdir(), "grex-actions-exec-"));
  home = join(root, "home");
  pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(join(pack, "files"), { recursive: true });
  writeFileSync(join(pack, "files", "app.conf"), "x\n");
}

function recorder(): ActionHooks & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    onStarted: async (idx, action) => void events.push(`started ${idx} ${action}`),
    onCompleted: async (idx, action, changed) => void events.push(`completed ${idx} ${action} ${changed}`),
    onHalted: async (idx, action, reason, stderr) => void events.push(`halted ${idx} ${action}: ${reason} [${stderr.trim()}]`),
  };
}

const opts = (extra: Partial<RunOptions> = {}, state: PackState = {}): RunOptions => ({
  ...sandboxRunOptions(pack, home, state),
  now: undefined,
  ...extra,
});

function thrown(fn: () => unknown): GrexError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GrexError) return e;
    throw e;
  }
  throw new Error("expected a GrexError");
}

describe("runActions", () => {
  test("a 3-action list whose third action fails: 1 and 2 are rolled back in reverse, hooks bracket each action", async () => {
    sandbox();
    writeFileSync(join(home, ".bashrc"), "# mine\n");
    const before = modeSnapshot(root);
    const h = recorder();
    const state: PackState = {};
    const r = await runActions(
      [
        { mkdir: { path: "$HOME/.failing/one" } },
        { env: { name: "GREX_FAILING", value: "1" } },
        { exec: { cmd: ["sh", "-c", "echo boom >&2; exit 3"] } },
        { mkdir: { path: "$HOME/.failing/never" } },
      ],
      opts({}, state),
      h,
    );
    expect(r.failed).toEqual({ idx: 2, action: "exec", reason: "`sh -c echo boom >&2; exit 3` exited 3" });
    expect(r.skipped).toBe(false);
    expect(h.events).toEqual([
      "started 0 mkdir",
      "completed 0 mkdir true",
      "started 1 env",
      "completed 1 env true",
      "started 2 exec",
      "halted 2 exec: `sh -c echo boom >&2; exit 3` exited 3 [boom]",
    ]);
    expect(r.steps.map((s) => [s.action, s.idx, s.result, s.details.rollback !== undefined])).toEqual([
      ["mkdir", 0, "performed_change", false],
      ["env", 1, "performed_change", false],
      ["exec", 2, "failed", false],
      ["env", 1, "performed_change", true],
      ["mkdir", 0, "performed_change", true],
    ]);
    expect(r.steps[3]?.details.rollback).toBe(`took GREX_FAILING out of ${join(home, ".bashrc")}`);
    expect(modeSnapshot(root)).toEqual(before);
    expect(state).toEqual({});
  });

  test("an action that throws (bad args, unset variable) fails its step like any failure", async () => {
    sandbox();
    const h = recorder();
    const r = await runActions([{ mkdir: { path: "$HOME/a" } }, { mkdir: { path: "$NOT_SET/b" } }], opts(), h);
    expect(r.failed?.reason).toBe("Variable $NOT_SET used in actions[1].mkdir.path of pack 'p' is not set; export it or use $$ for a literal dollar");
    expect(existsSync(join(home, "a"))).toBe(false);
    expect(h.events.at(-1)).toStartWith("halted 1 mkdir: Variable $NOT_SET");
  });

  test("dry run: no hooks, no state, nothing on disk; later steps plan on earlier ones", async () => {
    sandbox();
    const before = modeSnapshot(root);
    const h = recorder();
    const state: PackState = {};
    const r = await runActions(
      [
        { mkdir: { path: "$HOME/.config/app" } },
        { symlink: { src: "files/app.conf", dst: "$HOME/.config/app/app.conf" } },
        { require: { path_exists: "$HOME/.config/app/app.conf" } },
        { env: { name: "X", value: "1" } },
      ],
      opts({ dryRun: true }, state),
      h,
    );
    expect(r.failed).toBeNull();
    expect(r.steps.map((s) => s.result)).toEqual(["would_perform_change", "would_perform_change", "already_satisfied", "would_perform_change"]);
    expect(h.events).toEqual([]);
    expect(state).toEqual({});
    expect(modeSnapshot(root)).toEqual(before);
  });

  test("cancellation between actions stops the run, rolls back and throws", async () => {
    sandbox();
    const ac = new AbortController();
    const h = recorder();
    const inner = h.onCompleted;
    h.onCompleted = async (idx, action, changed) => {
      await inner(idx, action, changed);
      if (idx === 1) ac.abort();
    };
    const run = runActions(
      [{ mkdir: { path: "$HOME/a" } }, { mkdir: { path: "$HOME/b" } }, { mkdir: { path: "$HOME/c" } }],
      opts({ signal: ac.signal }),
      h,
    );
    await expect(run).rejects.toMatchObject({ kind: "cancelled" });
    expect(h.events).toEqual(["started 0 mkdir", "completed 0 mkdir true", "started 1 mkdir", "completed 1 mkdir true"]);
    expect(readdirSync(home)).toEqual([]);
  });

  test("a hook that throws (e.g. the manifest lock) rolls back and passes the error on", async () => {
    sandbox();
    const h = recorder();
    h.onStarted = async (idx) => {
      if (idx === 1) throw new GrexError("lock", "Manifest is locked.");
    };
    await expect(runActions([{ mkdir: { path: "$HOME/a" } }, { mkdir: { path: "$HOME/b" } }], opts(), h)).rejects.toMatchObject({ kind: "lock" });
    expect(readdirSync(home)).toEqual([]);
  });

  test("a subset with its original indexes (grex run)", async () => {
    sandbox();
    const items: ActionItem[] = [
      { mkdir: { path: "$HOME/a" } },
      { env: { name: "X", value: "1", scope: "session" } },
      { when: { os: "linux", actions: [{ env: { name: "Y", value: "2", scope: "session" } }, { mkdir: { path: "$HOME/b" } }] } },
      { mkdir: { path: "$HOME/c" } },
    ];
    const picked = collectNamedActions(items, "mkdir");
    expect(picked.map((p) => p.idx)).toEqual([0, 2, 3]);
    expect(picked[1]?.item).toEqual({ when: { os: "linux", actions: [{ mkdir: { path: "$HOME/b" } }] } });
    const h = recorder();
    const processEnv: Record<string, string | undefined> = {};
    const r = await runActions(
      picked.map((p) => p.item),
      opts({ os: "linux", processEnv }),
      h,
      "actions",
      picked.map((p) => p.idx),
    );
    expect(r.steps.map((s) => [s.action, s.idx])).toEqual([
      ["mkdir", 0],
      ["when", 2],
      ["mkdir", 2],
      ["mkdir", 3],
    ]);
    expect(h.events.filter((e) => e.startsWith("started"))).toEqual(["started 0 mkdir", "started 2 when", "started 3 mkdir"]);
    expect(processEnv).toEqual({});
    expect(readdirSync(home).sort()).toEqual(["a", "b", "c"]);
  });
});

describe("teardownActions", () => {
  test("without a teardown list: reverse undo of every action; state cleared; twice is a no-op", async () => {
    sandbox();
    writeFileSync(join(home, ".bashrc"), "# mine\n");
    const before = modeSnapshot(root);
    const items: ActionItem[] = [
      { require: { os: "linux" } },
      { mkdir: { path: "$HOME/.config/app" } },
      { symlink: { src: "files/app.conf", dst: "$HOME/.config/app/app.conf" } },
      { env: { name: "EDITOR", value: "vim" } },
      { exec: { cmd: ["true"] } },
    ];
    const state: PackState = {};
    const r = await runActions(items, opts({ os: "linux" }, state), recorder());
    expect(r.failed).toBeNull();
    const h = recorder();
    const td = await teardownActions(items, null, opts({ os: "linux" }, JSON.parse(JSON.stringify(state)) as PackState), h);
    expect(td.failed).toBeNull();
    expect(td.steps.map((s) => [s.action, s.idx, s.result])).toEqual([
      ["exec", 4, "noop"],
      ["env", 3, "performed_change"],
      ["symlink", 2, "performed_change"],
      ["mkdir", 1, "performed_change"],
      ["require", 0, "noop"],
    ]);
    expect(td.steps.every((s) => s.details.teardown === true)).toBe(true);
    expect(h.events).toEqual([]); // reverse undo is not bracketed
    expect(modeSnapshot(root)).toEqual(before);
    const state2: PackState = { stale: true };
    const td2 = await teardownActions(items, null, opts({ os: "linux" }, state2), recorder());
    expect(td2.steps.every((s) => s.result === "noop" || s.result === "already_satisfied")).toBe(true);
    expect(state2).toEqual({});
    expect(modeSnapshot(root)).toEqual(before);
  });

  test("an explicit teardown list runs instead, bracketed, without rollback", async () => {
    sandbox();
    mkdirSync(join(home, "made"));
    const h = recorder();
    const state: PackState = { "mkdir:/x": ["/x"] };
    const td = await teardownActions(
      [{ mkdir: { path: "$HOME/made" } }],
      [{ rmdir: { path: "$HOME/made" } }, { exec: { cmd: ["touch", "done"] } }],
      opts({}, state),
      h,
    );
    expect(td.failed).toBeNull();
    expect(td.steps.map((s) => [s.action, s.idx, s.result])).toEqual([
      ["rmdir", 0, "performed_change"],
      ["exec", 1, "performed_change"],
    ]);
    expect(h.events).toEqual(["started 0 rmdir", "completed 0 rmdir true", "started 1 exec", "completed 1 exec true"]);
    expect(existsSync(join(home, "made"))).toBe(false);
    expect(existsSync(join(pack, "done"))).toBe(true);
    expect(state).toEqual({});

    const failing = await teardownActions([], [{ mkdir: { path: "$HOME/m" } }, { exec: { cmd: ["false"] } }], opts(), recorder());
    expect(failing.failed).toMatchObject({ idx: 1, action: "exec" });
    expect(existsSync(join(home, "m"))).toBe(true); // teardown does not roll back
  });
});

describe("parseActionItem", () => {
  test("fills defaults and returns the definition", () => {
    const p = parseActionItem({ symlink: { src: "a", dst: "b" } }, "actions[0]");
    expect(p.name).toBe("symlink");
    expect(p.args).toEqual({ src: "a", dst: "b", backup: false, normalize: true, kind: "auto" });
    expect(parseActionItem({ mkdir: { path: "x" } }, "a").args).toEqual({ path: "x", mode: "755" });
    expect(parseActionItem({ rmdir: { path: "x" } }, "a").args).toEqual({ path: "x", backup: false, force: false });
    expect(parseActionItem({ env: { name: "A", value: 1 } }, "a").args).toEqual({ name: "A", value: "1", scope: "user" });
    expect(parseActionItem({ exec: { cmd: ["x"] } }, "a").args).toEqual({ cmd: ["x"], shell: false, on_fail: "error" });
    expect(parseActionItem({ require: { os: "linux" } }, "a").args).toMatchObject({ os: "linux", on_fail: "error" });
  });

  test("errors name the field path in one sentence", () => {
    const cases: Array<[unknown, string]> = [
      [{ mkdir: { path: "x", mode: "abc" } }, 'actions[1].mkdir.mode must be an octal mode such as 755; fix it in pack.yaml.'],
      [{ mkdir: {} }, "actions[1].mkdir.path is missing; add it."],
      [{ mkdir: null }, "actions[1].mkdir.path is missing; add it."],
      [{ mkdir: { path: "x", owner: "me" } }, "actions[1].mkdir.owner is not a known field; remove it (allowed: path, mode)."],
      // A misspelt key is named as such, not as the key it leaves missing; every mistake of the action is named.
      [{ mkdir: { pth: "x" } }, "actions[1].mkdir has the unknown key pth (did you mean path?); fix it in pack.yaml."],
      [
        { mkdir: { pth: "x", mode: "abc" } },
        "actions[1].mkdir has 2 mistakes: unknown key pth (did you mean path?); mode must be an octal mode such as 755; fix them in pack.yaml.",
      ],
      [
        { symlink: { src: "a", dst: "b", bogus: 1, owner: "me" } },
        "actions[1].symlink has the unknown keys bogus and owner; remove them (allowed: src, dst, backup, normalize, kind).",
      ],
      [{ symlink: { src: "a", dst: "b", kind: "hard" } }, 'actions[1].symlink.kind must be one of "auto" | "file" | "directory" (got string "hard"); fix it in pack.yaml.'],
      [{ symlink: { src: 5, dst: "b" } }, "actions[1].symlink.src must be a string (got number 5); fix it in pack.yaml."],
      [{ exec: { cmd: ["ok", 3] } }, "actions[1].exec.cmd[1] must be a string (got number 3); fix it in pack.yaml."],
      [{ exec: { cmd: ["x"], on_fail: "skip" } }, 'actions[1].exec.on_fail must be one of "error" | "warn" | "ignore" (got string "skip"); fix it in pack.yaml.'],
      [{ exec: { cmd_shell: "x" } }, "actions[1].exec has cmd_shell but not shell: true; add shell: true, or use cmd with an argv list."],
      [
        { when: { os: "linux", actions: [{ mkdir: { mode: 7 } }] } },
        "actions[1].when.actions[0].mkdir has 2 mistakes: path is missing; mode must be an octal mode such as 755; fix them in pack.yaml.",
      ],
      [{ env: { name: "A", value: "x", machine_file: "/tmp/e" } }, "actions[1].env.machine_file is not a known field; remove it (allowed: name, value, scope)."],
      ["mkdir", "actions[1] must be a mapping with one action key (got string \"mkdir\"); write it as '- mkdir: { path: ... }'."],
      [{ mkdir: { path: "x" }, rmdir: { path: "y" } }, "actions[1] has 2 keys (mkdir, rmdir) but an action item takes exactly one; write one list item per action."],
    ];
    for (const [item, message] of cases) {
      const e = thrown(() => parseActionItem(item, "actions[1]"));
      expect(e.kind).toBe("integrity");
      expect(e.message).toBe(message);
    }
  });

  test("an unknown action is a plugin error", () => {
    const e = thrown(() => parseActionItem({ copy: { src: "a" } }, "pack.yaml: actions[0]"));
    expect(e.kind).toBe("plugin");
    expect(e.message).toBe(
      "pack.yaml: actions[0] uses unknown action 'copy'; use one of symlink, env, mkdir, rmdir, require, when, exec, or install the plugin that provides it.",
    );
    const nested = thrown(() => parseActionItem({ when: { os: "linux", actions: [{ copy: {} }] } }, "actions[0]"));
    expect(nested.kind).toBe("plugin");
    expect(nested.message).toContain("actions[0].when.actions[0] uses unknown action 'copy'");
  });
});

describe("collectNamedActions", () => {
  test("finds top-level and nested items, pruning when at any depth", () => {
    const items: ActionItem[] = [
      { exec: { cmd: ["a"] } },
      { when: { os: "linux", actions: [{ mkdir: { path: "x" } }, { when: { os: "linux", actions: [{ exec: { cmd: ["b"] } }, { env: { name: "A", value: "1" } }] } }] } },
      { when: { os: "macos", actions: [{ mkdir: { path: "y" } }] } },
    ];
    expect(collectNamedActions(items, "exec")).toEqual([
      { item: { exec: { cmd: ["a"] } }, idx: 0 },
      { item: { when: { os: "linux", actions: [{ when: { os: "linux", actions: [{ exec: { cmd: ["b"] } }] } }] } }, idx: 1 },
    ]);
    expect(collectNamedActions(items, "when").map((p) => p.idx)).toEqual([1, 2]);
    expect(collectNamedActions(items, "symlink")).toEqual([]);
  });
});
