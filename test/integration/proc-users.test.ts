// Every place grex starts a command goes through the one runner: a command
// that leaves a background process holding its output open does not keep
// `grex exec`, an exec action or a scripted hook waiting. (Bun's test timeout
// is the guard; nothing measures time.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

let w: TestWorkspace;
const strays: number[] = [];
const LEAVE_STRAY = 'sleep 30 & echo $! >> "$HOME/strays"; echo started';

beforeAll(async () => {
  w = new TestWorkspace("grex-proc-users-");
  expect((await w.grex("init")).code).toBe(0);
  const actions = `  - exec: { cmd_shell: '${LEAVE_STRAY}', shell: true }\n`;
  const decl = w.repo("decl", { ".grex/pack.yaml": `schema_version: "1"\nname: decl\ntype: declarative\nactions:\n${actions}` });
  const scripted = w.repo("hooked", {
    ".grex/pack.yaml": 'schema_version: "1"\nname: hooked\ntype: scripted\n',
    ".grex/hooks/setup.sh": `${LEAVE_STRAY}\n`,
  });
  writeFileSync(join(w.ws, "repos.json"), JSON.stringify([{ url: decl, path: "decl" }, { url: scripted, path: "hooked" }]));
  expect((await w.grex("import", "--from-repos-json", "repos.json")).code).toBe(0);
});

afterAll(() => {
  try {
    for (const line of readFileSync(join(w.home, "strays"), "utf8").split("\n")) if (line) strays.push(Number(line));
  } catch {
    // none started
  }
  for (const pid of strays) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  w.cleanup();
});

describe("a background process holding the pipes", () => {
  test("sync: the exec action and the scripted hook finish without waiting for it", async () => {
    const r = await w.grex("sync", "--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(w.home, "strays"), "utf8").trim().split("\n").length).toBe(2);
  }, 20_000);

  test("grex exec --shell returns the command's output without waiting for it", async () => {
    const r = await w.grex("exec", "--shell", LEAVE_STRAY, "--json");
    expect(r.code).toBe(0);
    const results = r.json.results as { pack: string; stdout: string }[];
    expect(results.map((x) => x.stdout)).toEqual(["started\n", "started\n"]);
  }, 20_000);
});
