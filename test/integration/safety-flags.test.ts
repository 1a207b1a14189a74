// Reported: a dashed switch swallowed the next word, turning `sync --dry-run tools`
// into a real sync of every pack. End to end through runCli on a real workspace.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace, userSnapshot } from "../helpers/workspace.ts";

let t: TestWorkspace;
let toolsUp: string;
let otherUp: string;
beforeEach(async () => {
  t = new TestWorkspace("grex-flags-");
  expect((await t.grex("init")).code).toBe(0);
  toolsUp = t.repo("tools", { "README.md": "tools\n" });
  otherUp = t.repo("other", { "README.md": "other\n" });
  expect((await t.grex("add", toolsUp)).code).toBe(0);
  expect((await t.grex("add", otherUp)).code).toBe(0);
  t.commit(toolsUp, { "new.txt": "x" });
  t.commit(otherUp, { "new.txt": "x" });
});
afterEach(() => t.cleanup());

test("sync --dry-run tools: a dry run of tools only; nothing moves", async () => {
  const before = userSnapshot(t.ws);
  const r = await t.grex("sync", "--dry-run", "tools", "--json");
  expect(r.code).toBe(0);
  expect(r.json.dry_run).toBe(true);
  expect((r.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["tools"]);
  expect(userSnapshot(t.ws)).toEqual(before);
});

test("update --dry-run tools and sync --fail-fast tools keep the positional", async () => {
  const before = userSnapshot(t.ws);
  const u = await t.grex("update", "--dry-run", "tools", "--json");
  expect(u.code).toBe(0);
  expect((u.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["tools"]);
  expect(userSnapshot(t.ws)).toEqual(before);

  const s = await t.grex("sync", "--fail-fast", "tools", "--json");
  expect(s.code).toBe(0);
  expect((s.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["tools"]);
  // Only tools moved.
  expect(git(join(t.ws, "tools"), "rev-parse", "HEAD")).toBe(git(toolsUp, "rev-parse", "HEAD"));
  expect(git(join(t.ws, "other"), "rev-parse", "HEAD")).not.toBe(git(otherUp, "rev-parse", "HEAD"));
});

test("rm --keep-files tools keeps the files; add --dry-run <url> x adds nothing", async () => {
  const third = t.repo("third", { "README.md": "3\n" });
  const before = userSnapshot(t.ws);
  const a = await t.grex("add", "--dry-run", third, "x", "--json");
  expect(a.code).toBe(0);
  expect(a.json).toMatchObject({ id: "x", dry_run: true });
  expect(userSnapshot(t.ws)).toEqual(before);

  const r = await t.grex("rm", "--keep-files", "tools", "--json");
  expect(r.code).toBe(0);
  expect(r.json).toMatchObject({ id: "tools", files_deleted: false });
  expect(existsSync(join(t.ws, "tools", "README.md"))).toBe(true);
});

test("--dry-run=false is a real run; --dry-run=maybe is a usage error", async () => {
  const bad = await t.grex("sync", "--dry-run=maybe", "tools");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--dry-run is true or false");
  const r = await t.grex("sync", "--dry-run=false", "tools", "--json");
  expect(r.code).toBe(0);
  expect(r.json.dry_run).toBe(false);
  expect(git(join(t.ws, "tools"), "rev-parse", "HEAD")).toBe(git(toolsUp, "rev-parse", "HEAD"));
});
