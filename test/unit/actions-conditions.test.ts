// require and when: predicates, nestable combiners, Windows-only predicates
// off Windows, on_fail modes, skipped nested actions, teardown of `when`.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import { parseActionItem } from "../../src/core/actions/index.ts";
import type { ActionItem, PackState } from "../../src/core/actions/types.ts";
import { GrexError } from "../../src/core/base/errors.ts";
import type { OsName } from "../../src/core/base/os.ts";
import { noHooks, results } from "../helpers/actions.ts";

let root: string;
let home: string;
let pack: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function sandbox(): void {
  root = mkdtempSync(join(tmpdir(), "grex-actions-cond-"));
  home = join(root, "home");
  pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(join(pack, "files"), { recursive: true });
  writeFileSync(join(pack, "files", "app.conf"), "x\n");
  mkdirSync(join(root, "bin"));
  writeFileSync(join(root, "bin", "grex-fake-tool"), "#!/bin/sh\n");
  chmodSync(join(root, "bin", "grex-fake-tool"), 0o755);
  writeFileSync(join(root, "bin", "not-executable"), "");
}

function opts(extra: Partial<RunOptions> = {}, state: PackState = {}): RunOptions {
  return {
    packId: "p",
    packDir: pack,
    dryRun: false,
    env: { HOME: home, PATH: `${join(root, "bin")}:/usr/bin:/bin` },
    signal: new AbortController().signal,
    state,
    processEnv: {},
    os: "linux",
    ...extra,
  };
}

/** Whether `require: {<cond>}` holds (on_fail: warn turns "no" into a noop step). */
async function holds(cond: Record<string, unknown>, os: OsName = "linux"): Promise<boolean> {
  const r = await runActions([{ require: { ...cond, on_fail: "warn" } }], opts({ os }), noHooks);
  if (r.failed) throw new Error(r.failed.reason);
  return r.steps[0]?.result === "already_satisfied";
}

describe("predicates", () => {
  test("path_exists resolves against the pack dir and expands variables", async () => {
    sandbox();
    expect(await holds({ path_exists: "files/app.conf" })).toBe(true);
    expect(await holds({ path_exists: "files/nope" })).toBe(false);
    expect(await holds({ path_exists: "$HOME" })).toBe(true);
    expect(await holds({ path_exists: "~" })).toBe(true);
  });

  test("cmd_available searches PATH without a shell", async () => {
    sandbox();
    expect(await holds({ cmd_available: "grex-fake-tool" })).toBe(true);
    expect(await holds({ cmd_available: "not-executable" })).toBe(false);
    expect(await holds({ cmd_available: "grex-definitely-missing" })).toBe(false);
    expect(await holds({ cmd_available: `${join(root, "bin", "grex-fake-tool")}` })).toBe(true);
    // A shell would run this; a PATH lookup just fails.
    expect(await holds({ cmd_available: "sh; touch pwned" })).toBe(false);
    expect(await holds({ cmd_available: "$(touch pwned2)" })).toBe(false);
    expect(existsSync(join(pack, "pwned"))).toBe(false);
  });

  test("Windows-only checks run the stock tools; where they are missing (here, off Windows) the check is false", async () => {
    sandbox(); // the pack's PATH holds neither reg.exe nor pwsh/powershell
    expect(await holds({ reg_key: { path: "HKCU/Software/grex-test" } }, "windows")).toBe(false);
    expect(await holds({ psversion: ">=999" }, "windows")).toBe(false); // false with or without a PowerShell here
  });

  test("os and symlink_ok", async () => {
    sandbox();
    expect(await holds({ os: "linux" })).toBe(true);
    expect(await holds({ os: "macos" })).toBe(false);
    expect(await holds({ os: "windows" }, "windows")).toBe(true);
  });

  test("symlink_ok {src, dst}: holds when dst is a symlink pointing at src", async () => {
    sandbox();
    const cond = { symlink_ok: { src: "files/app.conf", dst: "$HOME/app.conf" } };
    expect(await holds(cond)).toBe(false); // no link yet
    writeFileSync(join(home, "app.conf"), "a plain file\n");
    expect(await holds(cond)).toBe(false); // not a symlink
    rmSync(join(home, "app.conf"));
    symlinkSync(join(pack, "files", "other"), join(home, "app.conf"));
    expect(await holds(cond)).toBe(false); // points elsewhere
    rmSync(join(home, "app.conf"));
    symlinkSync(join(pack, "files", "app.conf"), join(home, "app.conf"));
    expect(await holds(cond)).toBe(true);
    rmSync(join(home, "app.conf"));
    symlinkSync(join("..", "pack", "files", "app.conf"), join(home, "app.conf")); // a relative target, same file
    expect(await holds(cond)).toBe(true);
  });

  test("reg_key and psversion off Windows: an error on their own, false inside a combiner", async () => {
    sandbox();
    for (const cond of [{ reg_key: { path: "HKCU\\Software\\Grex", name: "X" } }, { psversion: ">=5.1" }]) {
      const key = Object.keys(cond)[0] as string;
      for (const on_fail of ["error", "skip", "warn"]) {
        const r = await runActions([{ require: { ...cond, on_fail } }], opts(), noHooks);
        expect(r.failed?.reason).toBe(
          `actions[0].require.${key} of pack 'p' is not supported on linux (it is Windows only); put it inside any_of/all_of/none_of, where it counts as false, or guard it with when: {os: windows}`,
        );
      }
      expect(await holds({ any_of: [cond, { os: "linux" }] })).toBe(true);
      expect(await holds({ all_of: [cond] })).toBe(false);
      expect(await holds({ none_of: [cond] })).toBe(true);
    }
  });
});

describe("combiners", () => {
  test("all_of / any_of / none_of nest", async () => {
    sandbox();
    expect(await holds({ all_of: [{ os: "linux" }, { path_exists: "files/app.conf" }] })).toBe(true);
    expect(await holds({ all_of: [{ os: "linux" }, { path_exists: "files/nope" }] })).toBe(false);
    expect(await holds({ any_of: [{ os: "macos" }, { os: "windows" }] })).toBe(false);
    expect(await holds({ none_of: [{ os: "macos" }, { os: "windows" }] })).toBe(true);
    expect(
      await holds({
        all_of: [{ any_of: [{ os: "macos" }, { none_of: [{ cmd_available: "grex-definitely-missing" }] }] }, { path_exists: "files" }],
      }),
    ).toBe(true);
    // Several top-level keys are a conjunction.
    expect(await holds({ os: "linux", path_exists: "files/nope" })).toBe(false);
  });

  test("invalid conditions are integrity errors naming the nested field", () => {
    const err = (item: unknown): GrexError => {
      try {
        parseActionItem(item, "actions[0]");
      } catch (e) {
        if (e instanceof GrexError) return e;
      }
      throw new Error("expected a GrexError");
    };
    const e1 = err({ require: { all_of: [{ os: "linux" }, { any_of: [{ bogus: 1 }] }] } });
    expect(e1.kind).toBe("integrity");
    expect(e1.message).toContain("actions[0].require.all_of[1].any_of[0].bogus is not a known condition");
    expect(err({ require: { any_of: [{ os: "beos" }] } }).message).toContain("actions[0].require.any_of[0].os must be linux, macos or windows");
    expect(err({ require: { all_of: [{ os: "linux", path_exists: "x" }] } }).message).toContain("has 2 keys but a condition takes exactly one");
    expect(err({ require: { on_fail: "skip" } }).message).toContain("actions[0].require needs a condition");
    expect(err({ require: { os: "linux", on_fail: "explode" } }).message).toContain("actions[0].require.on_fail must be one of");
    expect(err({ require: { all_of: "linux" } }).message).toContain("actions[0].require.all_of must be a list of conditions");
    expect(err({ when: { actions: [] } }).message).toContain("actions[0].when needs a condition");
    expect(err({ when: { path_exists: "x", actions: [] } }).message).toContain("actions[0].when.path_exists is not a known field");
  });

  test("the Rust grex's forms: rejected shapes name the accepted one", () => {
    const msg = (item: ActionItem) => {
      try {
        parseActionItem(item, "actions[0]");
      } catch (e) {
        if (e instanceof GrexError && e.kind === "integrity") return e.message;
      }
      throw new Error("expected an integrity error");
    };
    const ok = (item: ActionItem) => expect(() => parseActionItem(item, "actions[0]")).not.toThrow();
    const any = (cond: Record<string, unknown>): ActionItem => ({ require: { any_of: [cond] } });
    // reg_key: only {path, name?}
    ok(any({ reg_key: { path: "HKCU\\Software\\X" } }));
    ok(any({ reg_key: { path: "HKCU/Software/X", name: "V" } }));
    ok(any({ reg_key: { path: "HKCU\\Software\\X", name: null } }));
    expect(msg(any({ reg_key: "HKCU\\Software\\X!V" }))).toContain("actions[0].require.any_of[0].reg_key must be a mapping such as {path:");
    expect(msg(any({ reg_key: { name: "V" } }))).toContain("reg_key.path must be a non-empty string");
    expect(msg(any({ reg_key: { path: "HKCU\\X", value: "V" } }))).toContain("reg_key.value is not a known field (allowed: path, name)");
    // symlink_ok: only {src, dst}
    ok(any({ symlink_ok: { src: "files/a", dst: "$HOME/a" } }));
    expect(msg(any({ symlink_ok: true }))).toContain("symlink_ok must be a mapping such as {src:");
    expect(msg(any({ symlink_ok: { src: "files/a" } }))).toContain("symlink_ok.dst must be a non-empty string");
    // psversion: a requirement with an optional operator, in require and in when
    for (const spec of [">=5.1", ">= 7", "7.2", "<7", "<=7.4", ">5", "=7.2", "==7.2.0", 5.1]) ok(any({ psversion: spec }));
    ok({ when: { os: "windows", all_of: [{ psversion: ">=7.0" }], actions: [] } });
    for (const spec of ["about 5", ">=", "~7", "5.x", true]) expect(msg(any({ psversion: spec }))).toContain('psversion must be a version requirement such as ">=5.1"');
  });

  test("conditions may nest up to 31 lists deep (the Rust grex's limit of 32), in require and in when", () => {
    const nest = (lists: number): Record<string, unknown> => {
      let cond: Record<string, unknown> = { os: "linux" };
      for (let i = 1; i < lists; i++) cond = { all_of: [cond] };
      return cond;
    };
    expect(() => parseActionItem({ require: { all_of: [nest(31)] } }, "actions[0]")).not.toThrow();
    expect(() => parseActionItem({ when: { any_of: [nest(31)], actions: [] } }, "actions[0]")).not.toThrow();
    for (const item of [{ require: { all_of: [nest(32)] } }, { when: { none_of: [nest(34)], actions: [] } }]) {
      let message = "";
      try {
        parseActionItem(item, "actions[0]");
      } catch (e) {
        if (e instanceof GrexError && e.kind === "integrity") message = e.message;
      }
      expect(message).toContain("nests conditions 32 or more lists deep, over the limit");
    }
    // An empty list that deep holds nothing deeper: accepted, like the Rust grex.
    expect(() => parseActionItem({ require: { all_of: [{ all_of: [] }] } }, "actions[0]")).not.toThrow();
  });
});

describe("require on_fail", () => {
  test("error fails the pack; skip stops it (skipped, earlier changes kept); warn carries on", async () => {
    sandbox();
    const missing = { cmd_available: "grex-definitely-missing" };
    const err = await runActions([{ mkdir: { path: "$HOME/a" } }, { require: missing }], opts(), noHooks);
    expect(err.failed).toMatchObject({ idx: 1, action: "require" });
    expect(err.failed?.reason).toContain("requirement not met (cmd_available: \"grex-definitely-missing\")");
    expect(existsSync(join(home, "a"))).toBe(false); // rolled back

    const skip = await runActions(
      [{ mkdir: { path: "$HOME/a" } }, { require: { ...missing, on_fail: "skip" } }, { mkdir: { path: "$HOME/b" } }],
      opts(),
      noHooks,
    );
    expect(skip.failed).toBeNull();
    expect(skip.skipped).toBe(true);
    expect(results(skip)).toEqual(["performed_change", "skipped"]);
    expect(existsSync(join(home, "a"))).toBe(true);
    expect(existsSync(join(home, "b"))).toBe(false);

    const warn = await runActions([{ require: { ...missing, on_fail: "warn" } }, { mkdir: { path: "$HOME/c" } }], opts(), noHooks);
    expect(warn.skipped).toBe(false);
    expect(results(warn)).toEqual(["noop", "performed_change"]);
    expect(warn.steps[0]?.details.warning).toContain("requirement not met");
  });
});

describe("when", () => {
  const items: ActionItem[] = [
    { when: { os: "linux", actions: [{ mkdir: { path: "$HOME/unix" } }, { mkdir: { path: "$HOME/unix/sub" } }] } },
    { when: { os: "windows", actions: [{ mkdir: { path: "$HOME/win" } }] } },
    { when: { any_of: [{ os: "macos" }, { path_exists: "files/app.conf" }], none_of: [{ os: "windows" }], actions: [{ mkdir: { path: "$HOME/both" } }] } },
  ];

  test("nested actions run only when every condition holds; otherwise the step is skipped", async () => {
    sandbox();
    const state: PackState = {};
    const r = await runActions(items, opts({}, state), noHooks);
    expect(r.failed).toBeNull();
    expect(r.steps.map((s) => [s.action, s.idx, s.result, s.details.nested ?? null])).toEqual([
      ["when", 0, "performed_change", null],
      ["mkdir", 0, "performed_change", "actions[0].when.actions[0]"],
      ["mkdir", 0, "performed_change", "actions[0].when.actions[1]"],
      ["when", 1, "skipped", null],
      ["when", 2, "performed_change", null],
      ["mkdir", 2, "performed_change", "actions[2].when.actions[0]"],
    ]);
    expect(existsSync(join(home, "unix/sub"))).toBe(true);
    expect(existsSync(join(home, "win"))).toBe(false);
    const again = await runActions(items, opts({}, state), noHooks);
    expect(again.steps.filter((s) => s.action === "when").map((s) => s.result)).toEqual(["already_satisfied", "skipped", "already_satisfied"]);
    const dry = await runActions(items, opts({ dryRun: true }, state), noHooks);
    expect(dry.steps.every((s) => s.result === "already_satisfied" || s.result === "skipped")).toBe(true);

    const td = await teardownActions(items, null, opts({}, JSON.parse(JSON.stringify(state)) as PackState), noHooks);
    expect(td.failed).toBeNull();
    expect(td.steps.filter((s) => s.action === "when").map((s) => [s.idx, s.result])).toEqual([
      [2, "performed_change"],
      [1, "skipped"],
      [0, "performed_change"],
    ]);
    expect(existsSync(join(home, "unix"))).toBe(false);
    expect(existsSync(join(home, "both"))).toBe(false);
    const td2 = await teardownActions(items, null, opts(), noHooks);
    expect(td2.steps.every((s) => ["already_satisfied", "noop", "skipped"].includes(s.result))).toBe(true);
  });

  test("in a dry run, nested changes are reported and nothing is made", async () => {
    sandbox();
    const r = await runActions(items, opts({ dryRun: true }), noHooks);
    expect(results(r)).toEqual([
      "would_perform_change",
      "would_perform_change",
      "would_perform_change",
      "skipped",
      "would_perform_change",
      "would_perform_change",
    ]);
    expect(existsSync(join(home, "unix"))).toBe(false);
  });

  test("a failing nested action fails the when and rolls back its siblings and earlier actions", async () => {
    sandbox();
    writeFileSync(join(home, "file"), "");
    const r = await runActions(
      [
        { mkdir: { path: "$HOME/first" } },
        { when: { os: "linux", actions: [{ mkdir: { path: "$HOME/nested" } }, { mkdir: { path: "$HOME/file" } }] } },
      ],
      opts(),
      noHooks,
    );
    expect(r.failed).toMatchObject({ idx: 1, action: "when" });
    expect(r.failed?.reason).toContain("exists and is not a directory");
    expect(existsSync(join(home, "first"))).toBe(false);
    expect(existsSync(join(home, "nested"))).toBe(false);
    const rollbacks = r.steps.filter((s) => s.details.rollback !== undefined).map((s) => [s.action, s.idx]);
    expect(rollbacks).toEqual([
      ["mkdir", 1],
      ["mkdir", 0],
    ]);
  });

  test("a require with on_fail: skip inside when stops the pack", async () => {
    sandbox();
    const r = await runActions(
      [
        { when: { os: "linux", actions: [{ require: { os: "macos", on_fail: "skip" } }, { mkdir: { path: "$HOME/no" } }] } },
        { mkdir: { path: "$HOME/no2" } },
      ],
      opts(),
      noHooks,
    );
    expect(r.skipped).toBe(true);
    expect(existsSync(join(home, "no"))).toBe(false);
    expect(existsSync(join(home, "no2"))).toBe(false);
  });
});
