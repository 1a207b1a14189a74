// exec: argv without a shell, cmd_shell with shell: true, cwd confinement, env
// map, on_fail modes, the 2 KiB stderr tail, dry run, and cancellation killing
// the child's whole process group.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ActionHooks, type RunOptions, runActions } from "../../src/core/actions/executor.ts";
import type { PackState, Step } from "../../src/core/actions/types.ts";
import { GrexError } from "../../src/core/base/errors.ts";
import { sandboxRunOptions } from "../helpers/actions.ts";
import { running } from "../helpers/process.ts";

let root: string;
let home: string;
let pack: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function sandbox(): void {
  root = mkdtempSync(join(tmpdir(), "grex-actions-exec-"));
  home = join(root, "home");
  pack = join(root, "pack");
  mkdirSync(home);
  mkdirSync(join(pack, "sub"), { recursive: true });
}

interface Halt {
  idx: number;
  action: string;
  reason: string;
  stderr: string;
}

function recorder(): ActionHooks & { events: string[]; halts: Halt[] } {
  const events: string[] = [];
  const halts: Halt[] = [];
  return {
    events,
    halts,
    onStarted: async (idx, action) => void events.push(`started ${idx} ${action}`),
    onCompleted: async (idx, action, changed) => void events.push(`completed ${idx} ${action} ${changed}`),
    onHalted: async (idx, action, reason, stderr) => {
      events.push(`halted ${idx} ${action}`);
      halts.push({ idx, action, reason, stderr });
    },
  };
}

const opts = (extra: Partial<RunOptions> = {}, state: PackState = {}): RunOptions => ({
  ...sandboxRunOptions(pack, home, state),
  now: undefined,
  ...extra,
});


const only = (r: { steps: Step[] }): Step => {
  expect(r.steps).toHaveLength(1);
  return r.steps[0] as Step;
};

describe("exec", () => {
  test("argv is not interpreted by a shell: ; $(...) ` and globs are plain arguments", async () => {
    sandbox();
    const arg = "a; touch pwned1 $(touch pwned2) `touch pwned3` * && touch pwned4";
    const r = await runActions([{ exec: { cmd: ["printf", "%s", arg] } }], opts(), recorder());
    const s = only(r);
    expect(s.result).toBe("performed_change");
    expect(s.details.stdout).toBe(arg);
    expect(s.details.exit).toBe(0);
    for (const f of ["pwned1", "pwned2", "pwned3", "pwned4"]) expect(existsSync(join(pack, f))).toBe(false);
  });

  test("grex expands variables in argv ($$ stays a literal dollar for the program)", async () => {
    sandbox();
    const r = await runActions([{ exec: { cmd: ["sh", "-c", 'printf "%s|%s" "$1" "$$HOME"', "sh", "$HOME/x"] } }], opts(), recorder());
    expect(only(r).details.stdout).toBe(`${home}/x|${home}`);
  });

  test("cmd_shell runs through the shell and needs shell: true", async () => {
    sandbox();
    const r = await runActions([{ exec: { cmd_shell: "echo one > out.txt; echo two >> out.txt", shell: true } }], opts(), recorder());
    expect(r.failed).toBeNull();
    expect(readFileSync(join(pack, "out.txt"), "utf8")).toBe("one\ntwo\n");
    const bad = await runActions([{ exec: { cmd_shell: "echo hi" } }], opts(), recorder());
    expect(bad.failed?.reason).toContain("actions[0].exec has cmd_shell but not shell: true");
    const both = await runActions([{ exec: { cmd: ["true"], cmd_shell: "true", shell: true } }], opts(), recorder());
    expect(both.failed?.reason).toContain("takes exactly one of cmd");
  });

  test("cwd defaults to the pack dir, may be a subdirectory or HOME, and nothing the confinement rule refuses", async () => {
    sandbox();
    expect(only(await runActions([{ exec: { cmd: ["pwd"] } }], opts(), recorder())).details.stdout).toBe(`${pack}\n`);
    expect(only(await runActions([{ exec: { cmd: ["pwd"], cwd: "sub" } }], opts(), recorder())).details.stdout).toBe(`${join(pack, "sub")}\n`);
    expect(only(await runActions([{ exec: { cmd: ["pwd"], cwd: "$HOME" } }], opts(), recorder())).details.stdout).toBe(`${home}\n`);
    const out = await runActions([{ exec: { cmd: ["pwd"], cwd: ".." } }], opts(), recorder());
    expect(out.failed?.reason).toContain("refusing actions[0].exec.cwd of pack 'p' ('..', real path");
    expect(out.steps[0]?.details.refused).toBe("holds-protected"); // the sandbox root holds HOME
    const missing = await runActions([{ exec: { cmd: ["pwd"], cwd: "nope" } }], opts(), recorder());
    expect(missing.failed?.reason).toContain("does not exist");
  });

  test("the env map is added to the environment, with variables expanded", async () => {
    sandbox();
    const r = await runActions(
      [{ exec: { cmd: ["sh", "-c", 'printf "%s %s %s" "$$FOO" "$$NUM" "$$HOME"'], env: { FOO: "${HOME}/foo", NUM: 3 } } }],
      opts(),
      recorder(),
    );
    expect(only(r).details.stdout).toBe(`${home}/foo 3 ${home}`);
  });

  test("non-zero exit: error fails with the stderr tail in onHalted; warn and ignore carry on", async () => {
    sandbox();
    const h = recorder();
    const r = await runActions([{ exec: { cmd: ["sh", "-c", "echo out; echo boom >&2; exit 3"] } }], opts(), h);
    expect(r.failed).toEqual({ idx: 0, action: "exec", reason: "`sh -c echo out; echo boom >&2; exit 3` exited 3" });
    expect(h.halts).toEqual([{ idx: 0, action: "exec", reason: r.failed?.reason ?? "", stderr: "boom\n" }]);
    expect(h.events).toEqual(["started 0 exec", "halted 0 exec"]);

    const warn = await runActions([{ exec: { cmd: ["sh", "-c", "exit 2"], on_fail: "warn" } }, { exec: { cmd: ["true"] } }], opts(), recorder());
    expect(warn.failed).toBeNull();
    expect(warn.steps.map((s) => s.result)).toEqual(["performed_change", "performed_change"]);
    expect(warn.steps[0]?.details.warning).toBe("`sh -c exit 2` exited 2");
    const ignore = await runActions([{ exec: { cmd: ["false"], on_fail: "ignore" } }], opts(), recorder());
    expect(ignore.failed).toBeNull();
    expect(only(ignore).details.exit).toBe(1);
  });

  test("the stderr tail is at most 2 KiB and is the end of the output", async () => {
    sandbox();
    const h = recorder();
    // `$$` because grex expands $VAR in argv: the shell must see `$i`.
    const script = 'i=0; while [ $$i -lt 500 ]; do echo "line $$i é" >&2; i=$$((i+1)); done; echo LAST >&2; exit 1';
    const r = await runActions([{ exec: { cmd: ["sh", "-c", script] } }], opts(), h);
    expect(r.failed).not.toBeNull();
    const tail = h.halts[0]?.stderr ?? "";
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(2048);
    expect(Buffer.byteLength(tail)).toBeGreaterThan(2000);
    expect(tail.endsWith("LAST\n")).toBe(true);
    expect(tail).not.toContain("\uFFFD"); // never cut inside a UTF-8 sequence
  });

  test("a missing program fails clearly (or is a noop with a warning when ignored)", async () => {
    sandbox();
    const r = await runActions([{ exec: { cmd: ["grex-no-such-program-xyz"] } }], opts(), recorder());
    expect(r.failed?.reason).toBe("command not found: grex-no-such-program-xyz; install it or fix the path");
    const ign = await runActions([{ exec: { cmd: ["grex-no-such-program-xyz"], on_fail: "ignore" } }], opts(), recorder());
    expect(only(ign).result).toBe("noop");
  });

  test("dry run runs nothing", async () => {
    sandbox();
    const h = recorder();
    const r = await runActions([{ exec: { cmd: ["touch", "made"] } }], opts({ dryRun: true }), h);
    expect(only(r).result).toBe("would_perform_change");
    expect(only(r).details.cmd).toEqual(["touch", "made"]);
    expect(existsSync(join(pack, "made"))).toBe(false);
    expect(h.events).toEqual([]); // no brackets in a dry run
  });

  test("abort kills the child and its grandchildren, rolls back, closes the bracket, throws cancelled", async () => {
    sandbox();
    const ac = new AbortController();
    const h = recorder();
    const started = h.onStarted;
    h.onStarted = async (idx, action) => {
      await started(idx, action);
      if (action === "exec") {
        // Abort once the background grandchild has written its pid.
        void (async () => {
          for (let i = 0; i < 400 && !existsSync(join(pack, "bg.pid")); i++) await Bun.sleep(10);
          ac.abort();
        })();
      }
    };
    const state: PackState = {};
    const items = [
      { mkdir: { path: "$HOME/made" } },
      { exec: { cmd_shell: "sleep 30 & echo $! > bg.pid.tmp; mv bg.pid.tmp bg.pid; wait", shell: true } },
      { mkdir: { path: "$HOME/never" } },
    ];
    let err: unknown;
    try {
      await runActions(items, opts({ signal: ac.signal }, state), h);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).kind).toBe("cancelled");
    expect(h.events).toEqual(["started 0 mkdir", "completed 0 mkdir true", "started 1 exec", "halted 1 exec"]);
    expect(h.halts[0]?.reason).toBe("cancelled");
    expect(existsSync(join(home, "made"))).toBe(false); // rolled back
    expect(existsSync(join(home, "never"))).toBe(false);
    expect(state).toEqual({});
    const pid = Number(readFileSync(join(pack, "bg.pid"), "utf8"));
    let alive = true;
    for (let i = 0; i < 300 && alive; i++) {
      alive = running(pid);
      if (alive) await Bun.sleep(10);
    }
    expect(alive).toBe(false);
  });

  test("an unset variable in argv fails the step, naming it", async () => {
    sandbox();
    const r = await runActions([{ exec: { cmd: ["sh", "-c", "echo $i"] } }], opts(), recorder());
    expect(r.failed?.reason).toBe("Variable $i used in actions[0].exec.cmd[2] of pack 'p' is not set; export it or use $$ for a literal dollar");
  });

  test("an already aborted signal runs nothing", async () => {
    sandbox();
    const ac = new AbortController();
    ac.abort();
    writeFileSync(join(pack, "x"), "");
    await expect(runActions([{ exec: { cmd: ["rm", "x"] } }], opts({ signal: ac.signal }), recorder())).rejects.toMatchObject({ kind: "cancelled" });
    expect(existsSync(join(pack, "x"))).toBe(true);
  });
});
