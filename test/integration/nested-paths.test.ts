// Nested layouts (`libs/core`, `services/api`) and the one path rule: a pack
// may live at any workspace-relative path, but never inside another pack's
// work tree nor around one — refused the same way from the CLI (exit 2),
// from a teammate's grex.jsonl (exit 3, naming the line) and from import.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-nested-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

test("a top-level pack at libs/core: its id is the path, ls/status show it, .gitignore ignores exactly it, rm removes the emptied libs/", async () => {
  const core = t.repo("core", { "README.md": "core\n" });
  const add = await t.grex("add", core, "libs/core");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  expect(existsSync(join(t.ws, "libs", "core", ".git"))).toBe(true);
  expect(readFileSync(join(t.ws, ".gitignore"), "utf8")).toContain("\n/libs/core/\n");
  expect(readFileSync(join(t.ws, ".gitignore"), "utf8")).not.toMatch(/^\/libs\/$/m);
  const ls = await t.grex("ls", "--json");
  expect((ls.json.packs as Array<{ id: string; path: string }>).map((p) => [p.id, p.path])).toEqual([["libs/core", "libs/core"]]);
  const status = await t.grex("status", "--json", "--filter", "libs/*");
  expect((status.json.packs as Array<{ id: string; drift: string }>).map((p) => [p.id, p.drift])).toEqual([["libs/core", "clean"]]);
  const doctor = await t.grex("doctor", "--json");
  expect(JSON.stringify(doctor.json)).not.toContain("has no registered pack");

  const rm = await t.grex("rm", "libs/core");
  expect(rm.code).toBe(0);
  expect(existsSync(join(t.ws, "libs"))).toBe(false); // the intermediate directory grex made is gone with it
});

test("rm keeps an intermediate directory that holds another pack or a file grex did not create", async () => {
  const a = t.repo("api", { "a.txt": "a\n" });
  const w = t.repo("web", { "w.txt": "w\n" });
  expect((await t.grex("add", a, "services/api")).code).toBe(0);
  expect((await t.grex("add", w, "services/web")).code).toBe(0);
  writeFileSync(join(t.ws, "services", "NOTES.md"), "mine\n");
  expect((await t.grex("rm", "services/api")).code).toBe(0);
  expect(existsSync(join(t.ws, "services", "web", ".git"))).toBe(true);
  expect((await t.grex("rm", "services/web")).code).toBe(0);
  expect(readFileSync(join(t.ws, "services", "NOTES.md"), "utf8")).toBe("mine\n"); // the user's file, and so its directory, stay
});

test("the CLI refuses a path inside a pack or around one, and a parent that is a symlink (exit 2, nothing cloned)", async () => {
  const a = t.repo("a", { "x.txt": "x\n" });
  const evil = t.repo("evil", { "e.txt": "e\n" });
  expect((await t.grex("add", a, "a")).code).toBe(0);
  const inside = await t.grex("add", evil, "a/evil");
  expect(inside.code).toBe(2);
  expect(inside.stderr).toBe(
    "grex: Pack path 'a/evil' cannot be used: it lies inside pack 'a' (a directory inside a pack belongs to that pack's repository; only its own children, from its pack.yaml, live there); choose a path outside it.\n",
  );
  expect(existsSync(join(t.ws, "a", "evil"))).toBe(false);
  const caseFold = await t.grex("add", evil, "A/evil");
  expect(caseFold.code).toBe(2);

  expect((await t.grex("add", evil, "libs/deep/evil")).code).toBe(0);
  const around = await t.grex("add", a, "libs");
  expect(around.code).toBe(2);
  expect(around.stderr).toContain("pack 'libs/deep/evil' lies inside it");

  mkdirSync(join(t.home, "elsewhere"));
  symlinkSync(join(t.home, "elsewhere"), join(t.ws, "linked"));
  const linked = await t.grex("add", evil, "linked/evil");
  expect(linked.code).toBe(2);
  expect(linked.stderr).toContain("'linked' is a symbolic link");
  expect(existsSync(join(t.home, "elsewhere", "evil"))).toBe(false);
});

test("a teammate's grex.jsonl registering a/evil inside pack a is exit 3 naming the line; nothing is cloned into a", async () => {
  const a = t.repo("a", { "x.txt": "x\n" });
  const evil = t.repo("evil", { "e.txt": "e\n" });
  expect((await t.grex("add", a, "a")).code).toBe(0);
  const lines = readFileSync(join(t.ws, "grex.jsonl"), "utf8").split("\n").filter(Boolean).length;
  appendFileSync(
    join(t.ws, "grex.jsonl"),
    `${JSON.stringify({ op: "add", ts: "2030-01-01T00:00:00Z", id: "a/evil", schema_version: "1", url: evil, path: "a/evil", type: "meta", ref: null })}\n`,
  );
  for (const verb of [["sync"], ["ls"], ["status"]]) {
    const r = await t.grex(...verb);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(
      `grex: grex.jsonl line ${lines + 1} registers pack 'a/evil', but it lies inside pack 'a' (a directory inside a pack belongs to that pack's repository; only its own children, from its pack.yaml, live there); delete that line, then register that repository elsewhere with grex add.\n`,
    );
  }
  expect(existsSync(join(t.ws, "a", "evil"))).toBe(false);
});

test("import takes nested paths and refuses one inside a pack, by the same rule", async () => {
  const a = t.repo("a", { "x.txt": "x\n" });
  const api = t.repo("api", { "x.txt": "x\n" });
  expect((await t.grex("add", a, "a")).code).toBe(0);
  writeFileSync(join(t.ws, "R.json"), JSON.stringify([{ url: api, path: "services/api" }, { url: api, path: "a/api" }]));
  const r = await t.grex("import", "--from-repos-json", "R.json", "--json");
  expect(r.code).toBe(2);
  expect(r.json.imported).toEqual([{ path: "services/api", url: api, type: "meta" }]);
  expect((r.json.failed as Array<{ path: string; error: string }>).map((f) => f.path)).toEqual(["a/api"]);
  expect((r.json.failed as Array<{ path: string; error: string }>)[0]?.error).toContain("it lies inside pack 'a'");
  expect((await t.grex("sync")).code).toBe(0);
  expect(existsSync(join(t.ws, "services", "api", ".git"))).toBe(true);
});
