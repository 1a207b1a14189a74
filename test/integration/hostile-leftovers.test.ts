// A clone killed mid-way leaves a hidden `.<name>.grex-clone-<pid>-*` folder
// beside its pack: the next sync of that pack removes it, and doctor reports
// it (fixable) until then. A folder whose process still runs is left alone.
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-leftovers-");
afterAll(() => t.cleanup());

/** The pid of a process that has exited (so a folder named after it is a dead clone's). */
function deadPid(): number {
  const p = Bun.spawnSync(["sh", "-c", "echo $$"], { stdout: "pipe" });
  return Number(p.stdout.toString().trim());
}

function leftover(name: string, pid: number): string {
  const dir = join(t.ws, `.${name}.grex-clone-${pid}-abc123`);
  mkdirSync(join(dir, ".git"), { recursive: true });
  writeFileSync(join(dir, "half"), "x");
  return dir;
}

test("doctor reports a dead clone's folder and --fix removes it; a live one is left alone", async () => {
  expect((await t.grex("init")).code).toBe(0);
  const dead = leftover("gone", deadPid());
  const live = leftover("busy", process.pid === 1 ? 2 : 1); // pid 1 always runs
  const r = await t.grex("doctor", "--json");
  const findings = (r.json.findings as Array<{ check: string; detail: string; auto_fixable: boolean }>).filter((f) => f.detail.includes("grex-clone"));
  expect(findings).toHaveLength(1);
  expect(findings[0]?.check).toBe("orphans");
  expect(findings[0]?.detail).toContain(dead);
  expect(findings[0]?.auto_fixable).toBe(true);
  expect((await t.grex("doctor", "--fix")).code).toBeLessThan(2);
  expect(existsSync(dead)).toBe(false);
  expect(existsSync(live)).toBe(true);
});

test("the next sync of the pack removes its dead clone folder", async () => {
  const up = t.repo("tools", { README: "x\n" });
  expect((await t.grex("add", up, "tools")).code).toBe(0);
  const dead = leftover("tools", deadPid());
  expect((await t.grex("sync")).code).toBe(0);
  expect(existsSync(dead)).toBe(false);
});

test("a submodule clone killed mid-way inside a pack is reported by doctor and removed by the next sync", async () => {
  const { git } = await import("../helpers/workspace.ts");
  const lib = t.repo("sublib", { "lib.txt": "lib\n" });
  const up = t.repo("withsub", { README: "x\n" });
  git(up, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../sublib", "vendor/lib");
  git(up, "commit", "-q", "-m", "lib");
  writeFileSync(join(t.home, ".gitconfig"), '[protocol "file"]\n\tallow = always\n'); // local submodule URLs: the user's opt-in
  expect((await t.grex("add", "--recurse-submodules", up, "withsub")).code).toBe(0);
  const pack = join(t.ws, "withsub");
  expect(existsSync(join(pack, "vendor", "lib", "lib.txt"))).toBe(true);
  // What a SIGKILL during the submodule's clone leaves: a hidden folder beside it.
  const dead = join(pack, "vendor", `.lib.grex-clone-${deadPid()}-abc123`);
  mkdirSync(join(dead, ".git"), { recursive: true });
  writeFileSync(join(dead, "half"), "x");
  const r = await t.grex("doctor", "--json");
  const found = (r.json.findings as Array<{ check: string; detail: string }>).filter((f) => f.detail.includes("grex-clone"));
  expect(found.map((f) => [f.check, f.detail.split(" ")[0]])).toEqual([["orphans", dead]]);
  const s = await t.grex("sync", "--json");
  expect(s.code).toBe(0);
  expect((s.json.packs as Array<{ id: string; result: string }>).find((p) => p.id === "withsub")?.result).toBe("ok");
  expect(existsSync(dead)).toBe(false);
  const st = await t.grex("status", "--json");
  expect((st.json.packs as Array<{ id: string; drift: string }>).find((p) => p.id === "withsub")?.drift).toBe("clean");
  void lib;
});
