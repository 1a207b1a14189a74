// Cancellation: notifications/cancelled stops a running sync (its blocked
// setup command is killed), the call is answered -32800, other calls are not
// affected, and the workspace lock is released.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Message, SessionTransport, SpawnedServer, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

let tw: TestWorkspace;
let marker: string;
const servers: SpawnedServer[] = [];

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-cancel-");
  marker = join(tw.root, "setup-started");
  // A pack whose setup blocks until it is killed; it leaves a marker once running.
  const slow = tw.repo("slow", {
    ".grex/pack.yaml": [
      'schema_version: "1"',
      "name: slow",
      "type: declarative",
      "actions:",
      `  - exec: { cmd: [sh, -c, "touch '${marker}' && exec sleep 120"] }`,
      "",
    ].join("\n"),
  });
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", slow, "--no-install")).code).toBe(0);
});
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
  rmSync(marker, { force: true });
});
afterAll(() => tw.cleanup());

/** Resolves once the slow setup is running (hang guard only). */
async function setupStarted(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!existsSync(marker)) {
    if (Date.now() > deadline) throw new Error("the slow setup never started");
    await Bun.sleep(10);
  }
}

describe("cancellation", () => {
  test("over stdio: the cancelled sync answers -32800, a concurrent call is unaffected, the lock is released", async () => {
    const s = new SpawnedServer(tw.ws, tw.env);
    servers.push(s);
    await s.initialize();
    s.send({ jsonrpc: "2.0", id: "slow", method: "tools/call", params: { name: "sync", arguments: { parallel: 1 } } });
    await setupStarted();
    // The server keeps answering other calls while the sync is blocked.
    const skipped: Message[] = [];
    const ls = await s.request("quick", "tools/call", { name: "ls", arguments: {} }, skipped);
    expect(ls.result).toMatchObject({ isError: false });
    s.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "slow", reason: "test" } });
    const cancelled = await s.responseTo("slow", skipped);
    expect(cancelled).toEqual({ jsonrpc: "2.0", id: "slow", error: { code: -32800, message: expect.stringMatching(/cancelled/i) } });
    expect(skipped).toEqual([]);
    // The workspace sync lock was released: another mutation can run now.
    const rm = await s.request("rm", "tools/call", { name: "rm", arguments: { id: "slow", force: true, skip_teardown: true, keep_files: true } });
    expect(rm.result).toMatchObject({ isError: false, structuredContent: { id: "slow", removed: true } });
    expect(await s.closeInput()).toBe(0);
    // Put the pack back for the next test.
    expect((await tw.grex("add", join(tw.upstream, "slow"), "slow-again", "--no-install")).code).toBe(0);
  });

  test("in process with the SDK client: aborting callTool sends notifications/cancelled and the session answers -32800", async () => {
    const transport = new SessionTransport(serverOptions(tw.ws, tw.env));
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(transport);
    try {
      const ac = new AbortController();
      const call = client.callTool({ name: "sync", arguments: {} }, undefined, { signal: ac.signal });
      const rejected = call.then(
        () => "resolved",
        () => "rejected",
      );
      await setupStarted();
      ac.abort("test");
      expect(await rejected).toBe("rejected");
      await transport.session.drain();
      const answer = transport.received.find((m) => "error" in m && m.error.code === -32800);
      expect(answer).toBeDefined();
      // The session is still usable.
      const r = (await client.callTool({ name: "ls", arguments: {} })) as { isError: boolean };
      expect(r.isError).toBe(false);
    } finally {
      await client.close();
    }
  });
});
