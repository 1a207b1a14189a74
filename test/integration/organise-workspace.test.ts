// Issue 37's workspace: 20 repositories side by side (3 dirty, 2 behind, 5
// tagged frontend, 4 under services/), and what `status` shows of it: the
// summary, --changed, a tag filter with a state term, two filters (a union),
// a mistyped tag (exit 2 with a suggestion) and a state filter that matches
// nothing (exit 0, one note on stderr).
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(120_000);

const FRONTEND = ["apps/admin", "apps/mobile", "apps/web", "docs-site", "ui-kit"];
const SERVICES = ["services/api", "services/auth", "services/billing", "services/search"];
const OTHERS = ["infra", "libs/core", "libs/utils", "libs/proto", "tools/lint", "tools/release", "dotfiles", "scripts", "data", "ops", "vendor/zlib"];
const ALL = [...FRONTEND, ...SERVICES, ...OTHERS];

let t: TestWorkspace;
const upstream = new Map<string, string>();

beforeAll(async () => {
  expect(ALL.length).toBe(20);
  t = new TestWorkspace("grex-organise-");
  expect((await t.grex("init")).code).toBe(0);
  const entries = ALL.map((path) => {
    const url = t.repo(path.replaceAll("/", "-"), { "README.md": `${path}\n`, "src/main.txt": "v1\n" });
    upstream.set(path, url);
    return { url, path };
  });
  writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify(entries));
  expect((await t.grex("import", "--from-repos-json", "REPOS.json")).code).toBe(0);
  expect((await t.grex("sync")).code).toBe(0);
  expect((await t.grex("update", ...FRONTEND, "--tag", "frontend")).code).toBe(0);
  // 3 dirty: a change, a staged file, untracked files.
  writeFileSync(join(t.ws, "apps/web/src/main.txt"), "local edit\n");
  writeFileSync(join(t.ws, "services/api/new.txt"), "staged\n");
  git(join(t.ws, "services/api"), "add", "new.txt");
  writeFileSync(join(t.ws, "libs/core/a.tmp"), "1\n");
  writeFileSync(join(t.ws, "libs/core/b.tmp"), "2\n");
  // 2 behind: upstream moved, fetched, not merged.
  for (const path of ["services/auth", "tools/lint"]) {
    t.commit(upstream.get(path) as string, { "src/main.txt": "v2\n" }, "upstream work");
    git(join(t.ws, path), "fetch", "-q", "origin");
  }
});
afterAll(() => t.cleanup());

test("status: every pack sorted by path, branch, behind and file counts where they are, and the summary line", async () => {
  const r = await t.grex("status", "--plain");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split("\n");
  expect(lines).toHaveLength(21);
  expect(lines.at(-1)).toBe("20 packs: 15 clean, 3 dirty, 2 behind");
  expect(lines.slice(0, -1).map((l) => l.split(/\s+/)[0])).toEqual([...ALL].sort());
  const row = (id: string) => lines.find((l) => l.startsWith(`${id} `))?.replace(/\s+/g, " ");
  expect(row("apps/web")).toBe("apps/web dirty main 1 unstaged #frontend");
  expect(row("services/api")).toBe("services/api dirty main 1 staged");
  expect(row("libs/core")).toBe("libs/core dirty main 2 untracked");
  expect(row("services/auth")).toBe("services/auth behind main -1");
  expect(row("docs-site")).toBe("docs-site clean main #frontend");
  process.stdout.write(`--- grex status (20 packs) ---\n${r.stdout}`);

  const json = (await t.grex("status", "--json")).json as { packs: Array<Record<string, unknown>>; summary: unknown };
  expect(json.summary).toEqual({ total: 20, states: { clean: 15, dirty: 3, behind: 2 } });
  expect(json.packs.find((p) => p.id === "libs/core")).toMatchObject({ drift: "dirty", branch: "main", staged: 0, unstaged: 0, untracked: 2, last_commit: null });
});

test("status --changed (and -q) lists the 5 packs that are not clean; the summary still counts all 20", async () => {
  const r = await t.grex("status", "--changed", "--plain");
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split("\n");
  expect(lines.slice(0, -1).map((l) => l.split(/\s+/)[0])).toEqual(["apps/web", "libs/core", "services/api", "services/auth", "tools/lint"]);
  expect(lines.at(-1)).toBe("20 packs: 15 clean, 3 dirty, 2 behind");
  expect((await t.grex("status", "-q", "--plain")).stdout).toBe(r.stdout);
});

test("status --filter 'tag=frontend,dirty': the one frontend pack that is dirty; --long adds its last commit", async () => {
  const r = await t.grex("status", "--filter", "tag=frontend,dirty", "--plain", "--long");
  expect(r.code).toBe(0);
  expect(r.stderr).toBe("");
  const [row, summary] = r.stdout.trimEnd().split("\n");
  const sha = git(join(t.ws, "apps/web"), "rev-parse", "--short=7", "HEAD");
  expect(row?.replace(/\s+/g, " ")).toMatch(new RegExp(`^apps/web dirty main 1 unstaged ${sha} (just now|\\d+ [a-z]+ ago) apps-web: initial #frontend$`));
  expect(summary).toBe("1 pack: 1 dirty");
});

test("two --filters select the union: services/* and the frontend tag", async () => {
  const r = await t.grex("status", "--filter", "services/*", "--filter", "tag=frontend", "--json");
  expect(r.code).toBe(0);
  expect((r.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual([...FRONTEND, ...SERVICES].sort());
  expect(r.json.summary).toEqual({ total: 9, states: { clean: 6, dirty: 2, behind: 1 } });
});

test("a mistyped tag is exit 2 with the closest tag; nothing is reported", async () => {
  const r = await t.grex("status", "--filter", "tag=frontnd");
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr).toBe("grex: No registered pack has tag 'frontnd' (--filter term 'tag=frontnd'). Did you mean 'frontend'?\n");
});

test("a state filter that matches nothing is an empty selection: exit 0, one note on stderr", async () => {
  const r = await t.grex("status", "--filter", "diverged");
  expect(r.code).toBe(0);
  expect(r.stdout).toBe("No registered pack matches the filter; run `grex status` without it to see them all.\n");
  expect(r.stderr.trimEnd().split("\n")).toEqual(["grex: warning: no pack matches 'diverged' now, so nothing is selected (--filter 'diverged')"]);
  // The same selection drives every verb: exec runs nowhere, ls lists nothing.
  expect((await t.grex("ls", "--filter", "tag=frontend,behind")).stdout).toBe("No registered pack matches the filter; run `grex ls` without it to see them all.\n");
  const exec = await t.grex("exec", "--filter", "behind", "--json", "--", "git", "rev-parse", "--abbrev-ref", "HEAD");
  expect((exec.json.results as Array<{ pack: string }>).map((x) => x.pack)).toEqual(["services/auth", "tools/lint"]);
});

test("sync selects with the same grammar: --filter behind brings exactly the 2 behind packs level (runs last: it changes the workspace)", async () => {
  const r = await t.grex("sync", "--filter", "behind", "--json");
  expect(r.code).toBe(0);
  expect((r.json.packs as Array<{ id: string; result: string }>).map((p) => [p.id, p.result]).sort()).toEqual([
    ["services/auth", "ok"],
    ["tools/lint", "ok"],
  ]);
  expect(((await t.grex("status", "--json")).json as { summary: unknown }).summary).toEqual({ total: 20, states: { clean: 17, dirty: 3 } });
});
