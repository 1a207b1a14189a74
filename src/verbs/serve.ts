// `grex serve`: the embedded MCP server for this workspace (stdio by default,
// Streamable HTTP with --http). The verb owns stdout while it runs.
import { resolve } from "node:path";
import * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import { PermitScheduler, resolveParallel } from "../core/scheduler.ts";
import { stderr } from "../core/stdio-native.ts";
import { findWorkspace } from "../core/workspace.ts";
import type { ServerOptions } from "../mcp/server.ts";
import { defineVerb } from "./types.ts";

export const DEFAULT_HTTP_ADDR = "127.0.0.1:8080";

export const serveVerb = defineVerb({
  name: "serve",
  description:
    "Run the MCP server for this workspace: newline-delimited JSON-RPC on stdin/stdout (stdout carries protocol messages only) until EOF or a shutdown request; every verb but serve is a tool.",
  params: v.strictObject({
    http: v.optional(v.union([v.string(), v.boolean()])),
    token: v.optional(v.string()),
  }),
  result: v.object({ stopped: v.picklist(["eof", "shutdown", "signal"]) }),
  readOnly: false,
  destructive: false,
  mcp: false,
  ownsStdout: true,
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--http [addr]", description: `Serve MCP over Streamable HTTP at /mcp instead (default ${DEFAULT_HTTP_ADDR})` },
      { flag: "--token <token>", description: "Bearer token HTTP clients must send (default: env GREX_MCP_TOKEN)" },
    ],
  },
  async run(ctx, p, signal) {
    const opts: ServerOptions = {
      ...serverLocation(ctx.cwd, ctx.manifest),
      scheduler: ctx.scheduler,
      env: ctx.env,
      version: pkg.version,
      log: logToStderr,
      debug: ctx.debug,
    };
    if (p.http !== undefined && p.http !== false) {
      const { serveHttpUntilSignal } = await import("../mcp/http.ts");
      await serveHttpUntilSignal({
        addr: typeof p.http === "string" && p.http !== "" ? p.http : DEFAULT_HTTP_ADDR,
        token: p.token ?? ctx.env.GREX_MCP_TOKEN,
        server: opts,
        log: opts.log,
      });
      return { stopped: "signal" as const };
    }
    const { serveStdio } = await import("../mcp/stdio.ts");
    return { stopped: await serveStdio(opts, signal) };
  },
});

/**
 * One server = one workspace, fixed at launch: `--manifest` (made absolute), else
 * the nearest workspace at or above cwd; with none yet, cwd (where `init` creates it).
 */
export function serverLocation(cwd: string, manifest: string | undefined): Pick<ServerOptions, "cwd" | "manifest"> {
  const dir = resolve(cwd);
  if (manifest !== undefined) return { cwd: dir, manifest: resolve(dir, manifest) };
  try {
    return { cwd: findWorkspace(dir).root, manifest: undefined };
  } catch {
    return { cwd: dir, manifest: undefined };
  }
}

const logToStderr = (m: string) => {
  stderr.write(`grex serve: ${m}\n`);
};

/**
 * `grex serve` over stdio straight from argv, skipping the CLI adapter: cac and
 * the verb table then load on the first tool call instead of before the first
 * reply. Handles only the plain form (`--manifest`, `--parallel`, `-v`, and the
 * ignored `--json`/`--plain`); returns undefined for anything else, and the
 * caller runs the normal CLI path, which also reports bad flags.
 */
export async function serveFromArgv(argv: readonly string[], cwd = process.cwd(), env: Record<string, string | undefined> = process.env): Promise<number | undefined> {
  if (argv[0] !== "serve") return undefined;
  let manifest: string | undefined;
  let parallel: number | undefined;
  let verbose = 0;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (/^-v+$/.test(arg)) verbose += arg.length - 1;
    else if (arg === "--verbose") verbose++;
    else if (arg === "--json" || arg === "--plain") continue;
    else if (flag === "--manifest" || flag === "--parallel") {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      if (flag === "--manifest") manifest = value;
      else if (/^\d+$/.test(value)) parallel = Number(value);
      else return undefined;
    } else return undefined;
  }
  let limit: number;
  try {
    limit = resolveParallel(parallel, env);
  } catch {
    return undefined;
  }
  const { serveStdio } = await import("../mcp/stdio.ts");
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  try {
    await serveStdio(
      {
        ...serverLocation(cwd, manifest),
        scheduler: new PermitScheduler(limit),
        env,
        version: pkg.version,
        log: logToStderr,
        debug: (level, m) => {
          if (level <= verbose) stderr.write(`grex: ${m}\n`);
        },
      },
      abort.signal,
    );
  } finally {
    process.off("SIGINT", onSigint);
  }
  return 0;
}
