// Tags: given at add, changed by update (alone: nothing fetched or moved),
// shown by ls and status, stored as an optional field of grex.jsonl's lines
// that a reader which does not know it skips over.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-tags-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

const lines = () =>
  readFileSync(join(t.ws, "grex.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test("add --tag (repeatable, sorted, once each) is stored on the add line and shown by ls and status", async () => {
  const web = t.repo("web", { "x.txt": "x\n" });
  const add = await t.grex("add", web, "apps/web", "--tag", "team-a", "--tag", "frontend", "--tag", "team-a", "--json");
  expect(add.code).toBe(0);
  expect(add.json.tags).toEqual(["frontend", "team-a"]);
  expect(lines().at(-1)).toMatchObject({ op: "add", id: "apps/web", tags: ["frontend", "team-a"] });
  const ls = await t.grex("ls", "--json");
  expect((ls.json.packs as Array<{ tags: string[] }>)[0]?.tags).toEqual(["frontend", "team-a"]);
  expect((await t.grex("ls")).stdout).toBe("apps/web  meta  #frontend #team-a\n");
  const status = await t.grex("status", "--json");
  expect((status.json.packs as Array<{ tags: string[] }>)[0]?.tags).toEqual(["frontend", "team-a"]);
  // A pack added without tags has no tags field at all: the line is what an older grex wrote.
  const api = t.repo("api", { "x.txt": "x\n" });
  expect((await t.grex("add", api, "services/api")).code).toBe(0);
  expect("tags" in (lines().at(-1) as object)).toBe(false);
});

test("update --tag/--untag changes only the tags (no fetch, no move); the last line wins; doctor --compact keeps them", async () => {
  const web = t.repo("web", { "x.txt": "x\n" });
  expect((await t.grex("add", web, "web", "--tag", "legacy")).code).toBe(0);
  const head = git(join(t.ws, "web"), "rev-parse", "HEAD");
  t.commit(web, { "y.txt": "y\n" }); // upstream moves: a real update would fetch and move
  const dry = await t.grex("update", "web", "--tag", "frontend", "--untag", "legacy", "--dry-run");
  expect(dry.stdout).toBe("would tag web: frontend\n");
  expect((await t.grex("ls", "--json")).json.packs).toMatchObject([{ tags: ["legacy"] }]);
  const r = await t.grex("update", "web", "--tag", "frontend", "--untag", "legacy");
  expect(r.code).toBe(0);
  expect(r.stdout).toBe("tagged web: frontend\n");
  expect(git(join(t.ws, "web"), "rev-parse", "HEAD")).toBe(head);
  expect(lines().at(-1)).toMatchObject({ op: "update", id: "web", tags: ["frontend"] });
  expect((await t.grex("ls", "--json")).json.packs).toMatchObject([{ tags: ["frontend"] }]);
  // Unchanged tags write nothing.
  const before = lines().length;
  expect((await t.grex("update", "web", "--tag", "frontend")).code).toBe(0);
  expect(lines().length).toBe(before);
  expect((await t.grex("update", "web", "--untag", "frontend")).stdout).toBe("tagged web: (no tags)\n");
  expect(lines().at(-1)).toMatchObject({ op: "update", tags: [] });
  expect((await t.grex("update", "web", "--tag", "x")).code).toBe(0);
  expect((await t.grex("doctor", "--compact")).code).toBe(0);
  expect(lines()).toMatchObject([{ op: "add", id: "web", tags: ["x"] }]);
});

test("tag mistakes are usage errors naming the field: a bad tag, no ids, the same tag both ways, an unknown id", async () => {
  const web = t.repo("web", { "x.txt": "x\n" });
  const bad = await t.grex("add", web, "web", "--tag", "no spaces");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("tag");
  expect((await t.grex("add", web, "web")).code).toBe(0);
  const noIds = await t.grex("update", "--tag", "x");
  expect(noIds.code).toBe(2);
  expect(noIds.stderr).toBe("grex: --tag and --untag change the packs you name: grex update <id...> --tag <tag>.\n");
  expect((await t.grex("update", "web", "--tag", "x", "--untag", "x")).code).toBe(2);
  const unknown = await t.grex("update", "wbe", "--tag", "x");
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain("Did you mean 'web'?");
});

test("a tags field a hand or a newer grex wrote with a bad value is exit 3 naming the line; an unknown field is skipped", async () => {
  const web = t.repo("web", { "x.txt": "x\n" });
  expect((await t.grex("add", web, "web")).code).toBe(0);
  appendFileSync(join(t.ws, "grex.jsonl"), `${JSON.stringify({ op: "update", ts: "2030-01-01T00:00:00Z", id: "web", schema_version: "1", colour: "blue" })}\n`);
  expect((await t.grex("ls")).code).toBe(0);
  appendFileSync(join(t.ws, "grex.jsonl"), `${JSON.stringify({ op: "update", ts: "2030-01-01T00:00:01Z", id: "web", schema_version: "1", tags: "frontend" })}\n`);
  const r = await t.grex("ls");
  expect(r.code).toBe(3);
  expect(r.stderr).toContain("grex.jsonl line 3 is not a valid 'update' event ('tags' must be a list");
});
