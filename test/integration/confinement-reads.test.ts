// Files grex reads on a user's, a client's or a pack's behalf: regular files
// only, inside the place they must be in, size-capped, and no error echoes
// what is in them. Plus the other "also seen" cases of the confinement issue:
// setuid/setgid mkdir modes, and env values that would run a command when
// the env file is sourced.
import { afterEach, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { allowedKeys, parseParams } from "../../src/verbs/validate.ts";
import { MCP_TOOL_VERBS } from "../../src/verbs/index.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

type ToolResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

async function fresh(): Promise<TestWorkspace> {
  t = new TestWorkspace("grex-confine-reads-");
  expect((await t.grex("init")).code).toBe(0);
  return t;
}

/** A pack repo whose .grex/pack.yaml is a symlink (committed as one) to `target`. */
function packWithLinkedYaml(name: string, target: string): string {
  const dir = join(t.upstream, name);
  mkdirSync(join(dir, ".grex"), { recursive: true });
  symlinkSync(target, join(dir, ".grex", "pack.yaml"));
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", "linked pack.yaml");
  return dir;
}

describe("pack.yaml", () => {
  test("a pack.yaml linked to a file outside the pack is refused (exit 3) without echoing its content", async () => {
    await fresh();
    const secret = join(t.root, "secret.yaml");
    writeFileSync(secret, "aws_secret_access_key: AKIAEXAMPLE\n");
    const r = await t.grex("add", packWithLinkedYaml("leaky", secret), "--json");
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("outside");
    expect(r.stdout + r.stderr).not.toContain("aws_secret_access_key");
    expect(r.stdout + r.stderr).not.toContain("AKIAEXAMPLE");
  });

  test("a pack.yaml that is a FIFO is refused at once instead of hanging grex add", async () => {
    await fresh();
    const url = t.repo("fifo", { "README.md": "x\n" });
    expect((await t.grex("add", url, "--no-install")).code).toBe(0);
    const fifo = join(t.ws, "fifo", ".grex", "pack.yaml");
    mkdirSync(join(t.ws, "fifo", ".grex"));
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const r = await t.grex("sync", "fifo");
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("is a FIFO (named pipe), not a regular file");
  });

  test("a pack.yaml linked to /dev/stdin is refused with a clear message, not a raw ESPIPE", async () => {
    await fresh();
    const r = await t.grex("add", packWithLinkedYaml("stdin", "/dev/stdin"));
    expect(r.code).toBe(3);
    expect(r.stderr).not.toContain("ESPIPE");
    expect(r.stderr).toMatch(/pack\.yaml resolves to .* outside /);
  });
});

describe("import --from-repos-json", () => {
  test("over MCP, a REPOS.json that is a symlink to a file outside the workspace is refused", async () => {
    await fresh();
    const outside = join(t.root, "outside.json");
    writeFileSync(outside, JSON.stringify([{ url: "https://example.invalid/x.git", path: "x" }]));
    symlinkSync(outside, join(t.ws, "link.json"));
    const client = new Client({ name: "grex-test", version: "1" });
    await client.connect(new SessionTransport(serverOptions(t.ws, t.env)));
    try {
      const r = (await client.callTool({ name: "import", arguments: { from_repos_json: "link.json" } }).catch((e: Error) => ({
        content: [{ type: "text", text: e.message }],
        isError: true,
      }))) as ToolResult;
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r)).toContain("outside the workspace");
    } finally {
      await client.close();
    }
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).not.toContain("example.invalid");
  });

  test("a REPOS.json that is a FIFO is refused; a wrong entry is named without echoing its value", async () => {
    await fresh();
    const fifo = join(t.ws, "fifo.json");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const r = await t.grex("import", "--from-repos-json", "fifo.json");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is a FIFO (named pipe), not a regular file");
    writeFileSync(join(t.ws, "bad.json"), JSON.stringify([{ url: 12345678, path: "x" }]));
    const bad = await t.grex("import", "--from-repos-json", "bad.json");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("at 0.url");
    expect(bad.stderr).not.toContain("12345678");
  });
});

describe("--allow-outside-home is CLI-only", () => {
  test("no MCP tool accepts it; the verbs that apply actions take it on the CLI", () => {
    for (const verb of MCP_TOOL_VERBS) expect(allowedKeys(verb, "mcp")).not.toContain("allow_outside_home");
    const appliers = MCP_TOOL_VERBS.filter((v) => allowedKeys(v, "cli").includes("allow_outside_home")).map((v) => v.name);
    expect(appliers.sort()).toEqual(["add", "rm", "run", "sync", "update"]);
    const sync = MCP_TOOL_VERBS.find((v) => v.name === "sync");
    if (!sync) throw new Error("no sync verb");
    expect(() => parseParams(sync, { allow_outside_home: true }, "mcp")).toThrow("available on the CLI only");
  });
});

describe("mkdir modes and env values", () => {
  test("mkdir mode 7777 (setuid, setgid) is a pack.yaml error (exit 3); nothing is created", async () => {
    await fresh();
    const yaml = `schema_version: "1"\nname: modes\ntype: declarative\nactions:\n  - mkdir: { path: $HOME/suid, mode: "7777" }\n`;
    const r = await t.grex("add", t.repo("modes", { ".grex/pack.yaml": yaml }));
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("must not set the setuid or setgid bit");
    expect(existsSync(join(t.home, "suid"))).toBe(false);
  });

  test("an env value with $(...) is written quoted: sourcing the machine env file runs nothing", async () => {
    await fresh();
    const machine = join(t.root, "environment");
    writeFileSync(machine, "");
    const marker = join(t.root, "pwned");
    const yaml = `schema_version: "1"\nname: envs\ntype: declarative\nactions:\n  - env: { name: GREX_X, value: "$$(touch ${marker})", scope: machine }\n`;
    const url = t.repo("envs", { ".grex/pack.yaml": yaml });
    const env = { ...t.env, GREX_MACHINE_ENV_FILE: machine };
    const { runCli } = await import("../../src/cli/run.ts");
    let err = "";
    const code = await runCli(["add", url], {
      cwd: t.ws,
      env,
      stdout: () => {},
      stderr: (s) => {
        err += s;
      },
      stdoutTTY: false,
      stderrTTY: false,
    });
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const r = Bun.spawnSync(["sh", "-c", `. "${machine}"; printf %s "$GREX_X"`], { env: { PATH: process.env.PATH ?? "" } });
    expect(r.stdout.toString()).toBe(`$(touch ${marker})`);
    expect(existsSync(marker)).toBe(false);
  });
});
