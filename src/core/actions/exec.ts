// exec: run a command. `cmd` is an argv list run without a shell (so `;`,
// `$(...)` and globs are plain text); `cmd_shell` is a string for the shell and
// needs `shell: true`. Variables in `cmd`, `cwd` and `env` are expanded by grex;
// `cmd_shell` goes to the shell verbatim (it expands variables itself, from the
// same environment). No idempotency, no rollback. On abort the child's whole
// process group is killed.
import { type ChildProcess, spawn } from "node:child_process";
import * as v from "valibot";
import { CancelledError } from "../errors.ts";
import { expandDeep, homeOf } from "../vars.ts";
import { failed, fieldName, guardTarget, statOrNull, targetPath } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

/** The stderr tail carried by action_halted (SPEC §2.1). */
export const STDERR_TAIL_BYTES = 2048;
const KILL_GRACE_MS = 2000;

const scalar = v.pipe(v.union([v.string(), v.number(), v.boolean()], "must be a string"), v.transform(String));

const Args = v.pipe(
  v.strictObject({
    cmd: v.optional(v.pipe(v.array(v.string(), "must be a list of strings (program, then arguments)"), v.minLength(1, "needs at least the program name"))),
    cmd_shell: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
    shell: v.optional(v.boolean(), false),
    cwd: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
    env: v.optional(v.record(v.pipe(v.string(), v.regex(/^[^=\0]+$/, "must be a variable name")), scalar)),
    on_fail: v.optional(v.picklist(["error", "warn", "ignore"]), "error"),
  }),
  v.check((a) => (a.cmd === undefined) !== (a.cmd_shell === undefined), "takes exactly one of cmd (an argv list) or cmd_shell (a string with shell: true)"),
  v.check((a) => a.cmd_shell === undefined || a.shell, "has cmd_shell but not shell: true; add shell: true, or use cmd with an argv list"),
  v.check((a) => a.cmd === undefined || !a.shell, "has shell: true with cmd; use cmd_shell for a shell string, or drop shell: true"),
);
type Args = v.InferOutput<typeof Args>;

/** Keeps the last `max` bytes of a stream. */
class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - (this.chunks[0] as Buffer).length >= this.max) {
      this.size -= (this.chunks.shift() as Buffer).length;
    }
  }
  /** The tail as text, never starting inside a UTF-8 sequence. */
  text(): string {
    let buf = Buffer.concat(this.chunks);
    if (buf.length > this.max) buf = buf.subarray(buf.length - this.max);
    let start = 0;
    while (start < buf.length && start < 4 && ((buf[start] as number) & 0xc0) === 0x80) start++;
    return buf.subarray(start).toString("utf8");
  }
}

interface Command {
  argv: string[];
  /** cmd.exe takes its command line as is (Windows quoting rules differ). */
  verbatim: boolean;
}

function commandOf(a: Args, ctx: ActionContext): Command {
  if (a.cmd_shell !== undefined) {
    return ctx.os === "windows"
      ? { argv: [ctx.env.ComSpec ?? "cmd.exe", "/d", "/s", "/c", `"${a.cmd_shell}"`], verbatim: true }
      : { argv: ["/bin/sh", "-c", a.cmd_shell], verbatim: false };
  }
  return { argv: expandDeep(a.cmd ?? [], ctx.env, `${ctx.where}.cmd`, ` of pack '${ctx.packId}'`), verbatim: false };
}

function childEnv(a: Args, ctx: ActionContext): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, val] of Object.entries(ctx.env)) if (val !== undefined) env[k] = val;
  env.HOME = homeOf(ctx.env);
  Object.assign(env, expandDeep(a.env ?? {}, ctx.env, `${ctx.where}.env`, ` of pack '${ctx.packId}'`));
  return env;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError: NodeJS.ErrnoException | null;
  stdout: string;
  stderr: string;
}

function killGroup(child: ChildProcess, sig: NodeJS.Signals, windows: boolean): void {
  try {
    if (!windows && child.pid !== undefined) process.kill(-child.pid, sig);
    else child.kill(sig);
  } catch {
    // Already gone.
  }
}

function run(cmd: Command, cwd: string, env: Record<string, string>, ctx: ActionContext): Promise<Exit> {
  const windows = process.platform === "win32";
  const { argv } = cmd;
  return new Promise((resolvePromise, reject) => {
    const out = new Tail(STDERR_TAIL_BYTES);
    const err = new Tail(STDERR_TAIL_BYTES);
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      // Own process group, so an abort can stop grandchildren holding the pipes too.
      detached: !windows,
      windowsHide: true,
      windowsVerbatimArguments: cmd.verbatim,
    });
    child.stdout?.on("data", (c: Buffer) => out.push(c));
    child.stderr?.on("data", (c: Buffer) => err.push(c));
    let settled = false;
    let exited = false;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      ctx.signal.removeEventListener("abort", onAbort);
      fn();
    };
    const cancelled = () => finish(() => reject(new CancelledError()));
    const onAbort = () => {
      killGroup(child, "SIGTERM", windows);
      graceTimer = setTimeout(() => killGroup(child, "SIGKILL", windows), KILL_GRACE_MS);
      graceTimer.unref?.();
      // Do not wait for the pipes to close: a stray grandchild may hold them open.
      if (exited) cancelled();
    };
    child.once("exit", () => {
      exited = true;
      if (ctx.signal.aborted) cancelled();
    });
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    child.once("error", (e: NodeJS.ErrnoException) =>
      finish(() => resolvePromise({ code: null, signal: null, spawnError: e, stdout: "", stderr: err.text() })),
    );
    child.once("close", (code, signal) => {
      if (graceTimer) clearTimeout(graceTimer);
      if (ctx.signal.aborted) cancelled();
      else finish(() => resolvePromise({ code, signal, spawnError: null, stdout: out.text(), stderr: err.text() }));
    });
  });
}

/** cwd: the pack dir or any directory the confinement rule allows (HOME itself included: nothing is written to a cwd). */
function confinedCwd(raw: string, ctx: ActionContext): string {
  const cwd = targetPath(raw, ctx, "cwd");
  guardTarget(cwd, ctx, "cwd", raw, { cwd: true });
  return cwd;
}

export const execAction: ActionDef<Args> = {
  name: "exec",
  schema: Args,
  async apply(a, ctx): Promise<ActionOutcome> {
    const cmd = commandOf(a, ctx);
    const argv = cmd.argv;
    const cwd = a.cwd === undefined ? ctx.packDir : confinedCwd(a.cwd, ctx);
    const env = childEnv(a, ctx);
    const full = a.cmd_shell ?? argv.join(" ");
    const shown = full.length > 200 ? `${full.slice(0, 197)}...` : full;
    if (ctx.dryRun) return { result: "would_perform_change", details: { cmd: argv, cwd } };
    if (!statOrNull(cwd)?.isDirectory()) {
      return failed(`the working directory ${cwd} (${fieldName(ctx, "cwd")}) does not exist; create it first or fix cwd`, { cwd });
    }
    if (ctx.signal.aborted) throw new CancelledError();
    const r = await run(cmd, cwd, env, ctx);
    const details: Record<string, unknown> = { cmd: argv, cwd, exit: r.code, stdout: r.stdout, stderr: r.stderr };
    let problem: string | null = null;
    if (r.spawnError) {
      problem =
        r.spawnError.code === "ENOENT"
          ? `command not found: ${argv[0]}; install it or fix the path`
          : `could not start ${argv[0]} (${r.spawnError.code ?? r.spawnError.message}); check the command`;
    } else if (r.code !== 0) {
      problem = r.signal ? `\`${shown}\` was killed by ${r.signal}` : `\`${shown}\` exited ${r.code}`;
      if (r.signal) details.signal = r.signal;
    }
    if (problem === null) return { result: "performed_change", details };
    if (a.on_fail === "error") return failed(problem, details, r.stderr);
    if (a.on_fail === "warn") details.warning = problem;
    return { result: r.spawnError ? "noop" : "performed_change", details };
  },
  async undo() {
    return { result: "noop", details: { note: "exec has no undo; give the pack an explicit teardown list" } };
  },
};
