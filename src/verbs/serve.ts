// `grex serve`: the embedded MCP server for this workspace (stdio by default).
import * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import { defineVerb } from "./types.ts";

export const serveVerb = defineVerb({
  name: "serve",
  description:
    "Run the MCP server for this workspace: newline-delimited JSON-RPC on stdin/stdout (stdout carries protocol messages only), every verb but serve exposed as a tool.",
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
      { flag: "--http [addr]", description: "Serve MCP over Streamable HTTP at /mcp instead (default 127.0.0.1:8080)" },
      { flag: "--token <token>", description: "Bearer token HTTP clients must send (default: env GREX_MCP_TOKEN)" },
    ],
  },
  async run(ctx, p) {
    const root = ctx.manifest === undefined ? ctx.cwd : ctx.workspace().root;
    const opts = {
      cwd: root,
      manifest: ctx.manifest,
      scheduler: ctx.scheduler,
      env: ctx.env,
      version: pkg.version,
      log: (m: string) => process.stderr.write(`grex serve: ${m}\n`),
    };
    if (p.http !== undefined) {
      const { serveHttpUntilSignal } = await import("../mcp/http.ts");
      await serveHttpUntilSignal({
        addr: typeof p.http === "string" && p.http !== "" ? p.http : "127.0.0.1:8080",
        token: p.token ?? ctx.env.GREX_MCP_TOKEN,
        server: opts,
        log: opts.log,
      });
      return { stopped: "signal" as const };
    }
    const { serveStdio } = await import("../mcp/stdio.ts");
    return { stopped: await serveStdio(opts) };
  },
});
