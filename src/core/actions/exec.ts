// exec: run a command. `cmd` is an argv list run without a shell (so `;`,
// `$(...)` and globs are plain text); `cmd_shell` is a string for the shell and
// needs `shell: true`. Variables in `cmd`, `cwd` and `env` are expanded by grex;
// `cmd_shell` goes to the shell verbatim (it expands variables itself, from the
// same environment). No idempotency, no rollback. On abort the child's whole
// process group is killed.
import * as v from "valibot";
import { CancelledError } from "../base/errors.ts";
import { expandDeep, homeOf } from "../base/vars.ts";
import { failed, fieldName, guardTarget, statOrNull, targetPath } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

/** The stderr tail carried by action_halted (SPEC §2.1). */
export const STDERR_TAIL_BYTES = 2048;

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
    // Loaded on first run: node:child_process would otherwise load with every action (status checks them all).
    const { runProcess } = await import("../base/proc.ts");
    const r = await runProcess({ argv, cwd, env, signal: ctx.signal, maxBytes: STDERR_TAIL_BYTES, verbatim: cmd.verbatim });
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
