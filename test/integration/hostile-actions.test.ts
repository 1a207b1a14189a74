// What a pack's actions may do, tried as a hostile pack author would: a path
// through the pack's own symlink into the workspace (item: `lnk -> ..`), and an
// action the checked-out pack.yaml no longer declares (item: a dropped `mkdir`
// whose parent became a link into HOME) never applied again.
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

const yaml = (actions: string[]) => `schema_version: "1"\nname: p\ntype: declarative\nactions:\n${actions.map((a) => `  ${a}\n`).join("")}`;

/** An upstream pack with a tracked symlink `lnk -> ..` (out of the pack, into the workspace). */
function linkedPack(actions: string[]): string {
  const up = join(t.upstream, `p${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(join(up, ".grex"), { recursive: true });
  mkdirSync(join(up, "files"));
  writeFileSync(join(up, "files", "a"), "a\n");
  writeFileSync(join(up, ".grex", "pack.yaml"), yaml(actions));
  symlinkSync("..", join(up, "lnk"));
  git(up, "init", "-q", "-b", "main");
  git(up, "add", "-A");
  git(up, "commit", "-q", "-m", "p");
  return up;
}

for (const [name, insideHome, extra] of [
  ["the workspace inside HOME", true, []],
  ["the workspace outside HOME, with --allow-outside-home", false, ["--allow-outside-home"]],
] as const) {
  test(`a path through the pack's own link to the workspace is refused (${name}); nothing is created in the workspace`, async () => {
    t = new TestWorkspace("grex-hostile-actions-");
    const home = insideHome ? t.root : t.home;
    expect((await t.grexAt(t.ws, ["init"], { ...t.env, HOME: home })).code).toBe(0);
    for (const [action, field, raw] of [
      ["- mkdir: { path: lnk/x }", "mkdir.path", "lnk/x"],
      ["- symlink: { src: files/a, dst: lnk/x }", "symlink.dst", "lnk/x"],
    ] as const) {
      const up = linkedPack([action]);
      for (const dry of [["--dry-run"], []]) {
        const r = await t.grexAt(t.ws, ["add", up, "p", ...extra, ...dry], { ...t.env, HOME: home });
        expect(r.stderr).toContain(`refusing actions[0].${field} of pack 'p' ('${raw}', real path`);
        // A dry run plans in a temporary clone outside the workspace: there the link leads out of the pack and HOME.
        expect(r.stderr).toContain(dry.length > 0 ? "a symlink in the pack leads it out of the pack and HOME" : "it is inside the workspace but in no pack");
        expect(r.code).toBe(4);
        expect(existsSync(join(t.ws, "x"))).toBe(false);
        expect(existsSync(join(t.ws, "p"))).toBe(false);
      }
    }
    // The pack's own directories and HOME stay open to it.
    const ok = linkedPack(["- mkdir: { path: build }", "- mkdir: { path: $HOME/.p }"]);
    const r = await t.grexAt(t.ws, ["add", ok, "p", ...extra], { ...t.env, HOME: home });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(existsSync(join(t.ws, "p", "build"))).toBe(true);
    expect(existsSync(join(home, ".p"))).toBe(true);
  });
}

test("a mkdir dropped upstream in the commit that makes its parent a link into HOME is never applied again", async () => {
  t = new TestWorkspace("grex-hostile-actions-");
  const target = join(t.home, "target");
  mkdirSync(target);
  const up = join(t.upstream, "p");
  mkdirSync(join(up, ".grex"), { recursive: true });
  mkdirSync(join(up, "d"));
  writeFileSync(join(up, "d", "keep"), "k\n");
  writeFileSync(join(up, ".grex", "pack.yaml"), yaml(["- mkdir: { path: d/x }"]));
  git(up, "init", "-q", "-b", "main");
  git(up, "add", "-A");
  git(up, "commit", "-q", "-m", "v1");
  expect((await t.grex("init")).code).toBe(0);
  const first = await t.grex("add", up, "p", "--allow-outside-home");
  expect(first.stderr).toBe("");
  expect(first.code).toBe(0);
  expect(existsSync(join(t.ws, "p", "d", "x"))).toBe(true);
  // Upstream: the mkdir goes, and `d` becomes a tracked link to a directory in HOME.
  git(up, "rm", "-rq", "d");
  symlinkSync(target, join(up, "d"));
  writeFileSync(join(up, ".grex", "pack.yaml"), `schema_version: "1"\nname: p\ntype: declarative\nactions: []\n`);
  git(up, "add", "-A");
  git(up, "commit", "-q", "-m", "v2");
  for (let i = 0; i < 3; i++) {
    const r = await t.grex("sync", "--allow-outside-home", "--json");
    expect(r.code).toBe(0);
    expect(JSON.stringify(r.json)).not.toContain("d/x");
    expect(existsSync(join(target, "x"))).toBe(false);
  }
  const s = await t.grex("status", "--json");
  expect(JSON.stringify(s.json)).not.toContain("d/x");
  expect(s.code).toBe(0);
});

test("drift repair applies the item as the checked-out pack.yaml declares it, never a recorded one it no longer declares", async () => {
  t = new TestWorkspace("grex-hostile-actions-");
  // Same actions hash before and after (the record is what differs): a record left by an older grex or a hand edit.
  const up = t.repo("q", { ".grex/pack.yaml": yaml(["- mkdir: { path: $HOME/.q-one }"]) });
  expect((await t.grex("init")).code).toBe(0);
  expect((await t.grex("add", up, "q")).code).toBe(0);
  const stateFile = join(t.ws, ".grex", ".state", "packs", "q.json");
  const state = JSON.parse(require("node:fs").readFileSync(stateFile, "utf8"));
  const rec = state["expect:actions[0]"];
  expect(rec).toBeDefined();
  // The record names another item at the same place (what an old install recorded).
  rec.item = { mkdir: { path: "$HOME/.q-old" } };
  rec.fact = { ...rec.fact, path: join(t.home, ".q-old") };
  writeFileSync(stateFile, JSON.stringify(state));
  const r = await t.grex("sync", "--json");
  expect(r.code).toBe(0);
  expect(existsSync(join(t.home, ".q-old"))).toBe(false);
  // Forgotten: the next sync and status no longer see drift for it.
  const again = JSON.parse(require("node:fs").readFileSync(stateFile, "utf8"));
  expect(JSON.stringify(again)).not.toContain(".q-old");
  expect((await t.grex("status", "--fail-on-drift")).code).toBe(0);
});
