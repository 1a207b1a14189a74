// exec: run a command (argv list, or a shell string with shell: true). No idempotency, no rollback.
import * as v from "valibot";
import { throwIfAborted } from "../errors.ts";
import { expandDeep } from "../vars.ts";
import { failed, packSource } from "./paths.ts";
import type { ActionDef } from "./types.ts";

const STDERR_TAIL = 2048;

const Args = v.pipe(
  v.strictObject({
    cmd: v.optional(v.pipe(v.array(v.string()), v.minLength(1, "needs at least the program name"))),
    cmd_shell: v.optional(v.string()),
    shell: v.optional(v.boolean(), false),
    cwd: v.optional(v.string()),
    env: v.optional(v.record(v.string(), v.pipe(v.union([v.string(), v.number(), v.boolean()]), v.transform(String)))),
    on_fail: v.optional(v.picklist(["error", "warn", "ignore"]), "error"),
  }),
  v.check((a) => (a.cmd === undefined) !== (a.cmd_shell === undefined), "takes exactly one of cmd (a list) or cmd_shell (a string)"),
  v.check((a) => a.cmd_shell === undefined || a.shell, "cmd_shell needs shell: true"),
);
type Args = v.InferOutput<typeof Args>;

export const execAction: ActionDef<Args> = {
  name: "exec",
  schema: Args,
  async apply(a, ctx) {
    const where = `${ctx.where}.exec of pack '${ctx.packId}'`;
    const argv = a.cmd_shell !== undefined ? ["/bin/sh", "-c", a.cmd_shell] : expandDeep(a.cmd as string[], ctx.env, `${where}.cmd`);
    const cwd = a.cwd === undefined ? ctx.packDir : packSource(a.cwd, ctx, "cwd");
    if (ctx.dryRun) return { result: "would_perform_change", details: { cmd: argv, cwd } };
    throwIfAborted(ctx.signal);
    const env = { ...ctx.env, ...expandDeep(a.env ?? {}, ctx.env, `${where}.env`) };
    let proc: ReturnType<typeof Bun.spawn>;
    try {
      proc = Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    } catch {
      return a.on_fail === "error" ? failed(`command not found: ${argv[0]}`, { cmd: argv }) : { result: "noop", details: { warning: `command not found: ${argv[0]}` } };
    }
    const kill = () => proc.kill();
    ctx.signal.addEventListener("abort", kill, { once: true });
    let stdout: string;
    let stderr: string;
    let code: number;
    try {
      [stdout, stderr, code] = await Promise.all([
        new Response(proc.stdout as ReadableStream).text(),
        new Response(proc.stderr as ReadableStream).text(),
        proc.exited,
      ]);
    } finally {
      ctx.signal.removeEventListener("abort", kill);
    }
    throwIfAborted(ctx.signal);
    const tail = stderr.slice(-STDERR_TAIL);
    if (code !== 0 && a.on_fail === "error") {
      return { ...failed(`command exited ${code}`, { cmd: argv, exit: code, stderr: tail }, tail) };
    }
    const details: Record<string, unknown> = { cmd: argv, exit: code, stdout: stdout.slice(-STDERR_TAIL) };
    if (code !== 0 && a.on_fail === "warn") details.warning = `command exited ${code}`;
    return { result: "performed_change", details };
  },
  async undo() {
    return { result: "noop", details: { note: "exec has no rollback" } };
  },
};
