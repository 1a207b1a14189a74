// env: user scope managed blocks in the temp HOME's rc files (byte-exact
// teardown), machine scope (a temp file standing in for /etc/environment, and
// the clear error when it cannot be written), session scope.
import { afterEach, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type RunOptions, runActions, teardownActions } from "../../src/core/actions/executor.ts";
import type { ActionItem, PackState } from "../../src/core/actions/types.ts";
import { modeSnapshot, noHooks, persisted, results, sandboxRunOptions } from "../helpers/actions.ts";
import { TmpDirs } from "../helpers/tmp.ts";

let root: string;
let home: string;
let pack: string;
// Some tests make two sandboxes: every one is removed, not only the last.
const sandboxes = new TmpDirs();
afterEach(() => sandboxes.cleanup());

function sandbox(): void {
  root = sandboxes.make("grex-actions-env-");
  home = join(root, "home");
  pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(pack);
}

const opts = (state: PackState, extra: Partial<RunOptions> = {}): RunOptions => ({
  ...sandboxRunOptions(pack, home, state),
  now: undefined,
  machineEnvFile: join(root, "etc", "environment"),
  ...extra,
});

const read = (p: string) => readFileSync(p, "utf8");

async function lifecycle(items: ActionItem[], extra: Partial<RunOptions> = {}): Promise<void> {
  const before = modeSnapshot(root);
  const dry = await runActions(items, opts({}, { ...extra, dryRun: true }), noHooks);
  expect(results(dry)).toEqual(items.map(() => "would_perform_change"));
  expect(modeSnapshot(root)).toEqual(before);
  let state: PackState = {};
  const first = await runActions(items, opts(state, extra), noHooks);
  expect(first.failed).toBeNull();
  expect(results(first)).toEqual(items.map(() => "performed_change"));
  const applied = modeSnapshot(root);
  state = persisted(state);
  expect(results(await runActions(items, opts(state, extra), noHooks))).toEqual(items.map(() => "already_satisfied"));
  expect(modeSnapshot(root)).toEqual(applied);
  const td = await teardownActions(items, null, opts(state, extra), noHooks);
  expect(td.failed).toBeNull();
  expect(modeSnapshot(root)).toEqual(before);
  const td2 = await teardownActions(items, null, opts(state, extra), noHooks);
  expect(results(td2).every((r) => r === "already_satisfied" || r === "noop")).toBe(true);
  expect(modeSnapshot(root)).toEqual(before);
}

describe("env scope user", () => {
  test("creates ~/.bashrc with one managed block; teardown deletes the file it created", async () => {
    sandbox();
    const items = [{ env: { name: "EDITOR", value: "vim" } }];
    const state: PackState = {};
    await runActions(items, opts(state), noHooks);
    expect(read(join(home, ".bashrc"))).toBe("# >>> grex:env:EDITOR >>>\nexport EDITOR='vim'\n# <<< grex:env:EDITOR <<<\n");
    expect(existsSync(join(home, ".zshrc"))).toBe(false); // only if present
    await teardownActions(items, null, opts(state), noHooks);
    expect(existsSync(join(home, ".bashrc"))).toBe(false);
    sandbox();
    await lifecycle(items);
  });

  test("keeps the rest of .bashrc and .zshrc byte for byte (no final newline, CRLF, mode) and restores them exactly", async () => {
    sandbox();
    writeFileSync(join(home, ".bashrc"), "# mine\nalias ll='ls -l'"); // no final newline
    writeFileSync(join(home, ".zshrc"), "setopt x\r\nexport A=1\r\n");
    chmodSync(join(home, ".zshrc"), 0o600);
    const items = [
      { env: { name: "EDITOR", value: "vim" } },
      { env: { name: "GREX_X", value: "$HOME/bin" } },
    ];
    const state: PackState = {};
    await runActions(items, opts(state), noHooks);
    expect(read(join(home, ".bashrc"))).toBe(
      "# mine\nalias ll='ls -l'\n# >>> grex:env:EDITOR >>>\nexport EDITOR='vim'\n# <<< grex:env:EDITOR <<<\n" +
        `# >>> grex:env:GREX_X >>>\nexport GREX_X='${home}/bin'\n# <<< grex:env:GREX_X <<<\n`,
    );
    expect(read(join(home, ".zshrc"))).toStartWith("setopt x\r\nexport A=1\r\n# >>> grex:env:EDITOR >>>\r\nexport EDITOR='vim'\r\n");
    expect(statSync(join(home, ".zshrc")).mode & 0o777).toBe(0o600);
    sandbox();
    writeFileSync(join(home, ".bashrc"), "# mine\nalias ll='ls -l'");
    writeFileSync(join(home, ".zshrc"), "setopt x\r\nexport A=1\r\n");
    chmodSync(join(home, ".zshrc"), 0o600);
    await lifecycle(items);
  });

  test("the exported value survives shell quoting", async () => {
    sandbox();
    const value = `it's "$(touch pwned)" \\ $$HOME; ok`;
    await runActions([{ env: { name: "TRICKY", value } }], opts({}), noHooks);
    const r = Bun.spawnSync(["sh", "-c", '. "$1"; printf %s "$TRICKY"', "sh", join(home, ".bashrc")], { cwd: root, env: { HOME: home, PATH: process.env.PATH ?? "" } });
    expect(r.stdout.toString()).toBe(`it's "$(touch pwned)" \\ $HOME; ok`);
    expect(existsSync(join(root, "pwned"))).toBe(false);
  });

  test("fish config gets set -gx when present", async () => {
    sandbox();
    mkdirSync(join(home, ".config/fish"), { recursive: true });
    writeFileSync(join(home, ".config/fish/config.fish"), "set -U fish_greeting\n");
    const before = read(join(home, ".config/fish/config.fish"));
    const items = [{ env: { name: "EDITOR", value: "it's" } }];
    const state: PackState = {};
    await runActions(items, opts(state), noHooks);
    expect(read(join(home, ".config/fish/config.fish"))).toBe(
      `${before}# >>> grex:env:EDITOR >>>\nset -gx EDITOR 'it\\'s'\n# <<< grex:env:EDITOR <<<\n`,
    );
    await teardownActions(items, null, opts(persisted(state)), noHooks);
    expect(read(join(home, ".config/fish/config.fish"))).toBe(before);
  });

  test("an rc file that is a symlink is edited through the link, which stays", async () => {
    sandbox();
    mkdirSync(join(root, "dotfiles"));
    writeFileSync(join(root, "dotfiles/bashrc"), "# dotfiles\n");
    symlinkSync(join(root, "dotfiles/bashrc"), join(home, ".bashrc"));
    await lifecycle([{ env: { name: "EDITOR", value: "vim" } }]);
    const state: PackState = {};
    await runActions([{ env: { name: "EDITOR", value: "vim" } }], opts(state), noHooks);
    expect(lstatSync(join(home, ".bashrc")).isSymbolicLink()).toBe(true);
    expect(read(join(root, "dotfiles/bashrc"))).toContain("export EDITOR='vim'");
  });

  test("a changed value rewrites the block in place; teardown restores the block that was there before grex", async () => {
    sandbox();
    const earlier = "a\n# >>> grex:env:EDITOR >>>\nexport EDITOR='nano'\n# <<< grex:env:EDITOR <<<\nb\n";
    writeFileSync(join(home, ".bashrc"), earlier);
    let state: PackState = {};
    await runActions([{ env: { name: "EDITOR", value: "vim" } }], opts(state), noHooks);
    expect(read(join(home, ".bashrc"))).toBe(earlier.replace("nano", "vim"));
    state = persisted(state);
    await runActions([{ env: { name: "EDITOR", value: "emacs" } }], opts(state), noHooks); // pack changed its value
    expect(read(join(home, ".bashrc"))).toBe(earlier.replace("nano", "emacs"));
    const td = await teardownActions([{ env: { name: "EDITOR", value: "emacs" } }], null, opts(persisted(state)), noHooks);
    expect(results(td)).toEqual(["performed_change"]);
    expect(read(join(home, ".bashrc"))).toBe(earlier);
    // The restored block is not grex's value any more: a second teardown leaves it.
    const td2 = await teardownActions([{ env: { name: "EDITOR", value: "emacs" } }], null, opts({}), noHooks);
    expect(results(td2)).toEqual(["already_satisfied"]);
    expect(read(join(home, ".bashrc"))).toBe(earlier);
  });

  test("an unclosed marker is a clear failure and nothing is written", async () => {
    sandbox();
    writeFileSync(join(home, ".bashrc"), "# >>> grex:env:EDITOR >>>\nexport EDITOR=x\n");
    const before = modeSnapshot(root);
    const r = await runActions([{ env: { name: "EDITOR", value: "vim" } }], opts({}), noHooks);
    expect(r.failed?.reason).toContain("unclosed '# >>> grex:env:EDITOR >>>' block (line 1)");
    expect(modeSnapshot(root)).toEqual(before);
  });

  test("schema: a bad name or a multi-line value is rejected", async () => {
    sandbox();
    expect((await runActions([{ env: { name: "1BAD", value: "x" } }], opts({}), noHooks)).failed?.reason).toContain(
      "actions[0].env.name must be a variable name",
    );
    expect((await runActions([{ env: { name: "OK", value: "a\nb" } }], opts({}), noHooks)).failed?.reason).toContain(
      "actions[0].env.value must be a single line",
    );
  });
});

describe("env scope machine", () => {
  test("writes NAME='value' in a managed block; teardown restores the file exactly", async () => {
    sandbox();
    mkdirSync(join(root, "etc"));
    writeFileSync(join(root, "etc/environment"), 'PATH="/usr/bin:/bin"\n');
    const state: PackState = {};
    await runActions([{ env: { name: "GREX_M", value: "1", scope: "machine" } }], opts(state), noHooks);
    expect(read(join(root, "etc/environment"))).toBe('PATH="/usr/bin:/bin"\n# >>> grex:env:GREX_M >>>\nGREX_M=\'1\'\n# <<< grex:env:GREX_M <<<\n');
    expect(existsSync(join(home, ".bashrc"))).toBe(false);
    await teardownActions([{ env: { name: "GREX_M", value: "1", scope: "machine" } }], null, opts(persisted(state)), noHooks);
    expect(read(join(root, "etc/environment"))).toBe('PATH="/usr/bin:/bin"\n');
    await lifecycle([{ env: { name: "GREX_M", value: "1", scope: "machine" } }]);
  });

  test("a file this user cannot write is a clear error naming it (via option or GREX_MACHINE_ENV_FILE)", async () => {
    sandbox();
    const target = join(root, "no-such-dir", "environment");
    const before = modeSnapshot(root);
    const r = await runActions([{ env: { name: "GREX_M", value: "1", scope: "machine" } }], opts({}, { machineEnvFile: target }), noHooks);
    expect(r.failed?.reason).toBe(
      `env scope machine writes ${target}, which this user cannot write; run grex as root (sudo) or use scope: user`,
    );
    const viaEnv = await runActions(
      [{ env: { name: "GREX_M", value: "1", scope: "machine" } }],
      { ...opts({}), machineEnvFile: undefined, env: { HOME: home, GREX_MACHINE_ENV_FILE: target } },
      noHooks,
    );
    expect(viaEnv.failed?.reason).toContain(`writes ${target}, which this user cannot write`);
    expect(modeSnapshot(root)).toEqual(before);
  });

  test("when not root, the real /etc/environment is refused with that error", async () => {
    sandbox();
    if (process.getuid?.() === 0) return; // root may write it; the test above covers the error path
    const r = await runActions([{ env: { name: "GREX_M", value: "1", scope: "machine" } }], { ...opts({}), machineEnvFile: undefined }, noHooks);
    expect(r.failed?.reason).toContain("/etc/environment, which this user cannot write");
  });

  test("a quote character in the value is refused", async () => {
    sandbox();
    for (const value of ['a"b', "a'b"]) {
      const r = await runActions([{ env: { name: "GREX_M", value, scope: "machine" } }], opts({}), noHooks);
      expect(r.failed?.reason).toContain("contains a quote character");
    }
  });

  test("sourcing the machine file or the rc block never runs a command from a value", async () => {
    sandbox();
    mkdirSync(join(root, "etc"));
    const marker = join(root, "ran");
    const value = `$(touch ${marker})\`touch ${marker}\`;$HOME`;
    await runActions(
      [{ env: { name: "GREX_M", value: value.replaceAll("$", () => "$$"), scope: "machine" } }, { env: { name: "GREX_U", value: value.replaceAll("$", () => "$$") } }],
      opts({}),
      noHooks,
    );
    for (const file of [join(root, "etc/environment"), join(home, ".bashrc")]) {
      const r = Bun.spawnSync(["sh", "-c", `. "${file}"; printf '%s|%s' "$GREX_M" "$GREX_U"`], { env: { PATH: process.env.PATH ?? "" } });
      expect(r.exitCode).toBe(0);
      expect(existsSync(marker)).toBe(false);
      expect(r.stdout.toString().split("|").filter(Boolean)).toEqual([value]);
    }
  });
});

describe("env scope session", () => {
  test("sets this process's variable and the run's env; later actions see it; rollback and teardown restore", async () => {
    sandbox();
    const processEnv: Record<string, string | undefined> = { KEEP: "1", GREX_S: "before" };
    const env: Record<string, string | undefined> = { HOME: home, PATH: process.env.PATH, GREX_S: "before" };
    const items = [
      { env: { name: "GREX_S", value: "after", scope: "session" } },
      { env: { name: "GREX_NEW", value: "$GREX_S-x", scope: "session" } },
    ];
    const sessionSaved = new Map<string, string | undefined>(); // one call's context across its runs
    const r = await runActions(items, opts({}, { processEnv, env, sessionSaved }), noHooks);
    expect(r.failed).toBeNull();
    expect(processEnv).toEqual({ KEEP: "1", GREX_S: "after", GREX_NEW: "after-x" });
    expect(env.GREX_NEW).toBe("after-x");
    expect(results(await runActions(items, opts({}, { processEnv, env, sessionSaved }), noHooks))).toEqual(["already_satisfied", "already_satisfied"]);
    const td = await teardownActions(items, null, opts({}, { processEnv, env, sessionSaved }), noHooks);
    expect(results(td)).toEqual(["performed_change", "performed_change"]);
    expect(processEnv).toEqual({ KEEP: "1", GREX_S: "before" });
    expect("GREX_NEW" in processEnv).toBe(false);

    // A later failure rolls the session change back.
    const failing = [items[0] as ActionItem, { mkdir: { path: "/dev/null/x" } }];
    const f = await runActions(failing, opts({}, { processEnv, env }), noHooks);
    expect(f.failed?.idx).toBe(1);
    expect(processEnv.GREX_S).toBe("before");
    expect(env.GREX_S).toBe("before");
  });

  test("dry run changes nothing", async () => {
    sandbox();
    const processEnv: Record<string, string | undefined> = {};
    const r = await runActions([{ env: { name: "GREX_S", value: "v", scope: "session" } }], opts({}, { processEnv, dryRun: true }), noHooks);
    expect(results(r)).toEqual(["would_perform_change"]);
    expect(processEnv).toEqual({});
  });
});
