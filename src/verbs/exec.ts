// `grex exec <cmd> [-- args]`: run one command in every matched pack's directory.
import { existsSync } from "node:fs";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { constants as osConstants } from "node:os";
import { packOpError, usageError } from "../core/base/errors.ts";
import { loadWorkspaceView } from "../core/workspace/packs.ts";
import { mapBounded } from "../core/locks/scheduler.ts";
import { dryRunParam, filterParam, parallelParam } from "./common.ts";
import { defineVerb } from "./types.ts";

/** Captured output per stream is capped (the tail is kept) so one chatty pack cannot exhaust memory. */
const MAX_CAPTURE = 1 << 20;

const ResultRow = v.object({ pack: v.string(), stdout: v.string(), stderr: v.string(), exit: v.number() });

export const execVerb = defineVerb({
  name: "exec",
  description:
    "Execute one command (argv: cmd plus args, no shell interpretation) in the directory of every matched pack, in parallel; returns each pack's stdout, stderr and exit code. Fails if any command exits non-zero.",
  params: v.strictObject({
    cmd: desc(
      v.pipe(v.string(), v.minLength(1, "is required")),
      "The program to run in each pack's directory, found on PATH, e.g. \"git\". No shell: pipes, globs and $VARS are not interpreted. Required.",
    ),
    args: desc(v.optional(v.array(v.string()), []), "Its arguments, one string each, e.g. [\"status\", \"--short\"]. Default []."),
    shell: desc(v.optional(v.boolean(), false), "CLI only: run cmd through sh -c."),
    dry_run: dryRunParam,
    filter: filterParam,
    parallel: parallelParam,
  }),
  result: v.object({
    results: v.array(ResultRow),
    /** Dry run: the command each pack would run (argv and directory); nothing is run. */
    planned: v.optional(v.array(v.object({ pack: v.string(), dir: v.string(), argv: v.array(v.string()) }))),
  }),
  readOnly: false,
  effects: () => ({ workspace: "none", packs: "none", writes: true }),
  destructive: true,
  mcp: true,
  cliOnly: ["shell"],
  examples: [
    "grex exec git -- status --short",
    "grex exec -- git log -1 --oneline",
    "grex exec --shell 'git stash list | wc -l'",
  ],
  cli: {
    args: "<cmd> [...args]",
    positionals: ["cmd", "...args"],
    flags: [{ flag: "--shell", description: "Run cmd through /bin/sh -c (pipes, globs, $VARS); off by default" }],
  },
  async run(ctx, p, signal, progress) {
    if (p.shell && p.args.length > 0) {
      throw usageError("With --shell pass the whole command as one string: grex exec --shell 'cmd | other'.", { field: "args" });
    }
    const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
    const { selectPacks } = await import("./select.ts");
    const packs = (await selectPacks(ctx, view, view.packs, p.filter)).packs.filter((n) => existsSync(n.dir));
    const argv = p.shell ? ["/bin/sh", "-c", p.cmd] : [p.cmd, ...p.args];
    if (p.dry_run) return { results: [], planned: packs.map((pack) => ({ pack: pack.id, dir: pack.dir, argv })) };
    const { runProcess } = await import("../core/base/proc.ts");
    const live = ctx.live;
    let done = 0;
    const results = await mapBounded(packs, p.parallel ?? 0, signal, (pack) =>
      ctx.scheduler.withPermit(signal, async () => {
        const r = await runProcess({
          argv,
          cwd: pack.dir,
          env: { ...ctx.env, GREX_PACK_NAME: pack.id, GREX_PACK_PATH: pack.dir },
          signal,
          maxBytes: MAX_CAPTURE,
          onStdoutLine: live && ((l) => live(`[${pack.id}] ${l}\n`)),
          onStderrLine: live && ((l) => live(`[${pack.id}]! ${l}\n`)),
        });
        progress(++done, packs.length, pack.id);
        if (r.spawnError) return { pack: pack.id, stdout: "", stderr: `grex: command not found: ${argv[0]}`, exit: 127 };
        const cut = (text: string, dropped: number) => (dropped > 0 ? `[grex: first ${dropped} bytes of output dropped]\n${text}` : text);
        // Killed by a signal: the shell convention, 128 + signal number.
        const exit = r.code ?? 128 + (r.signal ? (osConstants.signals[r.signal] ?? 0) : 0);
        return { pack: pack.id, stdout: cut(r.stdout, r.dropped.stdout), stderr: cut(r.stderr, r.dropped.stderr), exit };
      }),
    );
    return { results };
  },
  failure(r) {
    const bad = r.results.filter((x) => x.exit !== 0);
    if (bad.length === 0) return undefined;
    return packOpError(`The command failed in ${bad.length} of ${r.results.length} packs (first: ${bad[0]?.pack}, exit ${bad[0]?.exit}).`);
  },
  render(r, _p, style) {
    if (r.planned) {
      if (r.planned.length === 0) return "No packs matched.";
      return r.planned.map((x) => `[${x.pack}] would run ${x.argv.map((a) => JSON.stringify(a)).join(" ")} in ${x.dir}`).join("\n");
    }
    if (r.results.length === 0) return "No packs matched.";
    const out: string[] = [];
    for (const x of r.results) {
      // Live mode already printed every line as it came; only the verdicts remain.
      if (!style.streamed) {
        const prefix = (s: string, tag: string) =>
          s === "" ? [] : s.replace(/\n$/, "").split("\n").map((l) => `[${x.pack}]${tag} ${l}`);
        out.push(...prefix(x.stdout, ""), ...prefix(x.stderr, "!"));
      }
      if (x.exit !== 0) out.push(`[${x.pack}] exit ${x.exit}`);
    }
    return out.join("\n");
  },
});
