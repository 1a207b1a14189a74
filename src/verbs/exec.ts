// `grex exec <cmd> [-- args]`: run one command in every matched pack's directory.
import { existsSync } from "node:fs";
import * as v from "valibot";
import { packOpError, throwIfAborted, usageError } from "../core/errors.ts";
import { parseFilter } from "../core/filter.ts";
import { loadWorkspaceView } from "../core/packs.ts";
import { mapBounded } from "../core/scheduler.ts";
import { filterParam, parallelParam } from "./common.ts";
import { defineVerb } from "./types.ts";

/** Captured output per stream is capped so one chatty pack cannot exhaust memory. */
const MAX_CAPTURE = 1 << 20;

const ResultRow = v.object({ pack: v.string(), stdout: v.string(), stderr: v.string(), exit: v.number() });

async function readCapped(stream: ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size < MAX_CAPTURE) chunks.push(chunk.subarray(0, MAX_CAPTURE - size));
    size += chunk.length;
  }
  const text = Buffer.concat(chunks).toString("utf8");
  return size > MAX_CAPTURE ? `${text}\n[grex: output truncated after ${MAX_CAPTURE} bytes]` : text;
}

export const execVerb = defineVerb({
  name: "exec",
  description:
    "Execute one command (argv: cmd plus args, no shell interpretation) in the directory of every matched pack, in parallel; returns each pack's stdout, stderr and exit code. Fails if any command exits non-zero.",
  params: v.strictObject({
    cmd: v.pipe(v.string(), v.minLength(1, "is required")),
    args: v.optional(v.array(v.string()), []),
    shell: v.optional(v.boolean(), false),
    filter: filterParam,
    parallel: parallelParam,
  }),
  result: v.object({ results: v.array(ResultRow) }),
  readOnly: false,
  destructive: true,
  mcp: true,
  cliOnly: ["shell"],
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
    const keep = parseFilter(p.filter);
    const packs = view.packs.filter((n) => keep(n) && existsSync(n.dir));
    const argv = p.shell ? ["/bin/sh", "-c", p.cmd] : [p.cmd, ...p.args];
    let done = 0;
    const results = await mapBounded(packs, p.parallel ?? 0, signal, (pack) =>
      ctx.scheduler.withPermit(signal, async () => {
        throwIfAborted(signal);
        let proc: ReturnType<typeof Bun.spawn>;
        try {
          proc = Bun.spawn(argv, {
            cwd: pack.dir,
            env: { ...ctx.env, GREX_PACK_NAME: pack.id, GREX_PACK_PATH: pack.dir },
            stdin: "ignore",
            stdout: "pipe",
            stderr: "pipe",
          });
        } catch {
          progress(++done, packs.length, pack.id);
          return { pack: pack.id, stdout: "", stderr: `grex: command not found: ${argv[0]}`, exit: 127 };
        }
        const kill = () => proc.kill();
        signal.addEventListener("abort", kill, { once: true });
        try {
          const [stdout, stderr, exit] = await Promise.all([
            readCapped(proc.stdout as ReadableStream<Uint8Array>),
            readCapped(proc.stderr as ReadableStream<Uint8Array>),
            proc.exited,
          ]);
          throwIfAborted(signal);
          progress(++done, packs.length, pack.id);
          return { pack: pack.id, stdout, stderr, exit };
        } finally {
          signal.removeEventListener("abort", kill);
        }
      }),
    );
    return { results };
  },
  failure(r) {
    const bad = r.results.filter((x) => x.exit !== 0);
    if (bad.length === 0) return undefined;
    return packOpError(`The command failed in ${bad.length} of ${r.results.length} packs (first: ${bad[0]?.pack}, exit ${bad[0]?.exit}).`);
  },
  render(r) {
    const out: string[] = [];
    for (const x of r.results) {
      const prefix = (s: string, tag: string) =>
        s.replace(/\n$/, "").split("\n").filter((l, i, a) => l !== "" || a.length > 1).map((l) => `[${x.pack}]${tag} ${l}`);
      out.push(...prefix(x.stdout, ""), ...prefix(x.stderr, " !"));
      if (x.exit !== 0) out.push(`[${x.pack}] exit ${x.exit}`);
    }
    return out.length ? out.join("\n") : "No packs matched.";
  },
});
