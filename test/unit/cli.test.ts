// The CLI adapter (SPEC §8): version, usage errors, the --json error envelope,
// init idempotence, import deduplication and dry runs, the ls document. Runs
// runCli in process against real temp workspaces; a few checks spawn the real
// entry point to see exactly what a user sees.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { parseManifest } from "../../src/core/workspace/manifest.ts";
import { snapshot, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
beforeEach(() => {
  t = new TestWorkspace("grex-cli-");
});
afterEach(() => t.cleanup());

async function spawned(argv: string[], cwd = t.ws) {
  const proc = t.spawnGrex(argv, { cwd });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Exactly one line on stderr, in the `grex: ...` form, with no stack trace. */
function oneErrorLine(stderr: string): string {
  expect(stderr).toMatch(/^grex: [^\n]+\n$/);
  expect(stderr).not.toMatch(/^\s+at /m);
  return stderr.slice("grex: ".length, -1);
}

const events = () => parseManifest(readFileSync(join(t.ws, "grex.jsonl"), "utf8"), "grex.jsonl").events;

function reposJson(name: string, entries: Array<{ url: string; path: string }>): string {
  writeFileSync(join(t.ws, name), JSON.stringify(entries));
  return name;
}

describe("version and usage errors", () => {
  test("--version prints `grex <version>` (in process and through main.ts)", async () => {
    const r = await t.grex("--version");
    expect(r).toMatchObject({ code: 0, stdout: `grex ${pkg.version}\n`, stderr: "" });
    expect(await spawned(["--version"])).toEqual({ code: 0, stdout: `grex ${pkg.version}\n`, stderr: "" });
    expect((await t.grex("ls", "--version")).stdout).toBe(`grex ${pkg.version}\n`);
  });

  test("an unknown verb exits 2 with one line on stderr", async () => {
    const r = await t.grex("frobnicate");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(oneErrorLine(r.stderr)).toContain("Unknown verb 'frobnicate'");
    const s = await spawned(["frobnicate"]);
    expect(s.code).toBe(2);
    expect(oneErrorLine(s.stderr)).toContain("Unknown verb 'frobnicate'");
  });

  test("an unknown flag exits 2 with one line on stderr", async () => {
    const r = await t.grex("ls", "--bogus");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(oneErrorLine(r.stderr)).toContain("bogus");
    const s = await spawned(["init", "--no-such-flag"]);
    expect(s.code).toBe(2);
    oneErrorLine(s.stderr);
  });

  test("no verb at all is a usage error", async () => {
    const r = await t.grex();
    expect(r.code).toBe(2);
    expect(oneErrorLine(r.stderr)).toContain("No verb given");
  });

  test("an invalid --filter exits 2", async () => {
    await t.grex("init", "--no-clone");
    const r = await t.grex("ls", "--filter", "depth>=x");
    expect(r.code).toBe(2);
    expect(oneErrorLine(r.stderr)).toContain("Invalid --filter term 'depth>=x'");
  });
});

describe("--json error envelope", () => {
  test("a failing verb prints {verb, error:{kind, code, message}} on stdout and the message on stderr", async () => {
    const r = await t.grex("ls", "--json"); // no workspace yet
    expect(r.code).toBe(2);
    expect(Object.keys(r.json).sort()).toEqual(["error", "verb"]);
    expect(r.json.verb).toBe("ls");
    const err = r.json.error as Record<string, unknown>;
    expect(Object.keys(err).sort()).toEqual(["code", "kind", "message"]);
    expect(err.kind).toBe("usage");
    expect(err.code).toBe(2);
    expect(err.message).toContain("No grex workspace found");
    expect(oneErrorLine(r.stderr)).toBe(err.message as string);
    expect(r.stdout.split("\n")).toHaveLength(2); // one document, one line
  });

  test("an unknown verb with --json still gets an envelope", async () => {
    const r = await t.grex("frobnicate", "--json");
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({ verb: "grex", error: { kind: "usage", code: 2 } });
  });

  test("an integrity failure reports kind integrity, code 3", async () => {
    await t.grex("init", "--no-clone");
    writeFileSync(join(t.ws, "grex.jsonl"), "{broken\n{}\n");
    const r = await t.grex("ls", "--json");
    expect(r.code).toBe(3);
    expect(r.json).toMatchObject({ verb: "ls", error: { kind: "integrity", code: 3 } });
    expect((r.json.error as { message: string }).message).toContain("grex.jsonl line 1");
    oneErrorLine(r.stderr);
  });
});

describe("init", () => {
  test("creates the workspace files once; a second run creates and changes nothing", async () => {
    const first = await t.grex("init", "--json");
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({ workspace: t.ws, cloned: [], dry_run: false });
    expect((first.json.created as string[]).sort()).toEqual([".gitattributes", ".gitignore", "grex.jsonl", "grex.lock.jsonl"]);
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe("");
    expect(readFileSync(join(t.ws, ".gitattributes"), "utf8")).toContain("/grex.jsonl merge=union\n/grex.lock.jsonl merge=union\n/.gitignore merge=union\n");
    expect(readFileSync(join(t.ws, ".gitignore"), "utf8")).toBe("# >>> grex:state >>>\n/.grex/.state/\n# <<< grex:state <<<\n");
    const before = snapshot(t.ws);

    const second = await t.grex("init", "--json");
    expect(second.code).toBe(0);
    expect(second.json).toMatchObject({ created: [], cloned: [] });
    expect(snapshot(t.ws)).toEqual(before);
    expect((await t.grex("init")).stdout).toContain("already initialised");
  });

  test("keeps an existing .gitignore's lines and line endings", async () => {
    writeFileSync(join(t.ws, ".gitignore"), "node_modules/\r\n*.log");
    expect((await t.grex("init", "--no-clone")).code).toBe(0);
    expect(readFileSync(join(t.ws, ".gitignore"), "utf8")).toBe(
      "node_modules/\r\n*.log\r\n# >>> grex:state >>>\r\n/.grex/.state/\r\n# <<< grex:state <<<\r\n",
    );
  });

  test("--dry-run reports what it would create and creates nothing", async () => {
    const r = await t.grex("init", "--dry-run", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ dry_run: true });
    expect((r.json.created as string[]).sort()).toEqual([".gitattributes", ".gitignore", "grex.jsonl", "grex.lock.jsonl"]);
    expect(snapshot(t.ws)).toEqual({});
  });

  test("adds only the missing union-merge lines to an existing .gitattributes, keeping its lines and line endings", async () => {
    writeFileSync(join(t.ws, ".gitattributes"), "*.png binary\r\ngrex.jsonl merge=union");
    expect((await t.grex("init", "--no-clone")).code).toBe(0);
    const text = readFileSync(join(t.ws, ".gitattributes"), "utf8");
    expect(text.startsWith("*.png binary\r\ngrex.jsonl merge=union\r\n")).toBe(true);
    expect(text).not.toContain("/grex.jsonl merge=union");
    expect(text.endsWith("/grex.lock.jsonl merge=union\r\n/.gitignore merge=union\r\n")).toBe(true);
    expect(text.replace(/\r\n/g, "")).not.toContain("\n");
  });

  test("doctor reports a workspace in git without the union-merge lines and --fix adds them", async () => {
    expect((await t.grex("init", "--no-clone")).code).toBe(0);
    writeFileSync(join(t.ws, ".gitattributes"), "");
    expect((await t.grex("doctor", "--json")).code).toBe(0); // not in git: the lines would change nothing
    mkdirSync(join(t.ws, ".git"));
    const before = await t.grex("doctor", "--json");
    expect(before.code).toBe(7);
    const team = (before.json.findings as Array<{ check: string; auto_fixable: boolean }>).filter((f) => f.check === "team-files");
    expect(team).toEqual([expect.objectContaining({ auto_fixable: true })]);
    const fixed = await t.grex("doctor", "--fix", "--json");
    expect(fixed.code).toBe(0);
    expect(fixed.json.fixed).toContain("team-files");
    expect(readFileSync(join(t.ws, ".gitattributes"), "utf8")).toContain("/grex.lock.jsonl merge=union");
  });
});

describe("import --from-repos-json", () => {
  const A = { url: "https://example.invalid/org/a.git", path: "a" };
  const B = { url: "https://example.invalid/org/b.git", path: "b" };

  beforeEach(async () => {
    expect((await t.grex("init", "--no-clone")).code).toBe(0);
  });

  test("registers new entries, then deduplicates by path", async () => {
    const file = reposJson("REPOS.json", [A, B]);
    const first = await t.grex("import", "--from-repos-json", file, "--json");
    expect(first.code).toBe(0);
    expect(first.json).toEqual({
      dry_run: false,
      imported: [
        { path: "a", url: A.url, type: "meta" },
        { path: "b", url: B.url, type: "meta" },
      ],
      skipped: [],
      failed: [],
      notes: [],
    });
    expect(events().map((e) => [e.op, e.id])).toEqual([
      ["add", "a"],
      ["add", "b"],
    ]);
    const ignore = readFileSync(join(t.ws, ".gitignore"), "utf8");
    expect(ignore).toContain("# >>> grex:a >>>\n/a/\n# <<< grex:a <<<\n");
    expect(ignore).toContain("# >>> grex:b >>>\n/b/\n# <<< grex:b <<<\n");

    // Same url again: skipped, nothing appended.
    const before = snapshot(t.ws);
    const again = await t.grex("import", "--from-repos-json", file, "--json");
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({
      imported: [],
      skipped: [
        { path: "a", reason: "already registered" },
        { path: "b", reason: "already registered" },
      ],
      failed: [],
    });
    expect(snapshot(t.ws)).toEqual(before);

    // Different url for a registered path: failed (exit 2, one line), nothing appended.
    const moved = reposJson("MOVED.json", [{ url: "https://example.invalid/fork/a.git", path: "a" }]);
    const clash = await t.grex("import", "--from-repos-json", moved, "--json");
    expect(clash.code).toBe(2);
    expect(clash.json).toMatchObject({ verb: "import", imported: [], failed: [{ path: "a" }], error: { kind: "usage", code: 2 } });
    expect((clash.json.failed as Array<{ error: string }>)[0]?.error).toContain("pass --force");
    const plainClash = await t.grex("import", "--from-repos-json", moved);
    expect(plainClash.code).toBe(2);
    expect(plainClash.stdout).toContain("failed a: already registered");
    expect(oneErrorLine(plainClash.stderr)).toContain("could not be imported");
    expect(events()).toHaveLength(2);

    // With --force: an update event re-points it.
    const forced = await t.grex("import", "--from-repos-json", moved, "--force", "--json");
    expect(forced.code).toBe(0);
    expect(forced.json).toMatchObject({ imported: [{ path: "a", url: "https://example.invalid/fork/a.git" }] });
    const last = events().at(-1);
    expect(last).toMatchObject({ op: "update", id: "a", url: "https://example.invalid/fork/a.git" });
    const ls = await t.grex("ls", "--json");
    expect((ls.json.packs as Array<{ id: string; url: string }>).find((p) => p.id === "a")?.url).toBe("https://example.invalid/fork/a.git");
  });

  test("a removed (tombstoned) path is skipped unless --force", async () => {
    const file = reposJson("REPOS.json", [A, B]);
    await t.grex("import", "--from-repos-json", file);
    const rm = await t.grex("rm", "b", "--json");
    expect(rm.code).toBe(0);
    expect(events().at(-1)).toMatchObject({ op: "rm", id: "b" });

    const again = await t.grex("import", "--from-repos-json", file, "--json");
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ imported: [], failed: [] });
    const skipped = again.json.skipped as Array<{ path: string; reason: string }>;
    expect(skipped.find((s) => s.path === "b")?.reason).toContain("removed earlier");
    expect(events().filter((e) => e.id === "b").map((e) => e.op)).toEqual(["add", "rm"]);

    const forced = await t.grex("import", "--from-repos-json", file, "--force", "--json");
    expect(forced.json).toMatchObject({ imported: [{ path: "b" }] });
    expect(events().at(-1)).toMatchObject({ op: "add", id: "b" });
  });

  test("the same path listed twice in one file: once with the same url is skipped, with another url fails", async () => {
    const file = reposJson("REPOS.json", [A, A, B, { url: "https://other/b.git", path: "b" }]);
    const r = await t.grex("import", "--from-repos-json", file, "--json");
    expect(r.code).toBe(2);
    expect(r.json).toMatchObject({
      imported: [{ path: "a" }, { path: "b" }],
      skipped: [{ path: "a", reason: "listed twice" }],
      failed: [{ path: "b" }],
    });
  });

  test("--dry-run reports the plan and writes nothing", async () => {
    const file = reposJson("REPOS.json", [A, B]);
    const before = snapshot(t.ws);
    const r = await t.grex("import", "--from-repos-json", file, "--dry-run", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ dry_run: true, imported: [{ path: "a" }, { path: "b" }], failed: [] });
    expect(snapshot(t.ws)).toEqual(before);
    expect((await t.grex("import", "--from-repos-json", file, "--dry-run")).stdout).toContain("would import a");
    expect(snapshot(t.ws)).toEqual(before);
  });

  test("a bad REPOS.json is a usage error naming the file", async () => {
    writeFileSync(join(t.ws, "REPOS.json"), '{"url": "x"}');
    const r = await t.grex("import", "--from-repos-json", "REPOS.json");
    expect(r.code).toBe(2);
    expect(oneErrorLine(r.stderr)).toContain("REPOS.json");
    const missing = await t.grex("import", "--from-repos-json", "nope.json");
    expect(missing.code).toBe(2);
    expect(oneErrorLine(missing.stderr)).toContain("nope.json");
  });

  test("a pack whose pack.yaml is broken is reported (one line, no stack trace) and not registered", async () => {
    for (const [dir, yaml] of [
      ["bad", 'schema_version: "1"\nname: Bad Name\ntype: meta\n'],
      ["bomb", 'a: &a ["x", "x"]\nb: [*a, *a]\n'],
      ["plugin", 'schema_version: "1"\nname: plugin\ntype: magic\n'],
    ] as const) {
      mkdirSync(join(t.ws, dir, ".grex"), { recursive: true });
      writeFileSync(join(t.ws, dir, ".grex", "pack.yaml"), yaml);
    }
    mkdirSync(join(t.ws, "good", ".grex"), { recursive: true });
    writeFileSync(join(t.ws, "good", ".grex", "pack.yaml"), 'schema_version: "1"\nname: good\ntype: declarative\n');
    const file = reposJson("REPOS.json", ["bad", "bomb", "plugin", "good"].map((p) => ({ url: `https://example.invalid/${p}.git`, path: p })));

    const r = await t.grex("import", "--from-repos-json", file, "--json");
    expect(r.code).toBe(2);
    expect(r.json.imported).toEqual([{ path: "good", url: "https://example.invalid/good.git", type: "declarative" }]);
    const failed = r.json.failed as Array<{ path: string; error: string }>;
    expect(failed.map((f) => f.path)).toEqual(["bad", "bomb", "plugin"]);
    expect(failed[0]?.error).toContain(": name 'Bad Name' is not a valid pack name");
    expect(failed[1]?.error).toContain("alias-bomb");
    expect(failed[2]?.error).toContain("'magic' is not a known pack type");
    for (const f of failed) {
      expect(f.error).toContain(join(t.ws, f.path, ".grex", "pack.yaml"));
      expect(f.error).not.toContain("\n");
    }
    expect(events().map((e) => e.id)).toEqual(["good"]);

    // The real process: plain output, one stderr line, no stack trace.
    writeFileSync(join(t.ws, "REPOS2.json"), JSON.stringify([{ url: "https://example.invalid/bad.git", path: "bad" }]));
    const s = await spawned(["import", "--from-repos-json", "REPOS2.json"]);
    expect(s.code).toBe(2);
    expect(s.stdout).toContain("failed bad: ");
    expect(s.stdout).not.toMatch(/^\s+at /m);
    expect(oneErrorLine(s.stderr)).toContain("could not be imported");
  });
});

describe("ls --json", () => {
  test("document shape: {packs:[{id,type,path,url,ref,sha,installed_at,depth,parent,tags}]}", async () => {
    await t.grex("init", "--no-clone");
    const empty = await t.grex("ls", "--json");
    expect(empty).toMatchObject({ code: 0, stderr: "" });
    expect(empty.json).toEqual({ packs: [] });

    reposJson("REPOS.json", [
      { url: "https://example.invalid/b.git", path: "b" },
      { url: "https://example.invalid/a.git", path: "a" },
    ]);
    await t.grex("import", "--from-repos-json", "REPOS.json", "--default-type", "declarative");
    const r = await t.grex("ls", "--json");
    expect(r.code).toBe(0);
    expect(Object.keys(r.json)).toEqual(["packs"]);
    const packs = r.json.packs as Array<Record<string, unknown>>;
    for (const p of packs) expect(Object.keys(p).sort()).toEqual(["depth", "id", "installed_at", "parent", "path", "ref", "sha", "tags", "type", "url"]);
    expect(packs).toEqual([
      { id: "b", type: "declarative", path: "b", url: "https://example.invalid/b.git", ref: null, sha: null, installed_at: null, depth: 0, parent: null, tags: [] },
      { id: "a", type: "declarative", path: "a", url: "https://example.invalid/a.git", ref: null, sha: null, installed_at: null, depth: 0, parent: null, tags: [] },
    ]);
    expect((await t.grex("ls", "--json", "--filter", "a")).json).toEqual({ packs: [packs[1]] });
    expect((await t.grex("ls", "--plain")).stdout).toBe("b  declarative\na  declarative\n");
  });
});
