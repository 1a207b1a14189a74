// Per-call state and per-pack state through the one invoke path: a real MCP
// client (the SDK Client) over one in-process session, real packs and real
// child processes. No timing assertions: gates are files the test creates.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

interface ToolResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown> & { error?: { kind: string; code: number; message: string } };
}

const open: Array<{ w: TestWorkspace; client?: Client }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.client?.close();
    o.w.cleanup();
  }
});

const packYaml = (name: string, actions: string) => `schema_version: "1"\nname: ${name}\ntype: declarative\nactions:\n${actions}`;

/** A workspace with the given declarative packs registered and synced (installed). */
async function workspaceWith(packs: Record<string, string>, prepare?: (w: TestWorkspace) => void): Promise<TestWorkspace> {
  const w = new TestWorkspace("grex-invoke-state-");
  open.push({ w });
  prepare?.(w);
  expect((await w.grex("init")).code).toBe(0);
  const entries = Object.entries(packs).map(([name, actions]) => ({
    url: w.repo(name, { ".grex/pack.yaml": packYaml(name, actions) }),
    path: name,
  }));
  writeFileSync(join(w.ws, "repos.json"), JSON.stringify(entries));
  expect((await w.grex("import", "--from-repos-json", "repos.json")).code).toBe(0);
  const sync = await w.grex("sync");
  expect(sync.stderr).toBe("");
  expect(sync.code).toBe(0);
  return w;
}

async function connect(w: TestWorkspace): Promise<(name: string, args?: Record<string, unknown>) => Promise<ToolResult>> {
  const transport = new SessionTransport(serverOptions(w.ws, w.env));
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(transport);
  const entry = open.find((o) => o.w === w);
  if (entry) entry.client = client;
  return (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await Bun.sleep(10); // a guard against hangs, not a timing assertion
  expect(cond()).toBe(true);
}

describe("per-call env", () => {
  test("two MCP calls that set a session-scope env value each see only their own; later calls and the server see none", async () => {
    const writer = (name: string, value: string) =>
      `  - when:\n      any_of: [{ os: linux }, { os: macos }]\n      actions:\n        - env: { name: GREX_CALL_VALUE, value: ${value}, scope: session }\n        - exec: { cmd: [sh, -c, 'printf %s "$$GREX_CALL_VALUE" > "$$HOME/${name}.out"'] }\n`;
    const w = await workspaceWith({
      pa: writer("pa", "from-a"),
      pb: writer("pb", "from-b"),
      pc: `  - exec: { cmd: [sh, -c, 'printf %s "$\${GREX_CALL_VALUE-unset}" > "$$HOME/pc.out"'] }\n`,
    });
    expect(process.env.GREX_CALL_VALUE).toBeUndefined(); // the CLI sync above kept it in its own call
    for (const f of ["pa", "pb", "pc"]) rmSync(join(w.home, `${f}.out`), { force: true });

    const call = await connect(w);
    const [a, b] = await Promise.all([call("run", { action: "when", filter: "pa" }), call("run", { action: "when", filter: "pb" })]);
    expect(a.isError).toBe(false);
    expect(b.isError).toBe(false);
    expect(readFileSync(join(w.home, "pa.out"), "utf8")).toBe("from-a");
    expect(readFileSync(join(w.home, "pb.out"), "utf8")).toBe("from-b");

    expect((await call("run", { action: "exec", filter: "pc" })).isError).toBe(false);
    expect(readFileSync(join(w.home, "pc.out"), "utf8")).toBe("unset");
    expect(process.env.GREX_CALL_VALUE).toBeUndefined();
  }, 60_000);
});

describe("per-pack state under the declared locks", () => {
  test("over one MCP session, a sync while a run works on the pack is refused (lock), and the pack's state file stays whole", async () => {
    const w = await workspaceWith(
      { slow: `  - mkdir: { path: $HOME/made }\n  - exec: { cmd: [sh, -c, 'touch "$$HOME/started"; while [ ! -f "$$HOME/gate" ]; do sleep 0.02; done'] }\n` },
      (t) => writeFileSync(join(t.home, "gate"), ""), // open while the first sync installs
    );
    const statePath = join(w.ws, ".grex", ".state", "packs", "slow.json");
    const before = readFileSync(statePath, "utf8");
    expect(JSON.parse(before)).toBeTruthy();
    rmSync(join(w.home, "gate"));
    rmSync(join(w.home, "started"), { force: true });

    const call = await connect(w);
    const running = call("run", { action: "exec", filter: "slow" });
    await until(() => existsSync(join(w.home, "started")));
    const sync = await call("sync", { force: true });
    expect(sync.isError).toBe(true);
    expect(sync.structuredContent?.error?.kind).toBe("lock");
    expect(sync.structuredContent?.error?.code).toBe(-32003);
    // A second run beside the first is allowed (shared); the pack lock orders their state writes.
    const second = call("run", { action: "mkdir", filter: "slow" });
    writeFileSync(join(w.home, "gate"), "");
    expect((await running).isError).toBe(false);
    expect((await second).isError).toBe(false);
    expect((await call("sync", { force: true })).isError).toBe(false);
    const after = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, unknown>;
    expect(after).toEqual(JSON.parse(before));
  }, 60_000);
});

describe("an unreadable per-pack state file is an integrity error, never overwritten", () => {
  const actions = "  - mkdir: { path: $HOME/made }\n";

  for (const [what, spoil] of [
    ["corrupt JSON", (p: string) => writeFileSync(p, '{"mkdir:$HOME/made": {"created": tru')],
    ["a directory in its place (EISDIR)", (p: string) => {
      rmSync(p, { force: true });
      mkdirSync(p);
    }],
  ] as const) {
    test(`${what}: run, sync and rm exit 3 naming the file, and leave it as it was`, async () => {
      const w = await workspaceWith({ keep: actions });
      const statePath = join(w.ws, ".grex", ".state", "packs", "keep.json");
      expect(existsSync(statePath)).toBe(true);
      spoil(statePath);
      const snapshot = () => safeRead(statePath);
      const original = snapshot();

      const run = await w.grex("run", "mkdir");
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(statePath);
      expect(snapshot()).toEqual(original);

      const sync = await w.grex("sync", "--force");
      expect(sync.code).toBe(3);
      expect(sync.stderr).toContain(statePath);
      expect(snapshot()).toEqual(original);

      const rm = await w.grex("rm", "keep");
      expect(rm.code).toBe(3);
      expect(rm.stderr).toContain(statePath);
      expect(snapshot()).toEqual(original);
      expect(existsSync(join(w.ws, "keep", ".git"))).toBe(true); // not removed
      expect((await w.grex("ls", "--json")).json.packs).toHaveLength(1); // still registered
    }, 60_000);
  }
});

function safeRead(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    return `unreadable:${(err as NodeJS.ErrnoException).code}`;
  }
}

describe("a broken pack.yaml is reported, not taken for drift", () => {
  test("status exits 3 naming the file instead of calling the pack stale", async () => {
    const w = await workspaceWith({ broken: "  - mkdir: { path: $HOME/made }\n" });
    const file = join(w.ws, "broken", ".grex", "pack.yaml");
    writeFileSync(file, "schema_version: [unclosed\n");
    const status = await w.grex("status", "--json");
    expect(status.code).toBe(3);
    expect(status.stderr).toContain(file);
  }, 60_000);
});
