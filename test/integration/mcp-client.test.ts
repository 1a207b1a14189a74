// `grex mcp status|call` over stdio against real servers: the reference
// "everything" server (third party, SDK-based), our own `grex serve`, and a
// hand-written server that misbehaves on purpose (dies, hangs, ignores SIGTERM).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";
import { running } from "../helpers/process.ts";

const EVERYTHING = join(import.meta.dir, "..", "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
const FAKE = join(import.meta.dir, "..", "helpers", "client-fake-server.ts");
const bun = process.execPath;
const everything = ["--", bun, EVERYTHING, "stdio"];
const grexServe = ["--", bun, GREX_MAIN, "serve"];
const fake = (mode: string, ...extra: string[]) => ["--", bun, FAKE, mode, ...extra];

let tw: TestWorkspace;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-client-");
  tw.repo("child-a");
  tw.repo("child-b");
  const meta = tw.repo("meta-basic");
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", meta)).code).toBe(0);
});

afterAll(() => tw.cleanup());

/** Is `pid` still a live process? (Polls briefly: a killed child may take a moment to be reaped.) */
async function alive(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!running(pid)) return false;
    await Bun.sleep(50);
  }
  return true;
}

/** Run grex as a real process (so an unreaped server child would outlive it). */
async function grexProcess(...argv: string[]) {
  const proc = tw.spawnGrex(argv);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("against the reference everything server (third party)", () => {
  test("status: server info, protocol, capabilities and tools with hints", async () => {
    const r = await tw.grex("mcp", "status", "--json", ...everything);
    expect(r.code).toBe(0);
    const doc = r.json as {
      transport: string;
      server: { name: string; version: string };
      protocol_version: string;
      capabilities: Record<string, unknown>;
      tools: { name: string; description?: string; read_only: boolean; destructive: boolean; input_schema: Record<string, unknown> }[];
    };
    expect(doc.transport).toBe("stdio");
    expect(doc.server.name).toContain("everything");
    expect(doc.protocol_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(doc.capabilities.tools).toBeDefined();
    const echo = doc.tools.find((t) => t.name === "echo");
    expect(echo?.description).toBeString();
    expect(echo?.read_only).toBe(true);
    expect(echo?.destructive).toBe(false);
    expect(echo?.input_schema.type).toBe("object");
  });

  test("status, human form", async () => {
    const r = await tw.grex("mcp", "status", "--plain", ...everything);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Server: mcp-servers/everything");
    expect(r.stdout).toMatch(/Protocol: \d{4}-\d{2}-\d{2}/);
    expect(r.stdout).toContain("Capabilities:");
    expect(r.stdout).toMatch(/- echo .*\[read-only/);
    expect(r.stdout).toContain("Echoes back the input string");
  });

  test("call prints the text content; --json gives the whole result", async () => {
    const r = await tw.grex("mcp", "call", "echo", "--args", '{"message":"hello grex"}', ...everything);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("Echo: hello grex");
    const j = await tw.grex("mcp", "call", "get-structured-content", "--args", '{"location":"New York"}', "--json", ...everything);
    expect(j.code).toBe(0);
    expect(j.json.is_error).toBe(false);
    expect(j.json.structured_content).toBeObject();
  });
});

describe("against our own grex serve", () => {
  test("status lists the 11 grex tools", async () => {
    const r = await tw.grex("mcp", "status", "--json", ...grexServe);
    expect(r.code).toBe(0);
    expect(r.json.server).toEqual({ name: "grex", version: expect.any(String) });
    const tools = r.json.tools as { name: string; read_only: boolean; destructive: boolean }[];
    expect(tools.map((t) => t.name)).toEqual(["init", "add", "rm", "ls", "status", "sync", "update", "doctor", "import", "run", "exec"]);
    expect(tools.find((t) => t.name === "ls")?.read_only).toBe(true);
    expect(tools.find((t) => t.name === "rm")?.destructive).toBe(true);
  });

  test("call ls: structured content is byte-identical to `grex ls --json`", async () => {
    const direct = await tw.grex("ls", "--json");
    const r = await tw.grex("mcp", "call", "ls", "--json", ...grexServe);
    expect(r.code).toBe(0);
    expect(JSON.stringify(r.json.structured_content)).toBe(direct.stdout.trim());
    // Human form: the tool's text content, which for grex is the same document.
    const plain = await tw.grex("mcp", "call", "ls", ...grexServe);
    expect(plain.stdout.trim()).toBe(direct.stdout.trim());
  });

  test("a tool that fails (isError) exits 4 and keeps the result", async () => {
    const r = await tw.grex("mcp", "call", "exec", "--args", '{"cmd":"false"}', "--json", ...grexServe);
    expect(r.code).toBe(4);
    expect(r.json.is_error).toBe(true);
    expect(r.json.error).toMatchObject({ kind: "pack_op", code: 4 });
    expect((r.json.structured_content as { error: { kind: string } }).error.kind).toBe("pack_op");
  });

  test("a JSON-RPC error from the server (unknown argument) exits 6 with the server's message", async () => {
    const r = await tw.grex("mcp", "call", "ls", "--args", '{"bogus":1}', ...grexServe);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("-32602");
    expect(r.stderr).toContain("bogus");
  });
});

describe("servers that misbehave", () => {
  test("notifications interleaved before the answer are skipped", async () => {
    const r = await tw.grex("mcp", "call", "probe", "--args", '{"n":1}', "--json", ...fake("notify"));
    expect(r.code).toBe(0);
    expect(r.json.structured_content).toEqual({ args: { n: 1 } });
  });

  test("isError from a third-party server exits 4 with its text as the reason", async () => {
    const r = await tw.grex("mcp", "call", "probe", ...fake("is-error"));
    expect(r.code).toBe(4);
    expect(r.stdout).toContain("probe failed: no such thing");
    expect(r.stderr).toContain("probe failed: no such thing");
  });

  test("a server that dies mid-call: a clear error (not a timeout), and no process left", async () => {
    const pidfile = join(tw.root, "die.pid");
    const r = await grexProcess("mcp", "call", "probe", "--timeout", "60000", ...fake("die-on-call", pidfile));
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("closed the connection during tools/call probe");
    expect(await alive(Number(readFileSync(pidfile, "utf8")))).toBe(false);
  });

  test("a server that never answers the call: exit 6 after --timeout, and it is reaped", async () => {
    const pidfile = join(tw.root, "hang.pid");
    const r = await grexProcess("mcp", "call", "probe", "--timeout", "300", ...fake("hang-on-call", pidfile));
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("did not answer tools/call probe within 300 ms");
    expect(await alive(Number(readFileSync(pidfile, "utf8")))).toBe(false);
  });

  test("a server that ignores SIGTERM and EOF is still killed", async () => {
    const pidfile = join(tw.root, "stubborn.pid");
    const r = await grexProcess("mcp", "call", "probe", "--timeout", "300", ...fake("stubborn", pidfile));
    expect(r.code).toBe(6);
    expect(existsSync(pidfile)).toBe(true);
    expect(await alive(Number(readFileSync(pidfile, "utf8")))).toBe(false);
  });

  test("Ctrl-C during a call: exit 130 and the server (even one ignoring SIGTERM) is reaped", async () => {
    const pidfile = join(tw.root, "int.pid");
    const called = join(tw.root, "int.called");
    const proc = tw.spawnGrex(["mcp", "call", "probe", "--timeout", "60000", ...fake("stubborn", pidfile, called)]);
    while (!existsSync(called)) {
      if (proc.exitCode !== null) throw new Error("grex mcp exited before the call arrived");
      await Bun.sleep(20);
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(await alive(Number(readFileSync(pidfile, "utf8")))).toBe(false);
  });

  test("a command that exits at once: exit 6 without waiting for the timeout", async () => {
    const r = await tw.grex("mcp", "status", "--timeout", "60000", "--", bun, "-e", "process.exit(0)");
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("closed the connection during initialize");
  });

  test("a process that never speaks: exit 6 after --timeout", async () => {
    const r = await tw.grex("mcp", "status", "--timeout", "300", "--", bun, "-e", "setInterval(() => {}, 1000)");
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("did not answer initialize within 300 ms");
  });

  test("a command that does not exist: exit 6", async () => {
    const r = await tw.grex("mcp", "status", "--", "grex-no-such-command-xyz");
    expect(r.code).toBe(6);
    expect(r.stderr).toContain("'grex-no-such-command-xyz' not found");
  });

  test("nothing listening at --url: exit 6", async () => {
    // Bind a port, then free it: nothing listens there any more.
    const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = probe.port;
    await probe.stop(true);
    const r = await tw.grex("mcp", "status", "--timeout", "2000", "--url", `http://127.0.0.1:${port}/mcp`);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(`http://127.0.0.1:${port}/mcp`);
  });
});

test("neither --url nor a command: grex serve --http's default address, http://127.0.0.1:8080/mcp", async () => {
  // Whatever listens there on this machine (most often nothing), the URL it tried is named or it answered.
  const r = await tw.grex("mcp", "status", "--timeout", "2000", "--json");
  if (r.code === 0) expect(r.json.endpoint).toBe("http://127.0.0.1:8080/mcp");
  else expect(r.stderr).toContain("http://127.0.0.1:8080/mcp");
});

describe("usage errors exit 2", () => {
  const cases: [string, string[], string][] = [
    ["both --url and a command", ["mcp", "status", "--url", "http://127.0.0.1:1/mcp", "--", "x"], "either --url or"],
    ["bad --args JSON", ["mcp", "call", "probe", "--args", "{nope", "--", "x"], "Invalid --args"],
    ["--args not an object", ["mcp", "call", "probe", "--args", "[1,2]", "--", "x"], "must be a JSON object"],
    ["unknown subcommand", ["mcp", "frobnicate", "--", "x"], "Unknown subcommand"],
    ["call without a tool", ["mcp", "call", "--url", "http://127.0.0.1:1/mcp"], "needs a tool name"],
    ["status with a tool", ["mcp", "status", "ls", "--", "x"], "takes no tool name"],
    ["a URL that is not http", ["mcp", "status", "--url", "ftp://example.invalid/"], "Invalid --url"],
    ["--token with a stdio server", ["mcp", "status", "--token", "t", "--", "x"], "--token applies to --url only"],
  ];
  for (const [name, argv, message] of cases) {
    test(name, async () => {
      const r = await tw.grex(...argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    });
  }
});
