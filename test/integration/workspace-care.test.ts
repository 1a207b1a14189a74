// doctor, exec, run, --filter over nested packs, and import --scan/--from-repos-json.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
afterEach(() => t?.cleanup());

interface Finding {
  check: string;
  severity: string;
  pack: string | null;
  detail: string;
  auto_fixable: boolean;
}

async function workspaceWithPacks(): Promise<TestWorkspace> {
  t = new TestWorkspace();
  expect((await t.grex("init")).code).toBe(0);
  t.repo("child-a");
  t.repo("child-b");
  expect((await t.grex("add", t.repo("meta-basic"))).code).toBe(0);
  expect((await t.grex("add", t.repo("notes", { "notes.md": "# notes\n" }))).code).toBe(0);
  return t;
}

const problems = (json: Record<string, unknown>) => (json.findings as Finding[]).filter((f) => f.severity !== "ok");

describe("doctor", () => {
  test("a clean workspace: exit 0 and every check ok", async () => {
    await workspaceWithPacks();
    const r = await t.grex("doctor", "--json");
    expect(r.code).toBe(0);
    expect(r.json.worst_severity).toBe("ok");
    const checks = (r.json.findings as Finding[]).map((f) => f.check);
    expect(checks).toEqual([
      "manifest-schema",
      "lockfile-schema",
      "gitignore-sync",
      "on-disk-drift",
      "pack-schema",
      "stale-locks",
      "incomplete-actions",
      "orphans",
      "legacy-coexistence",
      "install-state",
      "setup-drift",
      "off-branch",
      "git-filters",
      "mirrors",
      "alternates",
      "serve-watch",
      "worktrees",
      "team-files",
      "merge-conflicts",
    ]);
  });

  test("a corrupt manifest line is an integrity error (exit 3) naming the line", async () => {
    await workspaceWithPacks();
    appendFileSync(join(t.ws, "grex.jsonl"), "{not json}\n{\"op\":\"sync\",\"ts\":\"x\",\"id\":\"notes\",\"schema_version\":\"1\"}\n");
    const r = await t.grex("doctor", "--json");
    expect(r.code).toBe(3);
    const p = problems(r.json);
    expect(p[0]).toMatchObject({ check: "manifest-schema", severity: "error" });
    expect(p[0]?.detail).toContain("line");
  });

  test("each drift is found with its check name; --fix heals the fixable ones and a second doctor is clean", async () => {
    await workspaceWithPacks();
    // on-disk-drift: change a pack's origin.
    git(join(t.ws, "notes"), "remote", "set-url", "origin", "/elsewhere/notes");
    // pack-schema: break a pack.yaml.
    writeFileSync(join(t.ws, "meta-basic/child-a/.grex/pack.yaml"), "schema_version: '1'\nname: Bad Name\ntype: meta\n");
    // gitignore-sync: hand-edit a managed block.
    const gi = join(t.ws, ".gitignore");
    writeFileSync(gi, readFileSync(gi, "utf8").replace("/notes/", "/notes-renamed/"));
    // incomplete-actions: an action_started with no completion.
    appendFileSync(
      join(t.ws, "grex.jsonl"),
      `${JSON.stringify({ op: "action_started", ts: new Date().toISOString(), id: "notes", schema_version: "1", action: "exec", idx: 0 })}\n`,
    );
    // stale-locks: a lock file left by a process that is gone.
    const dead = Bun.spawnSync(["true"]).pid;
    mkdirSync(join(t.ws, ".grex/.state/locks"), { recursive: true });
    writeFileSync(join(t.ws, ".grex/.state/locks/pack-dead.lock"), `${JSON.stringify({ pid: dead, start: "1", purpose: "pack x" })}\n`);
    // orphans: a lock entry without a pack, and an unregistered git dir.
    appendFileSync(
      join(t.ws, "grex.lock.jsonl"),
      `${JSON.stringify({ id: "ghost", sha: "", branch: null, installed_at: "", actions_hash: "", type: "meta" })}\n`,
    );
    t.repo("stray", { "x.txt": "x\n" });
    git(t.ws, "clone", "-q", join(t.upstream, "stray"), "stray");
    // legacy-coexistence: a REPOS.json entry not imported, and .scripts/.
    writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify([{ url: "/x/legacy", path: "legacy" }]));
    mkdirSync(join(t.ws, ".scripts"));

    const r = await t.grex("doctor", "--json");
    expect(r.code).toBe(7);
    const found = new Set(problems(r.json).map((f) => f.check));
    for (const check of ["on-disk-drift", "pack-schema", "gitignore-sync", "incomplete-actions", "stale-locks", "orphans", "legacy-coexistence"]) {
      expect(found).toContain(check);
    }
    expect(problems(r.json).find((f) => f.check === "pack-schema")?.severity).toBe("error");

    const fixed = await t.grex("doctor", "--fix", "--json");
    expect(fixed.json.fixed).toEqual(expect.arrayContaining(["gitignore-sync", "stale-locks", "orphans"]));
    const after = new Set(problems(fixed.json).map((f) => f.check));
    expect(after.has("gitignore-sync")).toBe(false);
    expect(after.has("stale-locks")).toBe(false);
    expect(readFileSync(gi, "utf8")).toContain("/notes/");

    // Undo the unfixable ones by hand: then doctor is clean.
    git(join(t.ws, "notes"), "remote", "set-url", "origin", join(t.upstream, "notes"));
    git(join(t.ws, "meta-basic/child-a"), "checkout", "--", ".grex/pack.yaml");
    const log = readFileSync(join(t.ws, "grex.jsonl"), "utf8").split("\n");
    writeFileSync(join(t.ws, "grex.jsonl"), log.filter((l) => !(l.includes('"action_started"') && l.includes('"id":"notes"'))).join("\n"));
    expect((await t.grex("import", "--scan", "--from-repos-json", "REPOS.json")).code).toBe(0);
    Bun.spawnSync(["rm", "-rf", join(t.ws, ".scripts")]);
    const clean = await t.grex("doctor", "--json");
    expect(problems(clean.json).filter((f) => f.check !== "on-disk-drift")).toEqual([]);
  });

  test("an unclosed marker is reported and repaired", async () => {
    await workspaceWithPacks();
    appendFileSync(join(t.ws, ".gitignore"), "# >>> grex:broken >>>\n/broken/\n");
    const r = await t.grex("doctor", "--json");
    expect(problems(r.json)[0]).toMatchObject({ check: "gitignore-sync", severity: "error", auto_fixable: true });
    expect((await t.grex("doctor", "--fix")).code).toBe(0);
  });
});

describe("exec", () => {
  test("runs over every pack, reports all results and exits 4 if one failed", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    for (const name of ["p1", "p2", "p3", "p4", "p5"]) {
      expect((await t.grex("add", t.repo(name, { "name.txt": name === "p3" ? "" : `${name}\n` }))).code).toBe(0);
    }
    const r = await t.grex("exec", "--json", "grep", "--", "-q", "p", "name.txt");
    expect(r.code).toBe(4);
    const results = r.json.results as Array<{ pack: string; exit: number }>;
    expect(results.map((x) => [x.pack, x.exit])).toEqual([
      ["p1", 0],
      ["p2", 0],
      ["p3", 1],
      ["p4", 0],
      ["p5", 0],
    ]);
  });

  test("argv mode does not interpret ; or $(...); --shell does", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    await t.grex("add", t.repo("one", { "a.txt": "a\n" }));
    const argv = await t.grex("exec", "--json", "echo", "a;b", "$(echo x)");
    expect((argv.json.results as Array<{ stdout: string }>)[0]?.stdout).toBe("a;b $(echo x)\n");
    const shell = await t.grex("exec", "--json", "--shell", "echo a; echo $(echo x) | tr x y");
    expect((shell.json.results as Array<{ stdout: string }>)[0]?.stdout).toBe("a\ny\n");
  });
  test("on a terminal, output streams live with a [pack] prefix and is not printed twice", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    await t.grex("add", t.repo("one", { "a.txt": "a\n" }));
    await t.grex("add", t.repo("two", { "b.txt": "b\n" }));
    let stdout = "";
    const code = await runCli(["exec", "--shell", "ls; echo oops >&2; exit 3"], {
      cwd: t.ws,
      env: t.env,
      stdout: (s) => {
        stdout += s;
      },
      stderr: () => {},
      stdoutTTY: true,
      stderrTTY: false,
    });
    expect(code).toBe(4);
    const lines = stdout.trim().split("\n");
    for (const want of ["[one] a.txt", "[one]! oops", "[two] b.txt", "[two]! oops", "[one] exit 3", "[two] exit 3"]) {
      expect(lines.filter((l) => l === want)).toHaveLength(1);
    }
  });
});

describe("--filter over nested packs", () => {
  test("glob, name=, type=, depth=, depth<= select the right packs; bad terms exit 2", async () => {
    await workspaceWithPacks();
    const ids = async (filter: string) =>
      ((await t.grex("ls", "--json", "--filter", filter)).json.packs as Array<{ id: string }>).map((p) => p.id);
    expect(await ids("depth=0")).toEqual(["meta-basic", "notes"]);
    expect(await ids("depth<=1")).toEqual(["meta-basic", "meta-basic/child-a", "meta-basic/second", "notes"]);
    expect(await ids("depth=1")).toEqual(["meta-basic/child-a", "meta-basic/second"]);
    expect(await ids("type=declarative")).toEqual(["meta-basic/child-a", "meta-basic/second"]);
    expect(await ids("meta-basic/*")).toEqual(["meta-basic/child-a", "meta-basic/second"]);
    expect(await ids("name=child-*")).toEqual(["meta-basic/child-a"]);
    expect(await ids("type=declarative,name=second")).toEqual(["meta-basic/second"]);
    expect(await ids("**")).toHaveLength(4);
    for (const bad of ["depth=x", "depth>1", "color=red", "a,,b", "name<=3"]) {
      const r = await t.grex("ls", "--filter", bad);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    const status = await t.grex("status", "--json", "--filter", "depth=1");
    expect((status.json.packs as unknown[]).length).toBe(2);
  });
});

describe("run", () => {
  test("runs the declared actions of one kind, including those inside when", async () => {
    await workspaceWithPacks();
    expect((await t.grex("add", t.repo("declarative-basic"))).code).toBe(0);
    const r = await t.grex("run", "mkdir", "--json", "--filter", "declarative-basic");
    expect(r.code).toBe(0);
    const steps = r.json.steps as Array<{ action: string; idx: number; result: string }>;
    expect(steps.map((s) => [s.action, s.idx])).toEqual([
      ["mkdir", 1],
      ["when", 5],
      ["mkdir", 5], // the nested mkdir, reported under its when's index
    ]);
    expect(steps.every((s) => s.result === "already_satisfied")).toBe(true);
    expect((await t.grex("run", "nope")).code).toBe(8); // an unknown action, as in pack.yaml
  });
});

describe("import", () => {
  test("--scan and --from-repos-json together dedupe by path; re-running both is a no-op", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    const a = t.repo("alpha", { "a.txt": "a\n" });
    t.repo("beta", { "b.txt": "b\n" });
    git(t.ws, "clone", "-q", a, "alpha");
    git(t.ws, "clone", "-q", join(t.upstream, "beta"), "beta");
    mkdirSync(join(t.ws, "no-remote"));
    git(join(t.ws, "no-remote"), "init", "-q");
    writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify([{ url: a, path: "alpha" }, { url: "/x/gamma", path: "gamma" }]));
    const first = await t.grex("import", "--scan", "--from-repos-json", "REPOS.json", "--json");
    expect(first.code).toBe(0);
    expect((first.json.imported as Array<{ path: string }>).map((i) => i.path).sort()).toEqual(["alpha", "beta", "gamma"]);
    expect(first.json.skipped).toEqual([{ path: "no-remote", reason: "no origin remote" }]);
    const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
    const second = await t.grex("import", "--scan", "--from-repos-json", "REPOS.json", "--json");
    expect(second.json.imported).toEqual([]);
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(manifest);
  });

  test("--migrate-gitignore turns hand-kept lines into managed blocks and keeps every other line", async () => {
    t = new TestWorkspace();
    await t.grex("init");
    writeFileSync(join(t.ws, ".gitignore"), "node_modules/\n/alpha/\n*.log\n");
    writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify([{ url: "/x/alpha", path: "alpha" }]));
    expect((await t.grex("import", "--from-repos-json", "REPOS.json", "--migrate-gitignore")).code).toBe(0);
    const text = readFileSync(join(t.ws, ".gitignore"), "utf8");
    expect(text).toBe("node_modules/\n*.log\n# >>> grex:alpha >>>\n/alpha/\n# <<< grex:alpha <<<\n");
  });
});
