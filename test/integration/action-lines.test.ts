// Action lines name the path and what happened, with paths as people read
// them (~/… under HOME, relative under the workspace), and exec output shown
// prefixed with the pack id — in the human output of sync, rm and run.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real git and processes on a shared machine: give them room.
setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-lines-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

const PACK = `schema_version: "1"
name: vim
type: declarative
actions:
  - mkdir: { path: $HOME/.config/vim/colors }
  - symlink: { src: files/vimrc, dst: $HOME/.vimrc, backup: true }
  - env: { name: EDITOR, value: vim }
  - exec: { cmd: [sh, -c, "echo hello; echo careful >&2"] }
`;

test("sync, a dry run, run and rm each say what they did to which path", async () => {
  const url = t.repo("vim", { ".grex/pack.yaml": PACK, "files/vimrc": "set nu\n" });
  writeFileSync(join(t.home, ".vimrc"), "old\n");
  expect((await t.grex("add", url, "vim", "--no-install")).code).toBe(0);

  const dry = await t.grex("sync", "--dry-run");
  expect(dry.stdout).toContain("  vim: would create ~/.config/vim/colors (and 2 parents)\n");
  expect(dry.stdout).toContain("  vim: would link ~/.vimrc → vim/files/vimrc; would back up the existing file to ~/.vimrc.grex-bak.<timestamp>\n");

  const sync = await t.grex("sync");
  expect(sync.code).toBe(0);
  expect(sync.stdout).toContain("  vim: created ~/.config/vim/colors (and 2 parents)\n");
  expect(sync.stdout).toMatch(/ {2}vim: linked ~\/\.vimrc → vim\/files\/vimrc; backed up the existing file to ~\/\.vimrc\.grex-bak\.\d{8}T\d+Z\n/);
  expect(sync.stdout).toContain("  vim: set EDITOR in ~/.bashrc\n");
  expect(sync.stdout).toContain("  vim: ran sh -c echo hello; echo careful >&2\n    [vim] hello\n    [vim]! careful\n");
  expect(sync.stdout).not.toMatch(/performed_change|\[\d+\]/);

  const run = await t.grex("run", "exec");
  expect(run.stdout).toContain("    [vim] hello\n");
  expect(run.stdout).toContain("1 action: 1 changed, 0 failed, 0 already in place");

  const rm = await t.grex("rm", "vim");
  expect(rm.code).toBe(0);
  expect(rm.stdout).toMatch(/ {2}vim: unlinked ~\/\.vimrc, put back ~\/\.vimrc\.grex-bak\.\S+\n/);
  expect(rm.stdout).toContain("  vim: removed EDITOR from ~/.bashrc\n");
  expect(rm.stdout).toContain("  vim: removed ~/.config/vim/colors (and 2 parents)\n");
  expect(rm.stdout.trimEnd().split("\n").at(-1)).toBe("removed vim (teardown ok, files deleted)");
});

test("a failing action says which and why, in red on a terminal only", async () => {
  const url = t.repo("broken", {
    ".grex/pack.yaml": 'schema_version: "1"\nname: broken\ntype: declarative\nactions:\n  - symlink: { src: files/x, dst: $HOME/.x }\n',
    "files/x": "x\n",
  });
  mkdirSync(join(t.home, ".x"));
  writeFileSync(join(t.home, ".x", "keep"), "mine\n");
  expect((await t.grex("add", url, "broken", "--no-install")).code).toBe(0);
  const r = await t.grex("sync");
  expect(r.code).toBe(4);
  expect(r.stdout).toMatch(/ {2}broken: symlink failed: .*\.x already exists/);
  expect(r.stdout).not.toMatch(/\x1b\[/);
});
