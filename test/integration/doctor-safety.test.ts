// doctor reports what add now refuses (children cycles, missing depends_on
// targets, depends_on cycles) when a pack on disk got it another way, and the
// leftovers of an interrupted rm, which --fix deletes.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let url: string;
beforeEach(async () => {
  t = new TestWorkspace("grex-doctor-safety-");
  expect((await t.grex("init")).code).toBe(0);
  url = t.repo("tools", { ".grex/pack.yaml": 'schema_version: "1"\nname: tools\ntype: meta\n' });
  expect((await t.grex("add", url)).code).toBe(0);
});
afterEach(() => t.cleanup());

type Finding = { check: string; severity: string; pack: string | null; detail: string };
const findings = async () => ((await t.grex("doctor", "--json")).json.findings as Finding[]).filter((f) => f.severity !== "ok");
const edit = (yaml: string) => writeFileSync(join(t.ws, "tools", ".grex", "pack.yaml"), `schema_version: "1"\nname: tools\n${yaml}`);

test("a child that repeats its parent's repository is a children cycle", async () => {
  edit(`type: meta\nchildren:\n  - url: ${JSON.stringify(url)}\n    path: again\n`);
  const f = await findings();
  expect(f).toContainEqual(expect.objectContaining({ check: "pack-schema", severity: "error", pack: "tools", detail: expect.stringContaining("children form a cycle: tools -> tools/again") }));
});

test("a depends_on naming no pack, and a depends_on cycle", async () => {
  edit("type: meta\ndepends_on: [nosuch]\n");
  expect((await findings()).some((f) => f.check === "pack-schema" && f.detail.includes("'nosuch'"))).toBe(true);
  edit("type: meta\ndepends_on: [tools]\n");
  expect((await findings()).some((f) => f.check === "pack-schema" && f.detail.includes("cycle"))).toBe(true);
});

test("trash left by an interrupted rm is reported and removed by --fix", async () => {
  const left = join(t.ws, ".grex/.state/trash/tools.1.2.x");
  mkdirSync(join(left, "sub"), { recursive: true });
  expect((await findings()).some((f) => f.check === "orphans" && f.detail.includes("interrupted grex rm"))).toBe(true);
  const dry = await t.grex("doctor", "--fix", "--dry-run", "--json");
  expect((dry.json.would_fix as string[]).join("\n")).toContain("interrupted grex rm");
  expect(existsSync(left)).toBe(true);
  const fix = await t.grex("doctor", "--fix", "--json");
  expect(fix.json.fixed).toContain("trash");
  expect(existsSync(left)).toBe(false);
});
