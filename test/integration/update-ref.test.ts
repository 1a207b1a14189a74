// Reported: `update --ref nosuchbranch <id>` exited 4 but recorded the bad pin,
// so every later sync failed. The pin is now recorded only after the pack reached it.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseManifest } from "../../src/core/workspace/manifest.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let up: string;
beforeEach(async () => {
  t = new TestWorkspace("grex-upref-");
  expect((await t.grex("init")).code).toBe(0);
  up = t.repo("tools", { "README.md": "tools\n" });
  expect((await t.grex("add", up)).code).toBe(0);
});
afterEach(() => t.cleanup());

const refs = () =>
  parseManifest(readFileSync(join(t.ws, "grex.jsonl"), "utf8"), "grex.jsonl").events.filter(
    (e) => e.op === "update" && "ref" in e,
  );

test("update --ref nosuchbranch exits 4, records no pin, and a later sync is fine", async () => {
  const r = await t.grex("update", "--ref", "nosuchbranch", "tools", "--json");
  expect(r.code).toBe(4);
  expect(r.stderr).toContain("was not recorded");
  expect(refs()).toEqual([]);
  const ls = await t.grex("ls", "--json");
  expect((ls.json.packs as Array<{ ref: string | null }>)[0]?.ref ?? null).toBeNull();
  expect((await t.grex("sync")).code).toBe(0);
});

test("update --ref <existing branch> moves the pack and records the pin", async () => {
  git(up, "checkout", "-q", "-b", "stable");
  const sha = t.commit(up, { "stable.txt": "s\n" });
  git(up, "checkout", "-q", "main");
  const r = await t.grex("update", "--ref", "stable", "tools", "--json");
  expect(r.code).toBe(0);
  expect(refs().map((e) => ("ref" in e ? e.ref : undefined))).toEqual(["stable"]);
  expect(git(join(t.ws, "tools"), "rev-parse", "HEAD")).toBe(sha);
  expect((await t.grex("sync")).code).toBe(0);
  expect(git(join(t.ws, "tools"), "rev-parse", "HEAD")).toBe(sha);
});

test("update --ref --dry-run records nothing", async () => {
  git(up, "branch", "stable");
  const r = await t.grex("update", "--ref", "stable", "tools", "--dry-run");
  expect(r.code).toBe(0);
  expect(refs()).toEqual([]);
});
