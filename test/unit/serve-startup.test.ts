// `grex serve` answers initialize without loading the MCP SDK, the YAML parser
// or any pack-declared server: the gateway loads on the first tool request.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FIXTURE_SERVER } from "../helpers/mcp-gateway.ts";

const PROBE = join(import.meta.dir, "..", "helpers", "module-probe.ts");
const HEAVY = ["@modelcontextprotocol", "isomorphic-git", "yaml", "zod", "@valibot"];
const ws = mkdtempSync(join(tmpdir(), "grex-serve-startup-"));
afterAll(() => rmSync(ws, { recursive: true, force: true }));

test("initialize with a declared server loads none of the heavy modules and starts no child", () => {
  const log = join(ws, "fixture.log");
  mkdirSync(join(ws, "servers", ".grex"), { recursive: true });
  writeFileSync(
    join(ws, "servers", ".grex", "pack.yaml"),
    `schema_version: "1"\nname: servers\ntype: declarative\nmcp:\n  servers:\n    - id: fix\n      transport: stdio\n      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(FIXTURE_SERVER)}]\n      env: { FIXTURE_LOG: ${JSON.stringify(log)} }\n`,
  );
  const ts = "2026-01-01T00:00:00Z";
  writeFileSync(join(ws, "grex.jsonl"), `${JSON.stringify({ op: "add", ts, id: "servers", schema_version: "1", url: "https://example.invalid/s.git", path: "servers", type: "declarative", ref: null })}\n`);
  writeFileSync(join(ws, "grex.lock.jsonl"), `${JSON.stringify({ id: "servers", sha: "", branch: "main", installed_at: ts, actions_hash: "", type: "declarative" })}\n`);
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
  const r = Bun.spawnSync([process.execPath, PROBE, "main", "serve"], { cwd: ws, stdin: Buffer.from(`${JSON.stringify(init)}\n`), stdout: "pipe", stderr: "pipe" });
  const reply = JSON.parse(r.stdout.toString().trim().split("\n")[0] ?? "{}") as { result?: { capabilities?: unknown } };
  expect(reply.result?.capabilities).toEqual({ tools: { listChanged: true } });
  const loaded = JSON.parse(r.stderr.toString().trim().split("\n").pop() ?? "[]") as string[];
  for (const heavy of HEAVY) expect(loaded.filter((m) => m.startsWith(heavy))).toEqual([]);
  expect(existsSync(log)).toBe(false);
});
