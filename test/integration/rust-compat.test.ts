// Packs and workspaces written for the Rust grex (test/fixtures/rust-compat):
// each pack form is installed with `grex add` into a sandboxed HOME and either
// applied with its documented meaning or rejected with its documented message;
// a workspace with Rust-shaped grex.jsonl / grex.lock.jsonl is read, synced and
// converted (doctor --fix) with a backup.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES, git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

async function fresh(): Promise<TestWorkspace> {
  t = new TestWorkspace("grex-rust-compat-");
  expect((await t.grex("init")).code).toBe(0);
  return t;
}

/** `grex add` of the fixture pack test/fixtures/rust-compat/<name>. */
async function addFixture(name: string) {
  return t.grex("add", t.repo(`rust-compat/${name}`), "--json");
}

const errorMessage = (json: Record<string, unknown>) => (json.error as { message: string }).message;

describe("pack.yaml forms of the Rust grex", () => {
  // exec.cwd may be any directory the confinement rule allows, such as $HOME.
  test("exec with cwd: $HOME runs in HOME", async () => {
    await fresh();
    const add = await addFixture("exec-cwd-home");
    expect(add.code).toBe(0);
    expect(readFileSync(join(t.home, "exec-cwd.txt"), "utf8").trim()).toBe(t.home);
  });

  test('psversion ">=5.1" in require and ">=7.0" in when: accepted; off Windows false inside a combiner', async () => {
    await fresh();
    const add = await addFixture("psversion");
    expect(add.code).toBe(0);
    expect(existsSync(join(t.home, ".psversion/required"))).toBe(true);
    expect(existsSync(join(t.home, ".psversion/pwsh7"))).toBe(false); // when: os windows
  });

  test("a psversion that is no version requirement is rejected at parse (exit 3)", async () => {
    await fresh();
    const add = await addFixture("psversion-bad");
    expect(add.code).toBe(3);
    expect(errorMessage(add.json)).toContain('psversion must be a version requirement such as ">=5.1"');
  });

  test("reg_key {path, name}: accepted; off Windows false inside a combiner", async () => {
    await fresh();
    const add = await addFixture("reg-key");
    expect(add.code).toBe(0);
    expect(existsSync(join(t.home, ".reg-key"))).toBe(true);
    expect(existsSync(join(t.home, ".reg-key/windows-only"))).toBe(false);
  });

  test("reg_key as a string (Rust rejects it) is rejected with the mapping form in the message", async () => {
    await fresh();
    const add = await addFixture("reg-key-string");
    expect(add.code).toBe(3);
    expect(errorMessage(add.json)).toContain("reg_key must be a mapping such as {path:");
  });

  test("symlink_ok {src, dst}: false before the link exists, true once dst points at src", async () => {
    await fresh();
    const add = await addFixture("symlink-ok");
    expect(add.code).toBe(0);
    expect(existsSync(join(t.home, ".symlink-ok/before-link"))).toBe(true);
    expect(readlinkSync(join(t.home, ".symlink-ok/config.txt"))).toBe(join(t.ws, "symlink-ok/files/config.txt"));
    expect(existsSync(join(t.home, ".symlink-ok/after-link"))).toBe(true);
  });

  test("symlink_ok: true (Rust rejects it) is rejected", async () => {
    await fresh();
    const add = await addFixture("symlink-ok-bool");
    expect(add.code).toBe(3);
    expect(errorMessage(add.json)).toContain("symlink_ok must be a mapping such as {src:");
  });

  test("version: 1.5 (a number) is accepted", async () => {
    await fresh();
    const add = await addFixture("version-number");
    expect(add.code).toBe(0);
    expect(existsSync(join(t.home, ".version-number"))).toBe(true);
  });

  test("x-gitignore patterns go into the pack's managed block; doctor stays clean", async () => {
    await fresh();
    const add = await addFixture("x-gitignore");
    expect(add.code).toBe(0);
    const gi = readFileSync(join(t.ws, ".gitignore"), "utf8");
    expect(gi).toContain("# >>> grex:x-gitignore >>>\n/x-gitignore/\ntarget/\n*.log\n# <<< grex:x-gitignore <<<");
    const doctor = await t.grex("doctor", "--json");
    expect(doctor.code).toBe(0);
  });

  test("require nested 34 lists deep is rejected at parse (limit 32); 31 deep is accepted", async () => {
    await fresh();
    const deep = await addFixture("require-34-deep");
    expect(deep.code).toBe(3);
    expect(errorMessage(deep.json)).toContain("nests conditions 32 or more lists deep");
    const ok = await addFixture("require-31-deep");
    expect(ok.code).toBe(0);
  });
});

describe("grex teardown", () => {
  test("undoes the setup, keeps the pack registered; sync reinstalls it", async () => {
    await fresh();
    expect((await addFixture("teardown")).code).toBe(0);
    const link = join(t.home, ".teardown/rc");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);

    const td = await t.grex("teardown", "teardown", "--json");
    expect(td.code).toBe(0);
    expect(td.json).toMatchObject({ id: "teardown", teardown: "ok", reset: ["teardown"], dry_run: false });
    expect(existsSync(join(t.home, ".teardown"))).toBe(false);
    expect(existsSync(join(t.ws, "teardown/.grex/pack.yaml"))).toBe(true);
    const ls = await t.grex("ls", "--json");
    expect((ls.json.packs as { id: string }[]).map((p) => p.id)).toEqual(["teardown"]);

    const sync = await t.grex("sync", "--json");
    expect(sync.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  test("--dry-run reports the steps and changes nothing (HOME, lockfile)", async () => {
    await fresh();
    expect((await addFixture("teardown")).code).toBe(0);
    const lockBefore = readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8");
    const r = await t.grex("teardown", "teardown", "--dry-run", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ dry_run: true, reset: [] });
    expect((r.json.steps as { result: string }[]).every((s) => s.result === "would_perform_change")).toBe(true);
    expect(lstatSync(join(t.home, ".teardown/rc")).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8")).toBe(lockBefore);
  });

  test("a meta pack: its children's setup is undone and reinstalled too; a child alone by its id", async () => {
    await fresh();
    t.repo("child-a");
    t.repo("child-b");
    expect((await t.grex("add", t.repo("meta-basic"))).code).toBe(0);
    expect(existsSync(join(t.home, ".child-a/a.txt"))).toBe(true);

    const child = await t.grex("teardown", "meta-basic/child-a", "--json");
    expect(child.code).toBe(0);
    expect(child.json.reset).toEqual(["meta-basic/child-a"]);
    expect(existsSync(join(t.home, ".child-a"))).toBe(false);

    const all = await t.grex("teardown", "meta-basic", "--json");
    expect(all.code).toBe(0);
    expect(all.json.reset).toEqual(["meta-basic", "meta-basic/child-a", "meta-basic/second"]);
    // What is installed here is this machine's (.grex/.state/installs.json); the committed lockfile does not change.
    const local = JSON.parse(readFileSync(join(t.ws, ".grex", ".state", "installs.json"), "utf8")) as { packs: Record<string, { installed_at: string }> };
    expect(Object.values(local.packs).map((e) => e.installed_at)).toEqual(["", "", ""]);

    expect((await t.grex("sync")).code).toBe(0);
    expect(existsSync(join(t.home, ".child-a/a.txt"))).toBe(true);
  });

  test("an unknown id is a usage error (exit 2)", async () => {
    await fresh();
    const r = await t.grex("teardown", "nope", "--json");
    expect(r.code).toBe(2);
    expect(errorMessage(r.json)).toContain("No pack 'nope' is registered");
  });
});

describe("a workspace written by the Rust grex", () => {
  /** The fixture workspace with its placeholders filled in: alpha and beta cloned, as the Rust grex leaves them. */
  async function rustWorkspace() {
    t = new TestWorkspace("grex-rust-ws-");
    const alpha = t.repo("rust-compat/alpha");
    const beta = t.repo("beta", { "README.md": "beta\n" });
    const gamma = t.repo("gamma", { "README.md": "gamma\n" });
    for (const [url, dir] of [
      [alpha, "alpha"],
      [beta, "beta"],
    ] as const) {
      git(t.ws, "clone", "-q", url, dir);
    }
    const fill = (text: string) =>
      text
        .replaceAll("{{URL_ALPHA}}", alpha)
        .replaceAll("{{URL_BETA}}", beta)
        .replaceAll("{{URL_GAMMA}}", gamma)
        .replaceAll("{{SHA_ALPHA}}", git(alpha, "rev-parse", "HEAD"))
        .replaceAll("{{SHA_BETA}}", git(beta, "rev-parse", "HEAD"))
        .replaceAll("{{HEX64}}", "ab".repeat(32));
    for (const f of ["grex.jsonl", "grex.lock.jsonl", "REPOS.json"]) {
      writeFileSync(join(t.ws, f), fill(readFileSync(join(FIXTURES, "rust-compat/workspace", f), "utf8")));
    }
    return { alpha, beta, gamma };
  }

  test("ls --json and status read it as it is", async () => {
    const { alpha, beta } = await rustWorkspace();
    const before = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
    const ls = await t.grex("ls", "--json");
    expect(ls.code).toBe(0);
    const packs = ls.json.packs as { id: string; type: string; url: string; ref: string | null; sha: string | null }[];
    expect(packs.map((p) => [p.id, p.type, p.url, p.ref])).toEqual([
      ["alpha", "declarative", alpha, null],
      ["beta", "meta", beta, "main"],
    ]);
    expect(packs[0]?.sha).toBe(git(alpha, "rev-parse", "HEAD"));
    const status = await t.grex("status", "--json");
    expect(status.code).not.toBe(3);
    expect((status.json.packs as { id: string }[]).map((p) => p.id)).toEqual(["alpha", "beta"]);
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(before); // reading changes nothing
  });

  test("sync works on it and installs the packs' setup", async () => {
    await rustWorkspace();
    const sync = await t.grex("sync", "--json");
    expect(sync.code).toBe(0);
    expect(existsSync(join(t.home, ".alpha"))).toBe(true);
  });

  test("doctor reports the Rust format; doctor --fix converts with a backup; doctor is then clean", async () => {
    await rustWorkspace();
    const manifestBefore = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
    const lockBefore = readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8");
    const doctor = await t.grex("doctor", "--json");
    const findings = doctor.json.findings as { check: string; detail: string; auto_fixable: boolean }[];
    const rust = findings.find((f) => f.detail.includes("Rust grex's format"));
    expect(rust).toMatchObject({ check: "legacy-coexistence", auto_fixable: true });
    expect(rust?.detail).toContain("grex.jsonl has 8 line(s) and grex.lock.jsonl has 2 line(s)");

    const fix = await t.grex("doctor", "--fix", "--json");
    expect(fix.json.fixed).toContain("legacy-coexistence");
    expect(readFileSync(join(t.ws, "grex.jsonl.rust-backup"), "utf8")).toBe(manifestBefore);
    expect(readFileSync(join(t.ws, "grex.lock.jsonl.rust-backup"), "utf8")).toBe(lockBefore);

    // Every line now in this grex's format.
    const events = readFileSync(join(t.ws, "grex.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    for (const e of events) {
      expect(e.schema_version).toBe("1");
      expect(e).not.toHaveProperty("pack");
      expect(e).not.toHaveProperty("field");
    }
    expect(events[2]).toMatchObject({ op: "update", id: "beta", ref: "main" });
    expect(events[6]).toMatchObject({ op: "action_completed", id: "alpha", idx: 0, changed: true });
    expect(events[8]).toMatchObject({ op: "action_halted", id: "alpha", idx: 1, action: "exec", reason: "non-zero exit 3", stderr: "" });
    const lock = readFileSync(join(t.ws, "grex.lock.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lock.map((e) => [e.id, e.type, e.actions_hash])).toEqual([
      ["alpha", "declarative", `sha256:${"ab".repeat(32)}`],
      ["beta", "meta", ""],
    ]);
    for (const e of lock) expect(e).not.toHaveProperty("schema_version");

    const after = await t.grex("doctor", "--json");
    expect((after.json.findings as { detail: string }[]).some((f) => f.detail.includes("Rust grex"))).toBe(false);
    // Clean apart from the REPOS.json entry (gamma) this workspace never imported.
    const problems = (after.json.findings as { severity: string; detail: string }[]).filter((f) => f.severity !== "ok");
    expect(problems.map((p) => p.detail)).toEqual([expect.stringContaining("REPOS.json lists 1 repo(s) not in grex.jsonl (gamma)")]);

    // Converting again has nothing to do.
    expect(((await t.grex("doctor", "--fix", "--json")).json.fixed as string[]).includes("legacy-coexistence")).toBe(false);
  });

  test("import of its REPOS.json: the entry without url is reported as skipped, not fatal", async () => {
    const { gamma } = await rustWorkspace();
    const r = await t.grex("import", "--from-repos-json", "REPOS.json", "--json");
    expect(r.code).toBe(0);
    expect(r.json.imported).toEqual([{ path: "gamma", url: gamma, type: "meta" }]);
    expect(r.json.skipped).toEqual([
      { path: "scripts", reason: expect.stringContaining("no url") },
      { path: "alpha", reason: "already registered" },
    ]);
    // The url-less entry is not reported as "not imported" afterwards.
    const doctor = await t.grex("doctor", "--json");
    const details = (doctor.json.findings as { detail: string }[]).map((f) => f.detail);
    expect(details.some((d) => d.includes("REPOS.json"))).toBe(false);
  });
});
