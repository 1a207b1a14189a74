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
