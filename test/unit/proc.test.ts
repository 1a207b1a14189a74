// The one child-process runner, with real processes: capture, the bound and
// its tail, a grandchild that keeps the pipes open, cancellation of the whole
// process group with SIGTERM then SIGKILL. Bun's test timeout is the only
// guard against a hang; nothing here measures time.
import { describe, expect, test } from "bun:test";
import { CancelledError } from "../../src/core/base/errors.ts";
import { runProcess } from "../../src/core/base/proc.ts";
import { running } from "../helpers/process.ts";

const base = { env: { PATH: process.env.PATH }, maxBytes: 4096 };
const alive = running;

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 500 && alive(pid); i++) await Bun.sleep(10); // reaping is asynchronous
  return !alive(pid);
}

describe("runProcess", () => {
  test("captures stdout, stderr, the exit code, and lines as they come", async () => {
    const lines: string[] = [];
    const r = await runProcess({
      ...base,
      argv: ["sh", "-c", "echo one; echo two >&2; printf three; exit 3"],
      signal: new AbortController().signal,
      onStdoutLine: (l) => lines.push(l),
    });
    expect(r).toMatchObject({ code: 3, signal: null, spawnError: null, stdout: "one\nthree", stderr: "two\n" });
    expect(lines).toEqual(["one", "three"]);
  });

  test("a missing program is a spawn error, not a throw", async () => {
    const r = await runProcess({ ...base, argv: ["grex-no-such-program-xyz"], signal: new AbortController().signal });
    expect(r.spawnError?.code).toBe("ENOENT");
  });

  test("output beyond the bound keeps the tail and says how much was dropped", async () => {
    const r = await runProcess({
      ...base,
      maxBytes: 1000,
      argv: ["sh", "-c", "i=0; while [ $i -lt 5000 ]; do echo line-$i; i=$((i+1)); done"],
      signal: new AbortController().signal,
    });
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBeLessThanOrEqual(1000);
    expect(r.stdout.endsWith("line-4999\n")).toBe(true);
    expect(r.dropped.stdout).toBeGreaterThan(30_000);
  });

  test("a grandchild holding the pipes does not keep the call waiting", async () => {
    const r = await runProcess({
      ...base,
      argv: ["sh", "-c", "sleep 20 & echo $!; echo started"],
      signal: new AbortController().signal,
    });
    expect(r.code).toBe(0);
    const pid = Number(r.stdout.split("\n")[0]);
    expect(r.stdout).toContain("started");
    expect(alive(pid)).toBe(true);
    process.kill(pid, "SIGKILL");
  }, 15_000);

  test("abort stops the whole group: SIGTERM, then SIGKILL for what ignores it", async () => {
    const ac = new AbortController();
    let grandchild = 0;
    const running = runProcess({
      ...base,
      graceMs: 100,
      argv: ["sh", "-c", "trap '' TERM; sh -c 'trap \"\" TERM; while :; do sleep 0.05; done' & echo $!; while :; do sleep 0.05; done"],
      signal: ac.signal,
      onStdoutLine: (l) => {
        grandchild = Number(l);
        ac.abort();
      },
    });
    await expect(running).rejects.toBeInstanceOf(CancelledError);
    expect(grandchild).toBeGreaterThan(0);
    expect(await gone(grandchild)).toBe(true);
  }, 15_000);

  test("ownGroup: false keeps the caller's terminal session; abort still stops the child", async () => {
    const ac = new AbortController();
    let pid = 0;
    const running = runProcess({
      ...base,
      ownGroup: false,
      argv: ["sh", "-c", "echo $$; while :; do sleep 0.05; done"],
      signal: ac.signal,
      onStdoutLine: (l) => {
        pid = Number(l);
        ac.abort();
      },
    });
    await expect(running).rejects.toBeInstanceOf(CancelledError);
    expect(await gone(pid)).toBe(true);
  }, 15_000);

  test("an already aborted signal starts nothing", async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(runProcess({ ...base, argv: ["sh", "-c", "exit 0"], signal: ac.signal })).rejects.toBeInstanceOf(CancelledError);
  });
});
