// The workspace lock each verb declares, taken by the one invoke path: with a
// real grex CLI and another process holding the lock (exclusive, as a sync
// does, or shared, as a run does).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

const HOLDER = join(import.meta.dir, "..", "helpers", "lock-holder.ts");

let w: TestWorkspace;
beforeAll(async () => {
  w = new TestWorkspace("grex-effects-");
  expect((await w.grex("init")).code).toBe(0);
  const url = w.repo("setup", { ".grex/pack.yaml": 'schema_version: "1"\nname: setup\ntype: declarative\nactions:\n  - mkdir: { path: $HOME/made }\n' });
  writeFileSync(join(w.ws, "one.json"), JSON.stringify([{ url, path: "setup" }]));
  expect((await w.grex("import", "--from-repos-json", "one.json")).code).toBe(0);
  expect((await w.grex("sync")).code).toBe(0);
});
afterAll(() => w.cleanup());

/** Run `fn` while another process holds the workspace lock in `kind` mode. */
async function whileHeld(kind: "workspace" | "workspace-shared", fn: () => Promise<void>): Promise<void> {
  const holder = Bun.spawn([process.execPath, HOLDER, w.ws, kind], { stdout: "pipe", stderr: "inherit" });
  const reader = (holder.stdout as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toContain("held");
  try {
    await fn();
  } finally {
    holder.kill("SIGKILL");
    await holder.exited;
  }
}

describe("declared effects are enforced for every call", () => {
  test("while a mutation pass holds the workspace: run fails fast (exit 5, naming the holder); import, readers and dry runs go on", async () => {
    await whileHeld("workspace", async () => {
      const run = await w.grex("run", "mkdir", "--json");
      expect(run.code).toBe(5);
      expect(run.stderr).toContain("grex sync (pid");
      expect((run.json.error as { kind: string; code: number }).code).toBe(5);
      expect((await w.grex("run", "mkdir", "--dry-run")).code).toBe(0);
      expect((await w.grex("ls")).code).toBe(0);
      writeFileSync(join(w.ws, "two.json"), JSON.stringify([{ url: w.repo("later", { "x.txt": "x\n" }), path: "later" }]));
      expect((await w.grex("import", "--from-repos-json", "two.json")).code).toBe(0);
    });
  });

  test("while a run holds it shared: another run goes on, a sync fails fast", async () => {
    await whileHeld("workspace-shared", async () => {
      expect((await w.grex("run", "mkdir")).code).toBe(0);
      const sync = await w.grex("sync");
      expect(sync.code).toBe(5);
      expect(sync.stderr).toContain("grex run (pid");
    });
  });

  test("add, update, rm and teardown hold the lock their verb declares (taken once, by invoke): each fails fast while a sync holds it", async () => {
    await whileHeld("workspace", async () => {
      const url = w.repo("blocked", { "x.txt": "x\n" });
      for (const args of [["add", url, "blocked"], ["update"], ["rm", "setup", "--keep-files"], ["teardown", "setup"]]) {
        const r = await w.grex(...args);
        expect({ args, code: r.code }).toEqual({ args, code: 5 });
        expect(r.stderr).toContain("grex sync (pid");
      }
    });
    expect((await w.grex("ls", "--json")).json.packs).toContainEqual(expect.objectContaining({ id: "setup" }));
  });

  test("init takes the lock itself for its clone pass (the one verb that cannot declare it): fails fast while held, clones after", async () => {
    writeFileSync(join(w.ws, "three.json"), JSON.stringify([{ url: w.repo("missing", { "m.txt": "m\n" }), path: "missing" }]));
    expect((await w.grex("import", "--from-repos-json", "three.json")).code).toBe(0);
    await whileHeld("workspace", async () => {
      const init = await w.grex("init");
      expect(init.code).toBe(5);
      expect(init.stderr).toContain("grex sync (pid");
      expect(existsSync(join(w.ws, "missing", ".git"))).toBe(false);
    });
    expect((await w.grex("init")).code).toBe(0);
    expect(existsSync(join(w.ws, "missing", ".git"))).toBe(true);
  });
});
