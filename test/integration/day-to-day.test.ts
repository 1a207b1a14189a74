// A new user's day with grex, through the CLI on real repositories: one bad
// pack.yaml does not take the workspace down, every pack.yaml mistake arrives
// at once, named by its place in the pack, and the small mistakes get answers.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-day-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

const yaml = (name: string, type: string, body = "") => `schema_version: "1"\nname: ${name}\ntype: ${type}\n${body}`;

async function threePacks(): Promise<string> {
  const dot = t.repo("dotfiles", { ".grex/pack.yaml": yaml("dotfiles", "declarative", "actions:\n  - symlink: { src: files/rc, dst: $HOME/.rc }\n"), "files/rc": "x\n" });
  const tools = t.repo("tools", { ".grex/pack.yaml": yaml("tools", "declarative", "actions:\n  - mkdir: { path: $HOME/.tools }\n") });
  const notes = t.repo("notes", { "notes.md": "# notes\n" });
  for (const [url, id] of [[dot, "dotfiles"], [tools, "tools"], [notes, "notes"]] as const) expect((await t.grex("add", url, id)).code).toBe(0);
  return dot;
}

test("one bad pack.yaml: sync goes on with the others; status and doctor report it as its own row and the rest normally", async () => {
  const dot = await threePacks();
  t.commit(dot, { ".grex/pack.yaml": yaml("dotfiles", "declarative", "actions:\n  - symlnk: { src: files/rc, dst: $HOME/.rc }\n") }, "typo");
  const sync = await t.grex("sync", "--json");
  expect(sync.code).toBe(4);
  const results = Object.fromEntries((sync.json.packs as Array<{ id: string; result: string }>).map((p) => [p.id, p.result]));
  expect(results).toEqual({ dotfiles: "failed", tools: "ok", notes: "ok" });

  const status = await t.grex("status", "--json");
  expect(status.code).toBe(8); // the pack's own error: an unknown action
  const rows = status.json.packs as Array<{ id: string; drift: string; error: { kind: string; file: string; field: string; reason: string } | null }>;
  expect(rows.map((r) => [r.id, r.drift])).toEqual([["dotfiles", "invalid"], ["notes", "clean"], ["tools", "clean"]]);
  const bad = rows[0]?.error;
  expect(bad?.kind).toBe("plugin");
  expect(bad?.file).toBe(join(t.ws, "dotfiles", ".grex", "pack.yaml"));
  expect(bad?.field).toBe("actions[0].symlnk");
  expect(bad?.reason).toContain("did you mean symlink?");
  const text = await t.grex("status", "--plain");
  expect(text.stdout).toMatch(/^dotfiles\s+invalid\s+.*actions\[0\]\.symlnk is not a known action/m);
  expect(text.stdout).toMatch(/^tools\s+clean/m);
  expect(text.stderr).toContain("1 pack could not be read (first: dotfiles:");

  // ids select, and a near miss gets a suggestion.
  const one = await t.grex("status", "tools", "--json");
  expect(one.code).toBe(0);
  expect((one.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["tools"]);
  const typo = await t.grex("status", "tool");
  expect(typo.code).toBe(2);
  expect(typo.stderr).toContain("No pack 'tool' is registered");
  expect(typo.stderr).toContain("Did you mean 'tools'?");

  const long = await t.grex("ls", "--long", "--json");
  expect(long.code).toBe(8);
  const listed = long.json.packs as Array<{ id: string; error: { field: string } | null }>;
  expect(listed.map((p) => [p.id, p.error?.field ?? null])).toEqual([["dotfiles", "actions[0].symlnk"], ["tools", null], ["notes", null]]);
  const longText = await t.grex("ls", "--long", "--plain");
  expect(longText.stdout).toMatch(/^dotfiles .*invalid: .*actions\[0\]\.symlnk is not a known action/m);
  // Plain ls reads no pack.yaml: nothing to report.
  expect((await t.grex("ls", "--json")).code).toBe(0);

  const doctor = await t.grex("doctor", "--json");
  expect(doctor.code).toBe(7);
  const findings = doctor.json.findings as Array<{ check: string; severity: string; pack: string | null; detail: string }>;
  expect(findings.filter((f) => f.severity !== "ok").map((f) => [f.check, f.pack])).toEqual([["pack-schema", "dotfiles"]]);
  expect(findings.find((f) => f.check === "install-state")?.severity).toBe("ok");
});

test("a damaged state file is the pack's own invalid row (exit 3), the others reported", async () => {
  await threePacks();
  writeFileSync(join(t.ws, ".grex", ".state", "packs", "tools.json"), "{ not json");
  // A changed pack makes status read its state file.
  const status = await t.grex("status", "--json");
  const rows = status.json.packs as Array<{ id: string; drift: string; error: { kind: string; file: string | null } | null }>;
  expect(rows.find((r) => r.id === "tools")).toMatchObject({ drift: "invalid", error: { kind: "integrity" } });
  expect(rows.find((r) => r.id === "dotfiles")?.drift).toBe("clean");
  expect(status.code).toBe(3);
  // sync goes on with the others and fails at the end; the damaged file is left as it is.
  const sync = await t.grex("sync", "--force", "--plain");
  expect(sync.code).toBe(3);
  expect(sync.stderr).toContain(join(t.ws, ".grex", ".state", "packs", "tools.json"));
  expect(sync.stderr).toContain("every other pack was synced");
  expect(sync.stdout).toMatch(/^ok +dotfiles /m);
  expect(sync.stdout).toMatch(/^failed +tools /m);
  expect(sync.stdout).toMatch(/^ok +notes /m);
  expect(readFileSync(join(t.ws, ".grex", ".state", "packs", "tools.json"), "utf8")).toBe("{ not json");
});

test("every pack.yaml mistake at once, named by its place in the pack, with did-you-mean for enum values", async () => {
  const url = t.repo("broken", {
    ".grex/pack.yaml": [
      'schema_version: "1"',
      "name: broken",
      "type: declaritive",
      "depends-on: [x]",
      "actions:",
      "  - env: { name: A, value: b, scope: usr }",
      "  - mkdir: { }",
      "  - when: { os: linx, actions: [] }",
      "",
    ].join("\n"),
  });
  const sha = git(url, "rev-parse", "HEAD");
  const r = await t.grex("add", url, "broken");
  expect(r.code).toBe(8); // the first problem is an unknown pack type
  const msg = r.stderr;
  expect(msg).toContain(`${url}@${sha.slice(0, 12)}:.grex/pack.yaml has 5 problems`);
  expect(msg).toContain("type 'declaritive' is not a known pack type (did you mean declarative?)");
  expect(msg).toContain("depends-on is not a pack.yaml field (did you mean depends_on?)");
  expect(msg).toContain("actions[0].env.scope must be one of");
  expect(msg).toContain("(did you mean user?)");
  expect(msg).toContain("actions[1].mkdir.path is missing");
  expect(msg).toContain("(did you mean linux?)");
  expect(msg).not.toContain("grex-add-"); // never a temporary clone's path
  expect(existsSync(join(t.ws, "broken"))).toBe(false);
  // A dry run's temporary clone is named the same way.
  const dry = await t.grex("add", url, "broken", "--dry-run");
  expect(dry.stderr).toContain(`${url}@${sha.slice(0, 12)}:.grex/pack.yaml has 5 problems`);
});

test("two symlinks to $HOME/same and ${HOME}/same: exit 3 in the plan phase, before anything runs", async () => {
  const url = t.repo("twice", {
    ".grex/pack.yaml": yaml("twice", "declarative", "actions:\n  - mkdir: { path: $HOME/.made }\n  - symlink: { src: files/a, dst: $HOME/same }\n  - symlink: { src: files/b, dst: \"${HOME}/same\" }\n"),
    "files/a": "a\n",
    "files/b": "b\n",
  });
  // add refuses it before registering anything; a sync of a pack that changed upstream refuses it too.
  const add = await t.grex("add", url, "twice");
  expect(add.code).toBe(3);
  expect(add.stderr).toContain("is the same target as actions[1].symlink.dst");
  const fine = t.repo("fine", { ".grex/pack.yaml": yaml("fine", "declarative", "actions:\n  - mkdir: { path: $HOME/.made }\n"), "files/a": "a\n", "files/b": "b\n" });
  expect((await t.grex("add", fine, "fine")).code).toBe(0);
  t.commit(fine, { ".grex/pack.yaml": yaml("fine", "declarative", "actions:\n  - mkdir: { path: $HOME/.made2 }\n  - symlink: { src: files/a, dst: $HOME/same }\n  - symlink: { src: files/b, dst: \"${HOME}/same\" }\n") });
  const r = await t.grex("sync");
  expect(r.code).toBe(3);
  expect(existsSync(join(t.home, ".made2"))).toBe(false);
  expect(r.stderr).toContain("actions[2].symlink.dst '${HOME}/same' is the same target as actions[1].symlink.dst ('$HOME/same' names the same path)");
});

test("x-generated: a pack's own build output does not make it dirty", async () => {
  const url = t.repo("builder", {
    ".grex/pack.yaml": yaml("builder", "declarative", 'x-generated: [build/, "*.log"]\nactions:\n  - exec: { cmd: [sh, -c, "mkdir -p build && echo out > build/a.o && echo log > run.log"] }\n'),
  });
  expect((await t.grex("add", url, "builder")).code).toBe(0);
  expect(existsSync(join(t.ws, "builder", "build", "a.o"))).toBe(true);
  const status = await t.grex("status", "--json");
  expect((status.json.packs as Array<{ drift: string }>)[0]?.drift).toBe("clean");
  // git agrees: nothing untracked.
  expect(git(join(t.ws, "builder"), "status", "--porcelain")).toBe("");
  const again = await t.grex("sync", "--json");
  expect((again.json.packs as Array<{ result: string }>)[0]?.result).toBe("ok");
  // A file it did not declare still counts.
  writeFileSync(join(t.ws, "builder", "stray.txt"), "x\n");
  const dirty = await t.grex("status", "--json");
  expect((dirty.json.packs as Array<{ drift: string }>)[0]?.drift).toBe("dirty");
});

test("paper cuts: flag spelling, --parallel abc, run <unknown>, exec and --, ids with did-you-mean", async () => {
  await threePacks();
  const flag = await t.grex("status", "--fail-on-drfit");
  expect(flag.code).toBe(2);
  expect(flag.stderr).toContain("Unknown flag '--fail-on-drfit' for `grex status`. Did you mean '--fail-on-drift'?");
  const par = await t.grex("sync", "--parallel", "abc");
  expect(par.code).toBe(2);
  expect(par.stderr).toContain("Flag --parallel takes a whole number of packs at once (0 = no limit), got 'abc'");
  const run = await t.grex("run", "symlnk");
  expect(run.code).toBe(8);
  expect(run.stderr).toContain("Unknown action 'symlnk'. Did you mean 'symlink'?");
  const exec = await t.grex("exec", "git", "log", "--oneline", "-1");
  expect(exec.code).toBe(2);
  expect(exec.stderr).toContain("put `--` before the command's arguments: `grex exec git -- log --oneline -1`");
  for (const argv of [["sync", "dotfile"], ["update", "dotfile"], ["teardown", "dotfile"], ["rm", "dotfile"]]) {
    const r = await t.grex(...argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Did you mean 'dotfiles'?");
  }
  const dry = await t.grex("run", "symlink", "--dry-run");
  expect(dry.stdout).not.toContain("changed or failed");
});

test("after a teardown: status says torn down, sync says why the setup runs again", async () => {
  await threePacks();
  expect((await t.grex("teardown", "dotfiles")).code).toBe(0);
  const status = await t.grex("status", "dotfiles", "--plain");
  expect(status.stdout).not.toContain("never installed");
  expect(status.stdout).toContain("torn down");
  const sync = await t.grex("sync", "dotfiles", "--plain");
  expect(sync.stdout).not.toMatch(/dotfiles\s+up to date\n/);
  expect(sync.stdout).toContain("setup installed (it was not installed)");
});

test("words: a missing upstream directory, update's summary line, -v on status", async () => {
  const missing = await t.grex("add", join(t.upstream, "nowhere"), "nowhere");
  expect(missing.code).toBe(4);
  expect(missing.stderr).toContain(`${join(t.upstream, "nowhere")} does not exist; check the pack URL`);
  await threePacks();
  const update = await t.grex("update", "--plain");
  expect(update.code).toBe(0);
  expect(update.stdout.trimEnd().split("\n").at(-1)).toBe("3 packs: 3 ok, 0 skipped, 0 dirty, 0 failed");
  const verbose = await t.grex("status", "-v", "tools");
  expect(verbose.stderr).toMatch(/grex: tools: clean; HEAD main, at the recorded commit: true, setup unchanged: true, dirty: false, installed: \d{4}-/);
});
