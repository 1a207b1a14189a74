// pack.yaml `mcp.servers`: what a valid declaration becomes, bad declarations
// refused by `grex add` with exit 3 and the field path (nothing registered),
// and a server id declared by two packs reported by `grex doctor`.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { validatePack } from "../../src/core/pack/schema.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(30_000);

const HEAD = 'schema_version: "1"\nname: NAME\ntype: declarative\n';

let tw: TestWorkspace;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-decl-");
  expect((await tw.grex("init")).code).toBe(0);
});

afterAll(() => tw.cleanup());

describe("schema", () => {
  test("a full declaration, with defaults filled in", () => {
    const m = validatePack(
      {
        schema_version: "1",
        name: "p",
        type: "declarative",
        mcp: {
          servers: [
            { id: "notes", transport: "stdio", command: ["bun", "server.ts"], env: { NOTES_DIR: "$HOME/notes" }, tools: ["search", "append"], approval: ["append"] },
            { id: "docs", transport: "streamable-http", url: "http://127.0.0.1:9000/mcp", headers: { Authorization: "Bearer $DOCS_TOKEN" }, approval: "all" },
          ],
        },
      },
      "pack.yaml",
    );
    expect(m.mcp_servers).toEqual([
      { id: "notes", transport: "stdio", command: ["bun", "server.ts"], url: null, headers: {}, env: { NOTES_DIR: "$HOME/notes" }, tools: ["search", "append"], approval: ["append"] },
      { id: "docs", transport: "streamable-http", command: null, url: "http://127.0.0.1:9000/mcp", headers: { Authorization: "Bearer $DOCS_TOKEN" }, env: {}, tools: null, approval: "all" },
    ]);
    expect(validatePack({ schema_version: "1", name: "p", type: "declarative" }, "pack.yaml").mcp_servers).toBeUndefined();
  });

  const bad: [string, unknown, string, string][] = [
    ["unknown transport", { id: "a", transport: "websocket", url: "http://x/mcp" }, "mcp.servers[0].transport", "'websocket' is not a known transport"],
    ["a shell string instead of argv", { id: "a", transport: "stdio", command: "bun server.ts" }, "mcp.servers[0].command", "write it as [bun, server.ts]"],
    ["missing command", { id: "a", transport: "stdio" }, "mcp.servers[0].command", "is missing"],
    ["missing url", { id: "a", transport: "streamable-http" }, "mcp.servers[0].url", "is missing"],
    ["a bad id", { id: "Notes", transport: "stdio", command: ["x"] }, "mcp.servers[0].id", "not a valid server id"],
    ["an unknown field", { id: "a", transport: "stdio", command: ["x"], shell: true }, "mcp.servers[0].shell", "not a known field"],
    ["approval neither list nor all", { id: "a", transport: "stdio", command: ["x"], approval: "some" }, "mcp.servers[0].approval", "list of tool names or all"],
  ];
  for (const [what, server, field, reason] of bad) {
    test(`${what} → integrity error naming ${field}`, () => {
      let err: unknown;
      try {
        validatePack({ schema_version: "1", name: "p", type: "declarative", mcp: { servers: [server] } }, "pack.yaml");
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ kind: "integrity", data: { field } });
      expect((err as Error).message).toContain(reason);
    });
  }
});

describe("grex add refuses bad declarations", () => {
  const cases: [string, string, string][] = [
    ["unknown transport", "mcp:\n  servers:\n    - id: a\n      transport: websocket\n      url: http://127.0.0.1:1/mcp\n", "mcp.servers[0].transport"],
    ["shell string", "mcp:\n  servers:\n    - id: a\n      transport: stdio\n      command: bun server.ts\n", "mcp.servers[0].command"],
    ["duplicate id", "mcp:\n  servers:\n    - id: a\n      transport: stdio\n      command: [x]\n    - id: a\n      transport: stdio\n      command: [y]\n", "mcp.servers[1].id"],
    ["missing command", "mcp:\n  servers:\n    - id: a\n      transport: stdio\n", "mcp.servers[0].command"],
    ["missing url", "mcp:\n  servers:\n    - id: a\n      transport: streamable-http\n", "mcp.servers[0].url"],
  ];
  cases.forEach(([what, yaml, field], i) => {
    test(`${what} → exit 3 with ${field}, nothing registered`, async () => {
      const name = `bad-${i}`;
      const repo = tw.repo(name, { ".grex/pack.yaml": HEAD.replace("NAME", name) + yaml });
      const manifestBefore = readFileSync(join(tw.ws, "grex.jsonl"), "utf8");
      const r = await tw.grex("add", repo);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(field);
      expect(r.stderr.split("\n").filter((l) => l.trim() !== "")).toHaveLength(1);
      expect(readFileSync(join(tw.ws, "grex.jsonl"), "utf8")).toBe(manifestBefore);
      expect((await tw.grex("mcp", "servers", "--json")).json.servers).toEqual([]);
    });
  });
});

describe("children of meta packs", () => {
  test("a server declared by a child pack is served, named with the child's pack id", async () => {
    const server = "mcp:\n  servers:\n    - id: from-child\n      transport: stdio\n      command: [x]\n";
    tw.repo("tool-child", { ".grex/pack.yaml": HEAD.replace("NAME", "tool-child") + server });
    const meta = tw.repo("tool-meta", { ".grex/pack.yaml": 'schema_version: "1"\nname: tool-meta\ntype: meta\nchildren:\n  - url: ../tool-child\n' });
    expect((await tw.grex("add", meta)).code).toBe(0);
    const servers = (await tw.grex("mcp", "servers", "--json")).json.servers as { id: string; pack: string }[];
    expect(servers).toContainEqual(expect.objectContaining({ id: "from-child", pack: "tool-meta/tool-child" }));
    expect((await tw.grex("rm", "tool-meta")).code).toBe(0);
    expect((await tw.grex("mcp", "servers", "--json")).json.servers).toEqual([]);
  });
});

describe("doctor", () => {
  test("a server id declared by two packs is a doctor error; only the first is served", async () => {
    const server = "mcp:\n  servers:\n    - id: shared\n      transport: stdio\n      command: [x]\n";
    expect((await tw.grex("add", tw.repo("first", { ".grex/pack.yaml": HEAD.replace("NAME", "first") + server }))).code).toBe(0);
    expect((await tw.grex("add", tw.repo("second", { ".grex/pack.yaml": HEAD.replace("NAME", "second") + server }))).code).toBe(0);
    const doctor = await tw.grex("doctor", "--json");
    expect(doctor.code).not.toBe(0);
    const findings = doctor.json.findings as { check: string; severity: string; pack: string | null; detail: string }[];
    const dup = findings.find((f) => f.detail.includes("'shared'"));
    expect(dup).toMatchObject({ check: "pack-schema", severity: "error", pack: "second" });
    expect(dup?.detail).toContain("already declared by pack 'first'");
    const servers = (await tw.grex("mcp", "servers", "--json")).json.servers as { id: string; pack: string }[];
    expect(servers).toEqual([expect.objectContaining({ id: "shared", pack: "first" })]);
  });
});
