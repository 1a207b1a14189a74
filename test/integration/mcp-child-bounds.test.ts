// A pack-declared MCP server cannot exhaust grex's memory or outlive it: a
// message over the cap fails that call (isError naming the server and the
// limit) and the server is started afresh by the next call; everything a
// child started — in its process group or in a session of its own — is
// stopped with it; `grex serve` ends on stdin EOF while a child hangs.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Gateway } from "../../src/mcp/gateway/gateway.ts";
import { gatewayOptions, serversPackYaml } from "../helpers/mcp-gateway.ts";
import { running } from "../helpers/process.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(60_000);

const HOSTILE = join(import.meta.dir, "..", "helpers", "mcp-hostile-server.ts");

let tw: TestWorkspace;
let logFile: string;
const gateways: Gateway[] = [];

function hostile(id: string, env: Record<string, string> = {}): string {
  const vars = Object.entries({ FIXTURE_NAME: id, FIXTURE_LOG: logFile, ...env }).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  return [`    - id: ${id}`, "      transport: stdio", `      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(HOSTILE)}]`, `      env: { ${vars.join(", ")} }`].join("\n");
}

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-bounds-");
  logFile = join(tw.root, "hostile.log");
  const pack = tw.repo("hostile-pack", {
    ".grex/pack.yaml": serversPackYaml("hostile-pack", [hostile("hostile"), hostile("small", { FLOOD_BYTES: "200000" })]),
  });
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", pack)).code).toBe(0);
});

afterAll(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  tw.cleanup();
});

function gateway(env: Record<string, string> = {}, logs: string[] = []): Gateway {
  const g = new Gateway(gatewayOptions(tw, logs, { env: { ...tw.env, ...env } }));
  gateways.push(g);
  return g;
}

const hooks = () => ({ signal: new AbortController().signal, sendProgress: () => {}, readOnly: false });
const textOf = (r: Record<string, unknown> | undefined) => ((r?.content ?? []) as { text: string }[]).map((c) => c.text).join("\n");

/** Poll `cond` until it holds (a guard against hangs, not a timing assertion). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

describe("message size cap", () => {
  test("a 200 MB line fails that call with an isError result naming the server and the limit; the next call starts it afresh", async () => {
    const g = gateway();
    const first = Number(textOf(await g.call("hostile__pid", {}, hooks())));
    const r = await g.call("hostile__flood", {}, hooks());
    expect(r?.isError).toBe(true);
    const text = textOf(r);
    expect(text).toContain("MCP server 'hostile'");
    expect(text).toContain("over the 4 MiB limit");
    expect(text).toContain("GREX_MCP_MAX_MESSAGE_BYTES");
    expect(text).toContain("flood");
    await until(() => !running(first), "the flooding child to be stopped");
    const again = await g.call("hostile__pid", {}, hooks());
    expect(again?.isError).toBeFalsy();
    expect(Number(textOf(again))).not.toBe(first);
  });

  test("the cap is configurable (GREX_MCP_MAX_MESSAGE_BYTES) and the error names the value", async () => {
    const logs: string[] = [];
    const g = gateway({ GREX_MCP_MAX_MESSAGE_BYTES: "65536" }, logs);
    const r = await g.call("small__flood", {}, hooks());
    expect(r?.isError).toBe(true);
    expect(textOf(r)).toContain("over the 65536-byte limit (GREX_MCP_MAX_MESSAGE_BYTES)");
    // Under the default cap the same 200 kB answer goes through.
    const plain = await gateway().call("small__flood", {}, hooks());
    expect(plain?.isError).toBeFalsy();
    expect(textOf(plain).length).toBe(1024 * 1024); // the fixture writes whole 1 MiB chunks
  });

  test("a value that is not a whole number of bytes >= 1024 is warned about and the default applies", () => {
    const logs: string[] = [];
    gateway({ GREX_MCP_MAX_MESSAGE_BYTES: "lots" }, logs);
    expect(logs.join("\n")).toContain("GREX_MCP_MAX_MESSAGE_BYTES='lots' is not a whole number of bytes");
  });
});

describe("process tree", () => {
  test("stopping a child stops its process group and a grandchild that left it (setsid), even when the child ignores SIGTERM", async () => {
    const g = gateway();
    const child = Number(textOf(await g.call("hostile__pid", {}, hooks())));
    const forked = JSON.parse(textOf(await g.call("hostile__fork", {}, hooks()))) as { same: number; own: number };
    await until(() => running(forked.same) && running(forked.own), "the grandchildren to start");
    expect(textOf(await g.call("hostile__ignore-term", {}, hooks()))).toBe("ignoring SIGTERM");
    await g.close();
    await until(() => !running(child) && !running(forked.same) && !running(forked.own), "the child and both grandchildren to be gone");
  });
});

describe("grex serve", () => {
  test("ends on stdin EOF while a child hangs and ignores SIGTERM; the child and its grandchildren go with it", async () => {
    const proc = Bun.spawn([process.execPath, GREX_MAIN, "serve"], { cwd: tw.ws, env: tw.env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    const answers = new Map<number, Record<string, unknown>>();
    void (async () => {
      let buf = "";
      const dec = new TextDecoder();
      for await (const chunk of proc.stdout) {
        buf += dec.decode(chunk, { stream: true });
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          const m = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
          if (typeof m.id === "number") answers.set(m.id, m);
          buf = buf.slice(nl + 1);
          nl = buf.indexOf("\n");
        }
      }
    })();
    const send = (m: object) => {
      proc.stdin.write(`${JSON.stringify(m)}\n`);
      proc.stdin.flush();
    };
    const ask = async (id: number, name: string) => {
      send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } });
      await until(() => answers.has(id), `answer ${id}`);
      return textOf((answers.get(id) as { result: Record<string, unknown> }).result);
    };
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    await until(() => answers.has(1), "initialize");
    const child = Number(await ask(2, "hostile__pid"));
    const forked = JSON.parse(await ask(3, "hostile__fork")) as { same: number; own: number };
    await ask(4, "hostile__ignore-term");
    send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "hostile__hang", arguments: {} } });
    await until(() => existsSync(logFile) && readFileSync(logFile, "utf8").split("\n").some((l) => l.startsWith("hostile hanging")), "the hang call to reach the child");
    proc.stdin.end();
    expect(await proc.exited).toBe(0);
    // The hanging call was answered (cancelled) before the server went.
    expect((answers.get(5) as { error?: { code: number } }).error?.code).toBe(-32800);
    await until(() => !running(child) && !running(forked.same) && !running(forked.own), "the child and its grandchildren to be gone");
  });
});
