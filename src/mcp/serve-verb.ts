// `grex serve`: the embedded MCP server for this workspace (stdio by default,
// Streamable HTTP with --http). The verb owns stdout while it runs.
import * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import { usageError } from "../core/base/errors.ts";
import { DEFAULT_CHILD_IDLE_MS, DEFAULT_MAX_CHILDREN } from "./gateway/types.ts";
import { logToStderr, makeGateway, residentSoon, serverLocation } from "./serve-argv.ts";
import type { ServerOptions } from "./server.ts";
import { defineVerb, READS_ONLY } from "../verbs/types.ts";

// The plain stdio form runs from argv without this module (see serve-argv.ts).
export { serveFromArgv, serverLocation } from "./serve-argv.ts";

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
    const stopResident = residentSoon(location, pkg.version, logToStderr);
    try {
      if (p.http !== undefined && p.http !== false) {
        const [{ serveHttpUntilSignal }, { httpLimitsFromEnv }] = await Promise.all([import("./http.ts"), import("./http-limits.ts")]);
        await serveHttpUntilSignal({
          limits: httpLimitsFromEnv(ctx.env, (m) => opts.log(`warning: ${m}`)),
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
      await stopResident();
      await gateway.close();
    }
  },
});

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
