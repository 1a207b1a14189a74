// What a pack may touch, tried as a hostile pack author would: every row of
// the confinement table is a real pack in a sandbox (HOME and the workspace in
// a temp dir, a victim directory outside both) run through the real CLI. Each
// is refused with exit 4 naming the action, the path and the rule, and
// everything outside the rule survives byte for byte.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, snapshot, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

interface StepJson {
  pack: string;
  action: string;
  result: string;
  details: Record<string, unknown>;
}

/** A workspace that is a git repo, with a registered pack `q`, and outside files that must survive. */
async function sandbox(): Promise<TestWorkspace> {
  t = new TestWorkspace("grex-confine-");
  expect((await t.grex("init")).code).toBe(0);
  git(t.ws, "init", "-q", "-b", "main");
  expect((await t.grex("add", t.repo("q", { "README.md": "q\n" }), "q")).code).toBe(0);
  mkdirSync(join(t.root, "victim", "deep"), { recursive: true });
  writeFileSync(join(t.root, "victim", "deep", "keep.txt"), "victim\n");
  mkdirSync(join(t.root, "outside"));
  writeFileSync(join(t.root, "outside", "important.txt"), "important\n");
  mkdirSync(join(t.home, ".ssh"));
  writeFileSync(join(t.home, ".ssh", "id_ed25519"), "secret\n");
  return t;
}

const evilYaml = (actions: string) =>
  `schema_version: "1"\nname: evil\ntype: declarative\nactions:\n${actions
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n")}\n`;

/** Everything the rule protects, as bytes: the whole sandbox except the evil pack's work tree and grex's bookkeeping. */
function protectedState(): Record<string, string> {
  const all = snapshot(t.root);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(all)) {
    if (k.startsWith("upstream/") || k.startsWith("ws/.grex/") || /^ws\/(grex\.jsonl|grex\.lock\.jsonl|\.gitignore)$/.test(k)) continue;
    if (k.startsWith("ws/evil/") && !k.startsWith("ws/evil/.git/")) continue;
    out[k] = val;
  }
  return out;
}

/** Register the evil pack without installing it, then sync it: the install must be refused. */
async function refused(actions: string, extra: string[] = []): Promise<StepJson> {
  const url = t.repo("evil", { ".grex/pack.yaml": evilYaml(actions), "files/a": "A\n", "files/hook": "#!/bin/sh\necho pwned\n" });
  expect((await t.grex("add", url, "--no-install")).code).toBe(0);
  const before = protectedState();
  const r = await t.grex("sync", "evil", "--json", ...extra);
  expect(r.code).toBe(4);
  expect(protectedState()).toEqual(before);
  const failed = (r.json.steps as StepJson[]).find((s) => s.pack === "evil" && s.result === "failed");
  if (!failed) throw new Error(`no failed step in ${r.stdout}`);
  expect((r.json.steps as StepJson[]).some((s) => s.result === "would_perform_change" || s.result === "performed_change")).toBe(false);
  return failed;
}

const ruleOf = (s: StepJson) => s.details.refused;

describe("the confinement table: each row is refused (exit 4), nothing outside the rule touched", () => {
  const rows: Array<[string, string, string]> = [
    ["rmdir ../../victim force (outside the workspace and HOME)", "- rmdir: { path: ../../victim, force: true }", "outside-home"],
    ["rmdir $HOME/.. force (the directory holding HOME)", "- rmdir: { path: $HOME/.., force: true }", "holds-protected"],
    ["rmdir ../.git force (the meta-repo's .git)", "- rmdir: { path: ../.git, force: true }", "git-dir"],
    ["rmdir ../q force (another pack's clone)", "- rmdir: { path: ../q, force: true }", "pack-dir"],
    ["symlink dst $HOME with backup (HOME moved aside)", "- symlink: { src: files/a, dst: $HOME, backup: true }", "home"],
    ["symlink dst ../../outside/important.txt with backup", "- symlink: { src: files/a, dst: ../../outside/important.txt, backup: true }", "outside-home"],
    ["symlink dst . with backup (the pack's own directory)", "- symlink: { src: files/a, dst: ., backup: true }", "pack-dir"],
    ["symlink dst .. with backup (the workspace root)", "- symlink: { src: files/a, dst: .., backup: true }", "workspace-root"],
    ["symlink into ../.git/hooks (a commit hook)", "- symlink: { src: files/hook, dst: ../.git/hooks/pre-commit }", "git-dir"],
    ["symlink dst .git/config with backup (the pack's own git config)", "- symlink: { src: files/a, dst: .git/config, backup: true }", "git-dir"],
    ["mkdir ../../x", "- mkdir: { path: ../../x }", "outside-home"],
    ["symlink dst ../../x", "- symlink: { src: files/a, dst: ../../x }", "outside-home"],
    ["mkdir $HOME/../x", "- mkdir: { path: $HOME/../x }", "outside-home"],
    ["mkdir .grex/x (grex's contract directory)", "- mkdir: { path: .grex/x }", "grex-files"],
  ];
  for (const [name, action, rule] of rows) {
    test(name, async () => {
      await sandbox();
      const step = await refused(action);
      expect(ruleOf(step)).toBe(rule);
      expect(String(step.details.reason)).toMatch(/^refusing actions\[0\]\.(rmdir\.path|symlink\.dst|mkdir\.path) of pack 'evil' \(/);
      expect(existsSync(join(t.root, "x"))).toBe(false);
    });
  }

  test("absolute paths: rmdir with backup and mkdir outside HOME", async () => {
    await sandbox();
    const victim = join(t.root, "victim");
    expect(ruleOf(await refused(`- rmdir: { path: ${victim}, backup: true }`))).toBe("outside-home");
    expect(existsSync(victim)).toBe(true);
  });

  test("an absolute mkdir outside HOME", async () => {
    await sandbox();
    expect(ruleOf(await refused(`- mkdir: { path: ${join(t.root, "abs")} }`))).toBe("outside-home");
    expect(existsSync(join(t.root, "abs"))).toBe(false);
  });

  test("a symlinked ancestor under HOME pointing outside is judged by where it really leads", async () => {
    await sandbox();
    symlinkSync(join(t.root, "outside"), join(t.home, "link"));
    const step = await refused("- mkdir: { path: $HOME/link/new }");
    expect(ruleOf(step)).toBe("outside-home");
    expect(step.details.path).toBe(join(t.root, "outside", "new"));
    expect(existsSync(join(t.root, "outside", "new"))).toBe(false);
  });

  test("rmdir force of a HOME directory holding a git repository is refused; so is a backup of it", async () => {
    await sandbox();
    mkdirSync(join(t.home, "code", "proj"), { recursive: true });
    git(join(t.home, "code", "proj"), "init", "-q");
    expect(ruleOf(await refused("- rmdir: { path: $HOME/code, force: true }"))).toBe("holds-git");
    expect(existsSync(join(t.home, "code", "proj", ".git"))).toBe(true);
  });

  test("--dry-run with dst /etc and backup: the plan reports the refusal, not would_perform_change", async () => {
    await sandbox();
    const step = await refused("- symlink: { src: files/a, dst: /etc, backup: true }", ["--dry-run"]);
    expect(ruleOf(step)).toBe("outside-home");
    expect(step.details.path).toBe("/etc");
    expect(lstatSync("/etc").isDirectory()).toBe(true);
  });

  test("grex add of a hostile pack exits 4 and the victim survives", async () => {
    await sandbox();
    const before = snapshot(join(t.root, "victim"));
    const url = t.repo("evil", { ".grex/pack.yaml": evilYaml("- rmdir: { path: ../../victim, force: true }"), "files/a": "A\n" });
    const r = await t.grex("add", url);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("refusing actions[0].rmdir.path of pack 'evil'");
    expect(r.stderr).toContain("outside HOME");
    expect(snapshot(join(t.root, "victim"))).toEqual(before);
  });
});

describe("--allow-outside-home", () => {
  test("the user's opt-in lets a link outside HOME through for that run; rm needs it again to undo it", async () => {
    await sandbox();
    const dst = join(t.root, "outside", "tool");
    const url = t.repo("evil", { ".grex/pack.yaml": evilYaml(`- symlink: { src: files/a, dst: ${dst} }`), "files/a": "A\n" });
    expect((await t.grex("add", url, "--no-install")).code).toBe(0);
    expect((await t.grex("sync", "evil")).code).toBe(4);
    expect(existsSync(dst)).toBe(false);
    expect((await t.grex("sync", "evil", "--allow-outside-home")).code).toBe(0);
    expect(readlinkSync(dst)).toBe(join(t.ws, "evil", "files", "a"));
    // Tearing it down touches the same path: the same rule, the same opt-in.
    expect((await t.grex("rm", "evil", "--keep-files")).code).toBe(4);
    expect((await t.grex("rm", "evil", "--keep-files", "--allow-outside-home")).code).toBe(0);
    expect(existsSync(dst)).toBe(false);
  });

  test("the opt-in never opens the protected places", async () => {
    await sandbox();
    const step = await refused("- rmdir: { path: ../q, force: true }", ["--allow-outside-home"]);
    expect(ruleOf(step)).toBe("pack-dir");
    expect(ruleOf(await refusedAgain("- symlink: { src: files/a, dst: $HOME/.., backup: true }"))).toBe("holds-protected");
  });

  test("a pack cannot opt itself in: pack.yaml has no such field", async () => {
    await sandbox();
    const yaml = `schema_version: "1"\nname: evil\ntype: declarative\nallow_outside_home: true\nactions: []\n`;
    const url = t.repo("evil", { ".grex/pack.yaml": yaml });
    const r = await t.grex("add", url, "--no-install");
    expect(r.code).toBe(3);
  });
});

/** Like refused(), for a second evil pack in the same sandbox. */
async function refusedAgain(actions: string): Promise<StepJson> {
  const url = t.repo("evil2", { ".grex/pack.yaml": evilYaml(actions).replace("name: evil", "name: evil2"), "files/a": "A\n" });
  expect((await t.grex("add", url, "--no-install")).code).toBe(0);
  const r = await t.grex("sync", "evil2", "--json", "--allow-outside-home");
  expect(r.code).toBe(4);
  const failed = (r.json.steps as StepJson[]).find((s) => s.pack === "evil2" && s.result === "failed");
  if (!failed) throw new Error(`no failed step in ${r.stdout}`);
  return failed;
}

describe("the legitimate dotfiles cases keep working", () => {
  test("links and dirs under HOME, a backup of an existing file, teardown restoring it byte for byte", async () => {
    await sandbox();
    writeFileSync(join(t.home, ".vimrc"), "set nocompatible\n");
    mkdirSync(join(t.home, ".config"));
    const before = snapshot(t.home);
    const actions = [
      "- mkdir: { path: $HOME/.config/tool/deep, mode: 700 }",
      "- symlink: { src: files/a, dst: $HOME/.vimrc, backup: true }",
      "- symlink: { src: files/a, dst: ~/.config/tool/a.conf }",
      "- exec: { cmd: [pwd], cwd: $HOME }",
    ].join("\n");
    const url = t.repo("dots", { ".grex/pack.yaml": evilYaml(actions).replace("name: evil", "name: dots"), "files/a": "A\n" });
    const add = await t.grex("add", url, "--json");
    expect(add.code).toBe(0);
    expect(readlinkSync(join(t.home, ".vimrc"))).toBe(join(t.ws, "dots", "files", "a"));
    expect(readFileSync(join(t.home, ".config", "tool", "a.conf"), "utf8")).toBe("A\n");
    const rm = await t.grex("rm", "dots", "--json");
    expect(rm.code).toBe(0);
    expect(snapshot(t.home)).toEqual(before);
  });
});
