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

/**
 * Read a child's stream whole (capped), and when `onLine` is given also hand
 * over each complete line as it arrives (live output on a terminal).
 */
async function readCapped(stream: ReadableStream<Uint8Array>, onLine?: (line: string) => void): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const decoder = new TextDecoder();
  let partial = "";
  for await (const chunk of stream) {
    if (size < MAX_CAPTURE) chunks.push(chunk.subarray(0, MAX_CAPTURE - size));
    size += chunk.length;
    if (onLine) {
      const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) onLine(line);
    }
  }
  if (onLine && partial !== "") onLine(partial);
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
  effects: () => ({ workspace: "none", packs: "none", writes: true }),
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
    const live = ctx.live;
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
            readCapped(proc.stdout as ReadableStream<Uint8Array>, live && ((l) => live(`[${pack.id}] ${l}\n`))),
            readCapped(proc.stderr as ReadableStream<Uint8Array>, live && ((l) => live(`[${pack.id}]! ${l}\n`))),
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
  render(r, _p, style) {
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
