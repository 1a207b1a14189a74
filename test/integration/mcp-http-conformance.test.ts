// The official MCP conformance suite (@modelcontextprotocol/conformance) against
// `grex serve --http` on loopback: the scenarios that apply to a tools-only
// server. The suite runs under bun (its build needs fs.globSync, absent from
// Node 20) and writes its checks.json files to a temp dir we read back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { HttpServeProcess } from "../helpers/http-serve.ts";
import { everythingServer, serversPackYaml } from "../helpers/mcp-gateway.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const SUITE = join(import.meta.dir, "..", "..", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");

/** Server scenarios that apply to a server with tools only (no resources, prompts, logging, sampling). */
const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams"];

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | string;
  errorMessage?: string;
}

let tw: TestWorkspace;
let server: HttpServeProcess;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-conformance-");
  expect((await tw.grex("init")).code).toBe(0);
  // A pack-declared child server, so the scenarios also see the gateway's tools.
  const pack = tw.repo("with-servers", { ".grex/pack.yaml": serversPackYaml("with-servers", [everythingServer("everything", ["echo", "get-sum"])]) });
  expect((await tw.grex("add", pack)).code).toBe(0);
  // No token: the suite has no way to send one, and the DNS-rebinding scenario targets exactly this setup.
  server = await HttpServeProcess.start(tw.ws, tw.env);
});

afterAll(async () => {
  await server.stop();
  tw.cleanup();
});

describe("official MCP conformance scenarios", () => {
  for (const scenario of SCENARIOS) {
    test(scenario, async () => {
      const out = mkdtempSync(join(tw.root, "conformance-"));
      const proc = Bun.spawn([process.execPath, SUITE, "server", "--url", server.url, "--scenario", scenario, "-o", out], {
        cwd: tw.root,
        env: tw.env,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      const dirs = readdirSync(out);
      expect(dirs).toHaveLength(1);
      const checks = JSON.parse(readFileSync(join(out, dirs[0] as string, "checks.json"), "utf8")) as Check[];
      const failures = checks.filter((c) => c.status === "FAILURE").map((c) => `${c.id}: ${c.errorMessage ?? ""}`);
      expect(failures, `${stdout}\n${stderr}`).toEqual([]);
      expect(checks.filter((c) => c.status === "SUCCESS").length).toBeGreaterThan(0);
      expect(code).toBe(0);
    });
  }
});
