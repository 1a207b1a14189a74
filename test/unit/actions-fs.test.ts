// symlink, mkdir, rmdir: apply → change, again → already satisfied, dry-run →
// nothing on disk, teardown → the tree is byte-identical to before (and a
// second teardown changes nothing). Everything happens in a temp dir; HOME is
// a temp dir too.
import { afterEach, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import { Confinement } from "../../src/core/fs/confine.ts";
import type { ActionItem, PackState } from "../../src/core/actions/types.ts";
import { modeSnapshot, noHooks, persisted, results } from "../helpers/actions.ts";
import { TmpDirs } from "../helpers/tmp.ts";

interface Sandbox {
  root: string;
  home: string;
  pack: string;
}

let sb: Sandbox;
// Every sandbox a test makes is removed, not only the last.
const sandboxes = new TmpDirs();
afterEach(() => sandboxes.cleanup());

function sandbox(): Sandbox {
  const root = sandboxes.make("grex-actions-fs-");
  const home = join(root, "home");
  const pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(join(pack, "files", "dir"), { recursive: true });
  writeFileSync(join(pack, "files", "app.conf"), "theme = dark\n");
  writeFileSync(join(pack, "files", "dir", "inner.txt"), "inner\n");
  sb = { root, home, pack };
  return sb;
}

function opts(state: PackState, extra: Partial<RunOptions> = {}): RunOptions {
  return {
    packId: "p",
    packDir: sb.pack,
    dryRun: false,
    env: { HOME: sb.home, PATH: process.env.PATH },
    signal: new AbortController().signal,
    state,
    processEnv: {},
    now: () => new Date("2030-01-02T03:04:05.678Z"),
    ...extra,
  };
}

/** Every path under `dir` with its kind, mode and content or link target. */

/** A state record as it would come back from the state file in a later process. */

/** The whole contract for a list of actions that should apply and undo cleanly. */
async function lifecycle(items: ActionItem[]): Promise<PackState> {
  const before = modeSnapshot(sb.root);
  const dryState: PackState = {};
  const dry = await runActions(items, opts(dryState, { dryRun: true }), noHooks);
  expect(dry.failed).toBeNull();
  expect(results(dry).every((r) => r === "would_perform_change")).toBe(true);
  expect(modeSnapshot(sb.root)).toEqual(before);
  expect(dryState).toEqual({});

  let state: PackState = {};
  const first = await runActions(items, opts(state), noHooks);
  expect(first.failed).toBeNull();
  expect(results(first).every((r) => r === "performed_change")).toBe(true);
  const applied = modeSnapshot(sb.root);
  expect(applied).not.toEqual(before);

  state = persisted(state);
  const again = await runActions(items, opts(state), noHooks);
  expect(results(again).every((r) => r === "already_satisfied")).toBe(true);
  const dryAgain = await runActions(items, opts(state, { dryRun: true }), noHooks);
  expect(results(dryAgain).every((r) => r === "already_satisfied")).toBe(true);
  expect(modeSnapshot(sb.root)).toEqual(applied);

  const keep = persisted(state);
  const td = await teardownActions(items, null, opts(state), noHooks);
  expect(td.failed).toBeNull();
  expect(results(td)).toContain("performed_change");
  expect(modeSnapshot(sb.root)).toEqual(before);
  const td2 = await teardownActions(items, null, opts(state), noHooks);
  expect(results(td2).every((r) => r === "already_satisfied" || r === "noop")).toBe(true);
  expect(modeSnapshot(sb.root)).toEqual(before);
  return keep;
}

describe("symlink", () => {
  test("file link into HOME: lifecycle", async () => {
    sandbox();
    mkdirSync(join(sb.home, ".config"));
    await lifecycle([{ symlink: { src: "files/app.conf", dst: "$HOME/.config/app.conf" } }]);
  });

  test("directory link with kind auto, and ~ in dst", async () => {
    sandbox();
    await lifecycle([{ symlink: { src: "files/dir", dst: "~/dir-link" } }]);
  });

  test("links point at the absolute source; normalize: false keeps src as written", async () => {
    sandbox();
    await runActions([{ symlink: { src: "files/./dir/../app.conf", dst: "$HOME/a" } }], opts({}), noHooks);
    expect(readlinkSync(join(sb.home, "a"))).toBe(join(sb.pack, "files/app.conf"));
    const r = await runActions([{ symlink: { src: "files/./app.conf", dst: "$HOME/b", normalize: false } }], opts({}), noHooks);
    expect(r.failed).toBeNull();
    expect(readlinkSync(join(sb.home, "b"))).toBe(`${sb.pack}/files/./app.conf`);
    expect(readFileSync(join(sb.home, "b"), "utf8")).toBe("theme = dark\n");
    const again = await runActions([{ symlink: { src: "files/./app.conf", dst: "$HOME/b", normalize: false } }], opts({}), noHooks);
    expect(results(again)).toEqual(["already_satisfied"]);
  });

  test("a src escaping the pack dir is rejected (.., absolute, via a symlink)", async () => {
    sandbox();
    writeFileSync(join(sb.root, "secret"), "s\n");
    symlinkSync(join(sb.root, "secret"), join(sb.pack, "files", "sneaky"));
    for (const src of ["../secret", join(sb.root, "secret"), "files/../../secret", "files/sneaky"]) {
      const before = modeSnapshot(sb.root);
      const r = await runActions([{ symlink: { src, dst: "$HOME/x" } }], opts({}), noHooks);
      expect(r.failed?.reason).toContain("points outside the pack directory");
      expect(r.failed?.reason).toContain("actions[0].symlink.src of pack 'p'");
      expect(modeSnapshot(sb.root)).toEqual(before);
    }
  });

  test("kind auto with a missing src is an error; kind file links a not-yet-existing src", async () => {
    sandbox();
    const auto = await runActions([{ symlink: { src: "files/missing", dst: "$HOME/m" } }], opts({}), noHooks);
    expect(auto.failed?.reason).toContain("does not exist (kind: auto");
    expect(existsSync(join(sb.home, "m"))).toBe(false);
    const before = modeSnapshot(sb.root);
    const state: PackState = {};
    const typed = await runActions([{ symlink: { src: "files/missing", dst: "$HOME/m", kind: "file" } }], opts(state), noHooks);
    expect(typed.failed).toBeNull();
    expect(lstatSync(join(sb.home, "m")).isSymbolicLink()).toBe(true);
    await teardownActions([{ symlink: { src: "files/missing", dst: "$HOME/m", kind: "file" } }], null, opts(state), noHooks);
    expect(modeSnapshot(sb.root)).toEqual(before);
  });

  test("kind must match an existing src", async () => {
    sandbox();
    const r = await runActions([{ symlink: { src: "files/dir", dst: "$HOME/d", kind: "file" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("is a directory but kind is file");
    const r2 = await runActions([{ symlink: { src: "files/app.conf", dst: "$HOME/d", kind: "directory" } }], opts({}), noHooks);
    expect(r2.failed?.reason).toContain("is not a directory but kind is directory");
  });

  test("an existing different dst is an error without backup and is left alone", async () => {
    sandbox();
    writeFileSync(join(sb.home, ".vimrc"), "mine\n");
    const before = modeSnapshot(sb.root);
    const r = await runActions([{ symlink: { src: "files/app.conf", dst: "$HOME/.vimrc" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("already exists (a file); set backup: true");
    expect(modeSnapshot(sb.root)).toEqual(before);
  });

  test("backup: true moves dst aside, teardown restores it byte for byte", async () => {
    sandbox();
    writeFileSync(join(sb.home, ".vimrc"), "mine\n");
    chmodSync(join(sb.home, ".vimrc"), 0o600);
    const state = await lifecycle([{ symlink: { src: "files/app.conf", dst: "$HOME/.vimrc", backup: true } }]);
    const backup = join(sb.home, ".vimrc.grex-bak.20300102T030405678Z");
    expect(state[`symlink:${join(sb.home, ".vimrc")}`]).toEqual({ target: join(sb.pack, "files/app.conf"), backup });
  });

  test("teardown without the state file restores the newest backup", async () => {
    sandbox();
    writeFileSync(join(sb.home, ".vimrc"), "old\n");
    writeFileSync(join(sb.home, ".vimrc.grex-bak.20200101T000000000Z"), "older backup\n");
    const items = [{ symlink: { src: "files/app.conf", dst: "$HOME/.vimrc", backup: true } }];
    await runActions(items, opts({}), noHooks);
    expect(readdirSync(sb.home).filter((n) => n.includes("grex-bak"))).toHaveLength(2);
    const td = await teardownActions(items, null, opts({}), noHooks);
    expect(results(td)).toEqual(["performed_change"]);
    expect(readFileSync(join(sb.home, ".vimrc"), "utf8")).toBe("old\n");
    expect(lstatSync(join(sb.home, ".vimrc")).isSymbolicLink()).toBe(false);
  });

  test("if creating the link fails, the backup is renamed back", async () => {
    sandbox();
    writeFileSync(join(sb.home, ".vimrc"), "mine\n");
    const before = modeSnapshot(sb.root);
    // A target longer than PATH_MAX: symlink(2) refuses it after the backup was made.
    const src = `files/${"d/".repeat(2100)}f`;
    const r = await runActions([{ symlink: { src, dst: "$HOME/.vimrc", backup: true, kind: "file" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("could not create the link");
    expect(modeSnapshot(sb.root)).toEqual(before);
  });

  test("a missing dst directory is an error, unless an earlier mkdir creates it (also in a dry run)", async () => {
    sandbox();
    const alone = await runActions([{ symlink: { src: "files/app.conf", dst: "$HOME/.config/x/app.conf" } }], opts({}), noHooks);
    expect(alone.failed?.reason).toContain("add a mkdir action for");
    const dryAlone = await runActions([{ symlink: { src: "files/app.conf", dst: "$HOME/.config/x/app.conf" } }], opts({}, { dryRun: true }), noHooks);
    expect(dryAlone.failed?.reason).toContain("add a mkdir action for");
    await lifecycle([{ mkdir: { path: "$HOME/.config/x" } }, { symlink: { src: "files/app.conf", dst: "$HOME/.config/x/app.conf" } }]);
  });

  test("teardown leaves a dst that is not our link alone", async () => {
    sandbox();
    const items = [{ symlink: { src: "files/app.conf", dst: "$HOME/.conf" } }];
    await runActions(items, opts({}), noHooks);
    rmSync(join(sb.home, ".conf"));
    writeFileSync(join(sb.home, ".conf"), "user replaced it\n");
    const td = await teardownActions(items, null, opts({}), noHooks);
    expect(results(td)).toEqual(["already_satisfied"]);
    expect(readFileSync(join(sb.home, ".conf"), "utf8")).toBe("user replaced it\n");
  });
});

describe("mkdir", () => {
  test("creates parents; teardown removes exactly what it created", async () => {
    sandbox();
    mkdirSync(join(sb.home, ".config"));
    const state = await lifecycle([{ mkdir: { path: "$HOME/.config/a/b/c" } }]);
    expect(state[`mkdir:${join(sb.home, ".config/a/b/c")}`]).toEqual([
      join(sb.home, ".config/a/b/c"),
      join(sb.home, ".config/a/b"),
      join(sb.home, ".config/a"),
    ]);
    expect(existsSync(join(sb.home, ".config"))).toBe(true);
  });

  test("mode is applied exactly (string or YAML number), default 755", async () => {
    sandbox();
    await runActions(
      [{ mkdir: { path: "$HOME/private", mode: "700" } }, { mkdir: { path: "$HOME/num", mode: 750 } }, { mkdir: { path: "rel" } }],
      // This sandbox's pack lies outside HOME: writing into it needs the user's opt-in.
      opts({}, { confine: new Confinement({ home: sb.home, workspaceRoot: null, packDirs: [sb.pack], allowOutsideHome: true }) }),
      noHooks,
    );
    expect(statSync(join(sb.home, "private")).mode & 0o777).toBe(0o700);
    expect(statSync(join(sb.home, "num")).mode & 0o777).toBe(0o750);
    expect(statSync(join(sb.pack, "rel")).mode & 0o777).toBe(0o755); // relative paths resolve against the pack
  });

  test("an existing directory is already satisfied and is never removed by teardown", async () => {
    sandbox();
    mkdirSync(join(sb.home, "mine"));
    const before = modeSnapshot(sb.root);
    const state: PackState = {};
    const r = await runActions([{ mkdir: { path: "$HOME/mine" } }], opts(state), noHooks);
    expect(results(r)).toEqual(["already_satisfied"]);
    const td = await teardownActions([{ mkdir: { path: "$HOME/mine" } }], null, opts(state), noHooks);
    expect(results(td)).toEqual(["already_satisfied"]);
    expect(modeSnapshot(sb.root)).toEqual(before);
  });

  test("a file in the way is an error", async () => {
    sandbox();
    writeFileSync(join(sb.home, "f"), "");
    expect((await runActions([{ mkdir: { path: "$HOME/f" } }], opts({}), noHooks)).failed?.reason).toContain("exists and is not a directory");
    expect((await runActions([{ mkdir: { path: "$HOME/f/sub" } }], opts({}), noHooks)).failed?.reason).toContain("is in the way");
  });

  test("teardown keeps a directory that is no longer empty (and its parents)", async () => {
    sandbox();
    const state: PackState = {};
    await runActions([{ mkdir: { path: "$HOME/a/b" } }], opts(state), noHooks);
    writeFileSync(join(sb.home, "a/b/user-file"), "keep\n");
    const td = await teardownActions([{ mkdir: { path: "$HOME/a/b" } }], null, opts(state), noHooks);
    expect(td.failed).toBeNull();
    expect(readFileSync(join(sb.home, "a/b/user-file"), "utf8")).toBe("keep\n");
  });
});

describe("rmdir", () => {
  test("absent is already satisfied", async () => {
    sandbox();
    const r = await runActions([{ rmdir: { path: "$HOME/nothing" } }], opts({}), noHooks);
    expect(results(r)).toEqual(["already_satisfied"]);
  });

  test("an empty directory is removed; teardown recreates it with its mode", async () => {
    sandbox();
    mkdirSync(join(sb.home, "empty"));
    chmodSync(join(sb.home, "empty"), 0o711);
    await lifecycle([{ rmdir: { path: "$HOME/empty" } }]);
  });

  test("a non-empty directory needs backup or force", async () => {
    sandbox();
    mkdirSync(join(sb.home, "full"));
    writeFileSync(join(sb.home, "full/x"), "x\n");
    const before = modeSnapshot(sb.root);
    const r = await runActions([{ rmdir: { path: "$HOME/full" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("is not empty; set backup: true");
    expect(modeSnapshot(sb.root)).toEqual(before);
  });

  test("backup moves it aside; teardown puts it back byte for byte", async () => {
    sandbox();
    mkdirSync(join(sb.home, "full/sub"), { recursive: true });
    writeFileSync(join(sb.home, "full/sub/x"), "x\n");
    const state = await lifecycle([{ rmdir: { path: "$HOME/full", backup: true } }]);
    expect(state[`rmdir:${join(sb.home, "full")}`]).toEqual({ backup: join(sb.home, "full.grex-bak.20300102T030405678Z") });
  });

  test("force deletes; there is nothing to restore", async () => {
    sandbox();
    mkdirSync(join(sb.home, "full"));
    writeFileSync(join(sb.home, "full/x"), "x\n");
    const state: PackState = {};
    const r = await runActions([{ rmdir: { path: "$HOME/full", force: true } }], opts(state), noHooks);
    expect(results(r)).toEqual(["performed_change"]);
    expect(existsSync(join(sb.home, "full"))).toBe(false);
    const td = await teardownActions([{ rmdir: { path: "$HOME/full", force: true } }], null, opts(state), noHooks);
    expect(results(td)).toEqual(["noop"]);
  });

  test("refuses HOME, the pack dir and its ancestors; a file is an error", async () => {
    sandbox();
    writeFileSync(join(sb.home, "f"), "");
    for (const path of ["$HOME", ".", sb.root]) {
      const r = await runActions([{ rmdir: { path, force: true } }], opts({}), noHooks);
      expect(r.failed?.reason).toContain("refusing actions[0].rmdir.path of pack 'p'");
    }
    expect((await runActions([{ rmdir: { path: "$HOME/f" } }], opts({}), noHooks)).failed?.reason).toContain("is not a directory");
    expect(existsSync(sb.pack)).toBe(true);
  });
});
