// Node's slower built-in modules cost about a millisecond each to load in a
// compiled binary (node:fs/promises brings node:events, node:child_process
// brings streams). The modules that `grex ls` and `grex status` load must not
// import them at the top: they are loaded where used. This follows static
// imports from each command's modules (the dynamic imports those commands
// take on their usual path are listed as entries) and names any offender.
// Likewise, status's setup-drift check must not build the actions' argument
// schemas: it needs their checks (actions/checks.ts), not valibot.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");
const SLOW = ["node:fs/promises", "node:child_process", "node:url", "node:events", "node:stream", "node:crypto", "node:http", "node:https", "node:net", "node:zlib", "node:readline", "node:worker_threads"];

/** The static (value) imports of a module: relative ones resolved, built-ins and packages by name. */
function importsOf(file: string): { local: string[]; builtins: string[] } {
  const text = readFileSync(file, "utf8");
  const local: string[] = [];
  const builtins: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\b)([^;]*?)\s*from\s*"([^"]+)"|^import\s+"([^"]+)"/gm)) {
    const spec = (m[2] ?? m[3]) as string;
    const what = m[1] ?? "";
    if (spec.startsWith(".")) local.push(resolve(dirname(file), spec));
    else builtins.push(spec === "node:fs" && /\bpromises\b/.test(what) ? "node:fs/promises" : spec);
  }
  return { local, builtins };
}

function importersOf(entries: string[], slow: (spec: string) => boolean): string[] {
  const seen = new Set<string>();
  const found: string[] = [];
  const todo = entries.map((e) => join(SRC, e));
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const { local, builtins } = importsOf(file);
    for (const b of builtins) if (slow(b)) found.push(`${file.slice(SRC.length + 1)} imports ${b}`);
    todo.push(...local);
  }
  return found.sort();
}

const slowBuiltinsFrom = (entries: string[]) => importersOf(entries, (spec) => SLOW.includes(spec));

const COMMON = ["cli/main.ts", "cli/run.ts"];
describe("slow built-ins stay off the hot paths", () => {
  test("grex ls", () => {
    expect(slowBuiltinsFrom([...COMMON, "verbs/ls.ts"])).toEqual([]);
  });
  test("grex serve, until it answers initialize", () => {
    expect(slowBuiltinsFrom(["cli/main.ts", "mcp/serve-argv.ts"])).toEqual([]);
  });
  test("grex status (its dirty check and setup-drift check included)", () => {
    expect(slowBuiltinsFrom([...COMMON, "verbs/status.ts", "core/sync/pack-status.ts", "core/git/inspect.ts", "core/workspace/pack-state.ts", "core/actions/drift.ts", "core/git/worktree/worktree-list.ts"])).toEqual([]);
  });
  test("grex status's setup-drift check builds no action schema", () => {
    expect(importersOf(["core/actions/drift.ts"], (spec) => spec === "valibot")).toEqual([]);
  });
});
