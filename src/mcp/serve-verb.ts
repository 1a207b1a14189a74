// `grex serve`: the embedded MCP server for this workspace (stdio by default,
// Streamable HTTP with --http). The verb owns stdout while it runs.
import { resolve } from "node:path";
import * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import { PermitScheduler, resolveParallel } from "../core/scheduler.ts";
import { usageError } from "../core/errors.ts";
import { stderr } from "../core/stdio-native.ts";
import { findWorkspace } from "../core/workspace.ts";
import { DEFAULT_CHILD_IDLE_MS, DEFAULT_MAX_CHILDREN } from "./gateway/types.ts";
import type { ServerOptions } from "./server.ts";
import { defineVerb, READS_ONLY } from "../verbs/types.ts";

export const DEFAULT_HTTP_ADDR = "127.0.0.1:8080";

export const serveVerb = defineVerb({
  name: "serve",
  description:
    "Run the MCP server for this workspace: newline-delimited JSON-RPC on stdin/stdout (stdout carries protocol messages only) until EOF or a shutdown request; every verb but serve is a tool.",
  params: v.strictObject({
    http: v.optional(v.union([v.string(), v.boolean()])),
    token: v.optional(v.string()),
    read_only: v.optional(v.boolean()),
    approve: v.optional(v.array(v.string())),
    max_children: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, "must be at least 1"))),
    child_idle: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, "must be at least 1 (milliseconds)"))),
    stateless: v.optional(v.boolean()),
  }),
  result: v.object({ stopped: v.picklist(["eof", "shutdown", "signal"]) }),
  readOnly: false,
  effects: () => READS_ONLY,
  destructive: false,
  mcp: false,
  ownsStdout: true,
  examples: ["grex serve", "grex serve --http 127.0.0.1:7421 --token \"$TOKEN\""],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--http [addr]", description: `Serve MCP over Streamable HTTP at /mcp instead (default ${DEFAULT_HTTP_ADDR})` },
      { flag: "--token <token>", description: "Bearer token HTTP clients must send (default: env GREX_MCP_TOKEN, else MCP_TOKEN)" },
      { flag: "--stateless", description: "HTTP: no sessions; every POST is answered on its own, no Mcp-Session-Id needed" },
      { flag: "--read-only", description: "List and allow only read-only tools (grex's and the pack-declared servers')" },
      { flag: "--approve <server:tool>", description: "Pre-approve a pack-declared tool that needs approval (server:* for all its tools)", repeatable: true },
      { flag: "--max-children <n>", description: `Pack-declared servers kept running at once (default ${DEFAULT_MAX_CHILDREN})`, number: true },
      { flag: "--child-idle <ms>", description: `Close a pack-declared server after this long without calls (default ${DEFAULT_CHILD_IDLE_MS})`, number: true },
    ],
  },
  async run(ctx, p, signal) {
    const badApproval = p.approve?.find((a) => !/^[a-z][a-z0-9-]*:(?:\*|[^\s:]+)$/.test(a));
    if (badApproval !== undefined) {
      throw usageError(`Invalid --approve '${badApproval}': use server:tool or server:* (such as notes:append).`, { field: "approve" });
    }
    const location = serverLocation(ctx.cwd, ctx.manifest);
    const gateway = await makeGateway(location, ctx.env, { approve: p.approve, maxChildren: p.max_children, idleMs: p.child_idle });
    const opts: ServerOptions = {
      ...location,
      scheduler: ctx.scheduler,
      env: ctx.env,
      version: pkg.version,
      log: logToStderr,
      debug: ctx.debug,
      gateway,
      readOnly: p.read_only === true,
    };
    try {
      if (p.http !== undefined && p.http !== false) {
        const { serveHttpUntilSignal } = await import("./http.ts");
        await serveHttpUntilSignal({
          addr: typeof p.http === "string" && p.http !== "" ? p.http : DEFAULT_HTTP_ADDR,
          token: p.token ?? envToken(ctx.env),
          stateless: p.stateless === true,
          server: opts,
          log: opts.log,
        });
        return { stopped: "signal" as const };
      }
      if (p.stateless) throw usageError("--stateless applies to --http only.", { field: "stateless" });
      const { serveStdio } = await import("./stdio.ts");
      return { stopped: await untilTerminated(signal, (s) => serveStdio(opts, s)) };
    } finally {
      await gateway.close();
    }
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

/** Run `work` with a signal that also fires on SIGTERM, so the children are stopped and reaped before grex exits. */
async function untilTerminated<T>(signal: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  process.once("SIGTERM", onAbort);
  try {
    return await work(abort.signal);
  } finally {
    signal.removeEventListener("abort", onAbort);
    process.off("SIGTERM", onAbort);
  }
}

/** The HTTP bearer token from the environment: GREX_MCP_TOKEN, else MCP_TOKEN (the name other MCP tools use). */
export function envToken(env: Record<string, string | undefined>): string | undefined {
  for (const name of ["GREX_MCP_TOKEN", "MCP_TOKEN"]) {
    const t = env[name];
    if (t !== undefined && t !== "") return t;
  }
  return undefined;
}

/** The gateway to the workspace's pack-declared MCP servers (loaded on the first tool request). */
async function makeGateway(
  location: Pick<ServerOptions, "cwd" | "manifest">,
  env: Record<string, string | undefined>,
  o: { approve?: string[]; maxChildren?: number; idleMs?: number },
) {
  const { LazyGateway } = await import("./gateway/handle.ts");
  return new LazyGateway({
    ...location,
    env,
    version: pkg.version,
    maxChildren: o.maxChildren ?? DEFAULT_MAX_CHILDREN,
    idleMs: o.idleMs ?? DEFAULT_CHILD_IDLE_MS,
    approve: o.approve ?? [],
    log: logToStderr,
    childStderr: (server, line) => stderr.write(`[${server}] ${line}\n`),
  });
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
  const { serveStdio } = await import("./stdio.ts");
  const location = serverLocation(cwd, manifest);
  const gateway = await makeGateway(location, env, {});
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  process.once("SIGTERM", onSigint);
  try {
    await serveStdio(
      {
        ...location,
        gateway,
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
    process.off("SIGTERM", onSigint);
    await gateway.close();
  }
  return 0;
}
