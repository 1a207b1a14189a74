// Pack lifecycle over the contract fixtures (test/fixtures): install, converge,
// idempotency, teardown to a byte-identical HOME, rollback, dry-run, hashes.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { teardownPack } from "../../src/core/packtypes/index.ts";
import { workspaceAt } from "../../src/core/base/workspace.ts";
import { snapshot, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

interface StepJson {
  pack: string;
  action: string;
  idx: number;
  result: string;
}

const steps = (json: Record<string, unknown>) => json.steps as StepJson[];

async function fresh(): Promise<TestWorkspace> {
  t = new TestWorkspace();
  expect((await t.grex("init")).code).toBe(0);
  return t;
}

describe("declarative-basic (all seven actions)", () => {
  test("install, idempotent re-install, teardown restores HOME byte for byte, teardown again is a no-op", async () => {
    await fresh();
    const before = snapshot(t.home);
    const url = t.repo("declarative-basic");
    const add = await t.grex("add", url, "--json");
    expect(add.code).toBe(0);
    expect(add.json.installed).toBe(true);

    const link = join(t.home, ".config/basic/app.conf");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(join(t.ws, "declarative-basic/files/app.conf"));
    expect(existsSync(join(t.home, ".config/basic/unix"))).toBe(true);
    expect(readFileSync(join(t.home, ".bashrc"), "utf8")).toContain("export GREX_BASIC_EDITOR='vim'");

    // --force re-runs install: every step is already satisfied (exec has no idempotency guarantee).
    const again = await t.grex("sync", "--force", "--json");
    expect(again.code).toBe(0);
    const mine = steps(again.json).filter((s) => s.pack === "declarative-basic");
    expect(mine.length).toBeGreaterThanOrEqual(7);
    for (const s of mine) {
      if (s.action === "exec") expect(s.result).toBe("performed_change");
      else expect(["already_satisfied", "noop"]).toContain(s.result);
    }

    const rm = await t.grex("rm", "declarative-basic", "--keep-files", "--json");
    expect(rm.code).toBe(0);
    expect(rm.json.teardown).toBe("ok");
    expect(snapshot(t.home)).toEqual(before);

    // A second teardown of the same pack changes nothing.
    const second = await teardownPack({
      ws: workspaceAt(t.ws),
      id: "declarative-basic",
      dir: join(t.ws, "declarative-basic"),
      type: "declarative",
      env: t.env,
      signal: new AbortController().signal,
      dryRun: false,
    });
    expect(second.failed).toBeNull();
    for (const s of second.steps) expect(["already_satisfied", "noop", "skipped"]).toContain(s.result);
    expect(snapshot(t.home)).toEqual(before);
  });

  test("--dry-run changes nothing on disk and lists every would-be change", async () => {
    await fresh();
    const url = t.repo("declarative-basic");
    expect((await t.grex("add", url, "--no-install")).code).toBe(0);
    const before = snapshot(t.root);
    const dry = await t.grex("sync", "--dry-run", "--json");
    expect(dry.code).toBe(0);
    expect(dry.json.dry_run).toBe(true);
    expect(snapshot(t.root)).toEqual(before);
    const would = steps(dry.json).filter((s) => s.result === "would_perform_change").map((s) => s.action);
    expect(would).toEqual(expect.arrayContaining(["mkdir", "symlink", "env", "when", "exec"]));
    // Nor does rm --dry-run (not even a lock file: a dry run takes no pack lock).
    expect((await t.grex("rm", "--dry-run", "declarative-basic")).code).toBe(0);
    expect(snapshot(t.root)).toEqual(before);
  });

  test("env user scope also manages an existing .zshrc and restores it exactly", async () => {
    await fresh();
    writeFileSync(join(t.home, ".zshrc"), "# my zshrc\nalias ll='ls -l'\n");
    const before = snapshot(t.home);
    expect((await t.grex("add", t.repo("declarative-basic"))).code).toBe(0);
    expect(readFileSync(join(t.home, ".zshrc"), "utf8")).toContain("# >>> grex:env:GREX_BASIC_EDITOR >>>");
    expect((await t.grex("rm", "declarative-basic")).code).toBe(0);
    expect(snapshot(t.home)).toEqual(before);
  });
});

describe("scripted-basic", () => {
  test("setup, sync and teardown hooks run with the GREX_PACK_* environment", async () => {
    await fresh();
    const before = snapshot(t.home);
    expect((await t.grex("add", t.repo("scripted-basic"))).code).toBe(0);
    expect(readFileSync(join(t.home, ".scripted-basic"), "utf8")).toBe("installed by scripted-basic on linux\n");
    const sync = await t.grex("sync", "--json");
    expect(sync.code).toBe(0);
    expect(steps(sync.json).map((s) => s.action)).toEqual(["hook:sync"]);
    const dry = await t.grex("sync", "--dry-run", "--force", "--json");
    expect(steps(dry.json).every((s) => s.result === "would_perform_change")).toBe(true);
    expect((await t.grex("rm", "scripted-basic")).code).toBe(0);
    expect(snapshot(t.home)).toEqual(before);
  });
});

describe("meta-basic (two declarative children)", () => {
  test("children are cloned, installed, listed and torn down", async () => {
    await fresh();
    const before = snapshot(t.home);
    t.repo("child-a");
    t.repo("child-b");
    const url = t.repo("meta-basic");
    const add = await t.grex("add", url, "--json");
    expect(add.code).toBe(0);
    expect(existsSync(join(t.home, ".child-a/a.txt"))).toBe(true);
    expect(existsSync(join(t.home, ".child-b/b.txt"))).toBe(true);
    const ls = await t.grex("ls", "--json");
    const packs = ls.json.packs as Array<{ id: string; depth: number; parent: string | null; type: string }>;
    expect(packs.map((p) => [p.id, p.depth, p.parent, p.type])).toEqual([
      ["meta-basic", 0, null, "meta"],
      ["meta-basic/child-a", 1, "meta-basic", "declarative"],
      ["meta-basic/second", 1, "meta-basic", "declarative"],
    ]);
    const exclude = readFileSync(join(t.ws, "meta-basic/.git/info/exclude"), "utf8");
    expect(exclude).toContain("/child-a/");
    expect(exclude).toContain("/second/");
    const status = await t.grex("status", "--json");
    expect((status.json.packs as Array<{ drift: string }>).map((p) => p.drift)).toEqual(["clean", "clean", "clean"]);
    expect((await t.grex("rm", "meta-basic")).code).toBe(0);
    expect(snapshot(t.home)).toEqual(before);
  });
});

describe("failure and rollback", () => {
  test("a failing third action rolls back the first two, logs action_halted, exits 4; other packs stay installed", async () => {
    await fresh();
    expect((await t.grex("add", t.repo("declarative-basic"))).code).toBe(0);
    const healthy = snapshot(t.home);
    const failing = t.repo("failing-third");
    const add = await t.grex("add", failing, "--json");
    expect(add.code).toBe(4);
    expect(existsSync(join(t.home, ".failing"))).toBe(false);
    expect(snapshot(t.home)).toEqual(healthy); // .bashrc back to declarative-basic's block only
    // A failed add adds nothing; registered without install, the failure shows in sync.
    expect(existsSync(join(t.ws, "failing-third"))).toBe(false);
    expect((await t.grex("add", failing, "--no-install")).code).toBe(0);
    const sync = await t.grex("sync", "--json");
    expect(snapshot(t.home)).toEqual(healthy);
    // Action brackets are runtime state: the journal under .grex/.state/ has them, grex.jsonl does not.
    const log = readFileSync(join(t.ws, ".grex", ".state", "journal.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).not.toContain("action_");
    const halted = log.find((e) => e.op === "action_halted" && e.id === "failing-third");
    expect(halted).toMatchObject({ action: "exec", idx: 2 });
    expect(halted.reason).toContain("exited 3");
    expect(halted.stderr).toContain("boom");
    expect(sync.code).toBe(4);
    const results = Object.fromEntries((sync.json.packs as Array<{ id: string; result: string }>).map((p) => [p.id, p.result]));
    expect(results).toEqual({ "declarative-basic": "ok", "failing-third": "failed" });
    expect(sync.json.halted).toMatchObject({ pack: "failing-third", action: "exec", idx: 2 });
    expect(sync.json.error).toMatchObject({ kind: "pack_op", code: 4 });
  });
});

describe("convergence", () => {
  test("a change under files/ changes actions_hash and sync re-applies; an unrelated commit does not, update does", async () => {
    await fresh();
    const url = t.repo("declarative-basic");
    expect((await t.grex("add", url)).code).toBe(0);
    const hash = () => JSON.parse(readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8").trim().split("\n")[0] as string).actions_hash;
    const h1 = hash();

    t.commit(url, { "README.md": "unrelated\n" });
    const quiet = await t.grex("sync", "--json");
    expect(quiet.code).toBe(0);
    expect(steps(quiet.json)).toEqual([]);
    expect(hash()).toBe(h1);

    const upd = await t.grex("update", "--json");
    expect(upd.code).toBe(0);
    expect(upd.json.packs).toEqual([expect.objectContaining({ id: "declarative-basic", reinstalled: true, reason: "sha-changed" })]);

    t.commit(url, { "files/app.conf": "theme = light\n" });
    const changed = await t.grex("sync", "--json");
    expect(steps(changed.json).length).toBeGreaterThan(0);
    expect(hash()).not.toBe(h1);
    expect(readFileSync(join(t.home, ".config/basic/app.conf"), "utf8")).toBe("theme = light\n");
  });

  test("SIGKILL in the middle of an action sequence is reported by the next sync, which converges", async () => {
    await fresh();
    const url = t.repo("slow", {
      ".grex/pack.yaml": [
        'schema_version: "1"',
        "name: slow",
        "type: declarative",
        "actions:",
        "  - mkdir: { path: $HOME/.slow }",
        "  - exec: { cmd: [sleep, '30'] }",
        "  - mkdir: { path: $HOME/.slow/done }",
        "",
      ].join("\n"),
    });
    expect((await t.grex("add", url, "--no-install")).code).toBe(0);
    const proc = t.spawnGrex(["sync"]);
    const journal = join(t.ws, ".grex", ".state", "journal.jsonl");
    const read = () => (existsSync(journal) ? readFileSync(journal, "utf8") : "");
    for (let i = 0; i < 400 && !read().includes('"action":"exec","idx":1'); i++) await Bun.sleep(25);
    proc.kill("SIGKILL");
    await proc.exited;
    expect(read()).toContain('"op":"action_started","ts"');

    // Make the slow step fast so the re-run can finish.
    t.commit(url, { ".grex/pack.yaml": readFileSync(join(url, ".grex/pack.yaml"), "utf8").replace("sleep, '30'", "sleep, '0'") });
    const rerun = await t.grex("sync", "--json");
    expect(rerun.code).toBe(0);
    expect((rerun.json.warnings as string[]).join("\n")).toContain("interrupted during action 1 (exec)");
    expect(existsSync(join(t.home, ".slow/done"))).toBe(true);
    const next = await t.grex("sync", "--json");
    expect(next.json.warnings).toEqual([]);
  });

  test("env machine scope without permission is a clear error and rolls back", async () => {
    await fresh();
    const url = t.repo("machine", {
      ".grex/pack.yaml": [
        'schema_version: "1"',
        "name: machine",
        "type: declarative",
        "actions:",
        '  - env: { name: GREX_M, value: "1", scope: machine }',
        "",
      ].join("\n"),
    });
    // The test seam for the machine file (never /etc/environment in tests).
    process.env.GREX_MACHINE_ENV_FILE = join(t.root, "no-such-dir/environment");
    const add = await t.grex("add", url, "--json");
    delete process.env.GREX_MACHINE_ENV_FILE;
    expect(add.code).toBe(4);
    expect(add.stderr).toContain("cannot write");
    expect(add.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("init on an existing manifest", () => {
  test("a fresh checkout of grex.jsonl: init --no-clone clones nothing, init clones every missing pack and installs it", async () => {
    await fresh();
    t.repo("child-a");
    t.repo("child-b");
    expect((await t.grex("add", t.repo("meta-basic"))).code).toBe(0);
    expect((await t.grex("add", t.repo("notes", { "n.md": "n\n" }))).code).toBe(0);
    // A teammate's machine: only the committed files, a new HOME.
    const other = join(t.root, "other");
    const { mkdirSync, copyFileSync, rmSync } = await import("node:fs");
    mkdirSync(other);
    for (const f of ["grex.jsonl", "grex.lock.jsonl", ".gitignore", ".gitattributes"]) copyFileSync(join(t.ws, f), join(other, f));
    rmSync(t.home, { recursive: true, force: true });
    mkdirSync(t.home);
    const inOther = async (...argv: string[]) => {
      const { runCli } = await import("../../src/cli/run.ts");
      let stdout = "";
      const code = await runCli(argv, { cwd: other, env: t.env, stdout: (s) => void (stdout += s), stderr: () => {}, stdoutTTY: false, stderrTTY: false });
      return { code, json: JSON.parse(stdout) as Record<string, unknown> };
    };
    const none = await inOther("init", "--no-clone", "--json");
    expect(none.json).toMatchObject({ created: [], cloned: [] });
    expect(existsSync(join(other, "notes"))).toBe(false);
    const all = await inOther("init", "--json");
    expect(all.code).toBe(0);
    expect((all.json.cloned as string[]).sort()).toEqual(["meta-basic", "meta-basic/child-a", "meta-basic/second", "notes"]);
    expect(existsSync(join(t.home, ".child-a/a.txt"))).toBe(true);
    const again = await inOther("init", "--json");
    expect(again.json.cloned).toEqual([]);
  });
});
