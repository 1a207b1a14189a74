// Reading the Rust grex's line shapes (compat/rust.ts), its version
// requirements (version-spec.ts), its pack.yaml extras, and its MCP argument
// spellings (mcp/aliases.ts).
import { describe, expect, test } from "bun:test";
import { parseVersionSpec, versionSatisfies } from "../../src/core/actions/version-spec.ts";
import { fromRustEvent, fromRustLockEntry } from "../../src/core/workspace/rust-lines.ts";
import { GrexError } from "../../src/core/base/errors.ts";
import { parseLockfile } from "../../src/core/workspace/lockfile.ts";
import { fold, parseManifest } from "../../src/core/workspace/manifest.ts";
import { validatePack } from "../../src/core/pack/schema.ts";
import { packIgnoreLines } from "../../src/core/pack/x-gitignore.ts";
import { mapRustAliases } from "../../src/mcp/aliases.ts";
import { findVerb } from "../../src/verbs/index.ts";
import type { VerbDef } from "../../src/verbs/types.ts";

const T = "2026-04-19T10:00:00Z";
const jsonl = (...lines: object[]) => lines.map((l) => `${JSON.stringify(l)}\n`).join("");

describe("grex.jsonl lines as the Rust grex writes them", () => {
  test("update {field, value} maps to this grex's update; unknown fields are a no-op", () => {
    const text = jsonl(
      { op: "add", ts: T, id: "a", url: "https://x/a.git", path: "a", type: "declarative", schema_version: "1" },
      { op: "update", ts: T, id: "a", field: "ref", value: "v1" },
      { op: "update", ts: T, id: "a", field: "url", value: "https://x/b.git" },
      { op: "update", ts: T, id: "a", field: "path", value: "elsewhere" },
      { op: "update", ts: T, id: "a", field: "url", value: "" },
    );
    const { events } = parseManifest(text, "grex.jsonl");
    expect(events[1]).toEqual({ op: "update", ts: T, id: "a", schema_version: "1", ref: "v1" });
    expect(events[3]).toEqual({ op: "update", ts: T, id: "a", schema_version: "1" });
    expect(fold(events).get("a")).toEqual({ id: "a", url: "https://x/b.git", path: "a", type: "declarative", ref: "v1" });
  });

  test("update with ref null clears the pin", () => {
    const e = fromRustEvent({ op: "update", ts: T, id: "a", field: "ref", value: null });
    expect(e).toEqual({ op: "update", ts: T, id: "a", schema_version: "1", ref: null });
  });

  test("action events: pack/action_idx/action_name/result_summary/error_summary", () => {
    const { events } = parseManifest(
      jsonl(
        { op: "action_started", ts: T, pack: "a", action_idx: 2, action_name: "symlink" },
        { op: "action_completed", ts: T, pack: "a", action_idx: 2, result_summary: "already_satisfied" },
        { op: "action_halted", ts: T, pack: "a", action_idx: 3, action_name: "exec", error_summary: "exit 3" },
        { op: "sync", ts: T, id: "a", sha: "abc" },
        { op: "rm", ts: T, id: "a" },
      ),
      "grex.jsonl",
    );
    expect(events[0]).toEqual({ op: "action_started", ts: T, id: "a", idx: 2, action: "symlink", schema_version: "1" });
    expect(events[1]).toEqual({ op: "action_completed", ts: T, id: "a", idx: 2, action: "unknown", changed: false, schema_version: "1" });
    expect(events[2]).toEqual({ op: "action_halted", ts: T, id: "a", idx: 3, action: "exec", reason: "exit 3", stderr: "", schema_version: "1" });
    expect(events[3]).toMatchObject({ op: "sync", schema_version: "1" });
  });

  test("lines already in this grex's format pass through as they are (same object)", () => {
    const line = { op: "rm", ts: T, id: "a", schema_version: "1" };
    expect(fromRustEvent(line)).toBe(line);
    expect(line).toEqual({ op: "rm", ts: T, id: "a", schema_version: "1" });
  });

  test("what neither grex writes is still an integrity error", () => {
    const bad = (line: object) => () => parseManifest(jsonl(line), "grex.jsonl");
    expect(bad({ op: "frobnicate", ts: T, id: "a" })).toThrow("has no schema_version");
    expect(bad({ op: "add", ts: T, id: "a", url: "u", path: "a", type: "meta" })).toThrow("has no schema_version");
    expect(bad({ op: "action_started", ts: T, pack: "a", action_name: "mkdir" })).toThrow("'idx' must be a non-negative integer");
  });
});

describe("grex.lock.jsonl lines as the Rust grex writes them", () => {
  const sha = "a".repeat(40);
  test("no type, schema_version, branch string, bare-hex actions_hash", () => {
    const { entries } = parseLockfile(
      jsonl(
        { id: "a", sha, branch: "main", installed_at: "2026-04-19T10:06:03.123456789Z", actions_hash: "ab".repeat(32), schema_version: "1" },
        { id: "b", sha, branch: "", installed_at: T, actions_hash: "", schema_version: "1" },
      ),
      "grex.lock.jsonl",
    );
    expect(entries.get("a")).toEqual({
      id: "a",
      sha,
      branch: "main",
      installed_at: "2026-04-19T10:06:03.123456789Z",
      actions_hash: `sha256:${"ab".repeat(32)}`,
      type: "meta",
    });
    expect(entries.get("b")?.branch).toBeNull();
  });

  test("an entry of this grex is untouched; one with neither type nor schema_version is still an error", () => {
    const ours = { id: "a", sha, branch: null, installed_at: T, actions_hash: "", type: "declarative" };
    expect(fromRustLockEntry(ours)).toBe(ours);
    expect(() => parseLockfile(jsonl({ id: "a", sha, branch: null, installed_at: T, actions_hash: "" }), "grex.lock.jsonl")).toThrow(
      "has no 'type'",
    );
  });
});

describe("version requirements (psversion)", () => {
  test("operators and a bare minimum", () => {
    const ok = (installed: string, spec: string) => versionSatisfies(installed, parseVersionSpec(spec) ?? { op: "=", version: [-1] });
    expect(ok("5.1.19041.1", ">=5.1")).toBe(true);
    expect(ok("5.0", ">=5.1")).toBe(false);
    expect(ok("7.0.0", ">=7")).toBe(true);
    expect(ok("7.9", ">=7.10")).toBe(false); // numeric, not lexical
    expect(ok("5.1", "5.1")).toBe(true); // bare = minimum
    expect(ok("7.4.1", "<7.5")).toBe(true);
    expect(ok("7.5", "<7.5")).toBe(false);
    expect(ok("7.2.0", "=7.2")).toBe(true);
    expect(ok("7.2.1", "==7.2")).toBe(false);
    expect(ok("8", ">7.4")).toBe(true);
    expect(ok("7.4", "<=7.4")).toBe(true);
    expect(parseVersionSpec("soon")).toBeNull();
  });
});

describe("pack.yaml extras", () => {
  const base = { schema_version: "1", name: "p", type: "declarative" };
  const fails = (doc: object) => {
    try {
      validatePack(doc, "pack.yaml");
    } catch (e) {
      if (e instanceof GrexError && e.kind === "integrity") return e.message;
    }
    throw new Error("expected an integrity error");
  };

  test("a numeric version reads as its text", () => {
    expect(validatePack({ ...base, version: 1.5 }, "pack.yaml").version).toBe("1.5");
    expect(validatePack({ ...base, version: 2 }, "pack.yaml").version).toBe("2");
  });

  test("x-gitignore: a list of one-line patterns, written after the pack's own line", () => {
    const m = validatePack({ ...base, "x-gitignore": ["target/", "*.log", "/p/"] }, "pack.yaml");
    expect(packIgnoreLines("p", m)).toEqual(["/p/", "target/", "*.log"]);
    expect(packIgnoreLines("p", null)).toEqual(["/p/"]);
    expect(fails({ ...base, "x-gitignore": "target/" })).toBe(
      "pack.yaml: x-gitignore must be a list of .gitignore patterns; write each pattern as a '- target/' list item.",
    );
    expect(fails({ ...base, "x-gitignore": ["a", 3] })).toContain("x-gitignore[1] must be a non-empty string");
    expect(fails({ ...base, "x-gitignore": ["a\nb"] })).toContain("x-gitignore[0] spans several lines");
    expect(fails({ ...base, "x-gitignore": ["# <<< grex:other <<<"] })).toContain("x-gitignore[0] looks like a grex block marker");
  });
});

describe("MCP argument spellings of the Rust grex", () => {
  const verb = (name: string) => findVerb(name) as VerbDef;
  const root = "/work/space";

  test("camelCase names map to the canonical snake_case params", () => {
    expect(mapRustAliases(verb("import"), { fromReposJson: "REPOS.json", dryRun: true }, root)).toEqual({
      from_repos_json: "REPOS.json",
      dry_run: true,
    });
    expect(mapRustAliases(verb("doctor"), { lintConfig: true }, root)).toEqual({ lint_config: true });
    expect(mapRustAliases(verb("rm"), { path: "a", keepFiles: true }, root)).toEqual({ id: "a", keep_files: true });
    expect(mapRustAliases(verb("update"), { pack: "a" }, root)).toEqual({ ids: ["a"] });
    expect(mapRustAliases(verb("exec"), { cmd: ["git", "status"] }, root)).toEqual({ cmd: "git", args: ["status"] });
  });

  test("ambiguous or unknown spellings are left for validation to reject", () => {
    // Both spellings: nothing is mapped.
    expect(mapRustAliases(verb("sync"), { dryRun: true, dry_run: false }, root)).toEqual({ dryRun: true, dry_run: false });
    // No such param here (noValidate), or CLI-only (doctor fix): left as is.
    expect(mapRustAliases(verb("sync"), { noValidate: true }, root)).toEqual({ noValidate: true });
    expect(mapRustAliases(verb("exec"), { cmd: ["git"], args: ["x"] }, root)).toEqual({ cmd: ["git"], args: ["x"] });
    expect(mapRustAliases(verb("ls"), "not an object", root)).toBe("not an object");
  });

  test("sync packRoot / workspace: the server's own workspace is dropped, another is a usage error", () => {
    expect(mapRustAliases(verb("sync"), { packRoot: root, dryRun: true }, root)).toEqual({ dry_run: true });
    expect(mapRustAliases(verb("sync"), { packRoot: ".", workspace: `${root}/` }, root)).toEqual({});
    expect(() => mapRustAliases(verb("sync"), { packRoot: "/elsewhere" }, root)).toThrow(
      `'packRoot' names "/elsewhere", but this server serves the workspace ${root}`,
    );
  });
});
