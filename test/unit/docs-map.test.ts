// docs/architecture.md's "Where each rule lives" is a map: every row is a
// table row (nothing else rendered inside the table), and every src/ or test/
// path it names exists. Paths are written relative to src/ (`core/base/naming.ts`)
// or from the repository root (`test/unit/layering.test.ts`).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..", "..");
const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");

/** The lines of a `## title` section, up to the next heading of that level or higher. */
function section(text: string, title: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.trim() === `## ${title}`);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && /^#{1,2} /.test(l));
  return lines.slice(start + 1, end < 0 ? lines.length : end);
}

/** Backticked names in `text` that look like a file or folder of the repository (a `/`, or a known extension). */
export function namedPaths(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+)`/g)]
    .map((m) => m[1] as string)
    .filter((p) => /^[\w.-]+(\/[\w.-]+)*\/?$/.test(p) && (p.includes("/") || /\.(ts|md|cjs|json)$/.test(p)) && !p.startsWith("."));
}

/** Where a named path lives: from the root when it starts with a top-level folder, else under src/. */
function located(p: string): string {
  return /^(src|test|docs|bench|scripts|npm)\//.test(p) ? join(ROOT, p) : join(ROOT, "src", p);
}

const rows = section(doc, "Where each rule lives");

describe("docs/architecture.md: where each rule lives", () => {
  test("the section is one table: a header, then rows only (no paragraph rendered inside it)", () => {
    const body = rows.filter((l) => l.trim() !== "");
    expect(body.length).toBeGreaterThan(10);
    const notRows = body.filter((l) => !(l.startsWith("|") && l.trimEnd().endsWith("|")));
    expect(notRows).toEqual([]);
    // A row has the table's two cells.
    for (const l of body) expect({ l, cells: l.split(/(?<!\\)\|/).length - 2 }).toEqual({ l, cells: 2 });
  });

  test("every path it names exists", () => {
    const paths = rows.flatMap((l) => namedPaths(l));
    expect(paths.length).toBeGreaterThan(10);
    const missing = paths.filter((p) => !existsSync(located(p)));
    expect(missing).toEqual([]);
  });

  test("the check can fail: a made-up path is reported missing, and prose names are not taken for paths", () => {
    expect(namedPaths("| x | `core/base/no-such-file.ts` and `mcp/http.ts` `grex.jsonl` `--json` `a b` |")).toEqual(["core/base/no-such-file.ts", "mcp/http.ts"]);
    expect(existsSync(located("core/base/no-such-file.ts"))).toBe(false);
    expect(existsSync(located("mcp/http.ts"))).toBe(true);
    expect(existsSync(located("test/unit/layering.test.ts"))).toBe(true);
  });
});

describe("docs/benchmarks.md: current numbers first, then the history in date order", () => {
  const bench = readFileSync(join(ROOT, "docs", "benchmarks.md"), "utf8");

  test("the first section is the current numbers: one row, with date and machine, per benchmark script in bench/", () => {
    expect(bench.split("\n").find((l) => l.startsWith("## "))).toBe("## Current numbers");
    const rows = section(bench, "Current numbers").filter((l) => l.startsWith("| `bench/"));
    const named = rows.map((l) => /^\| `(bench\/[\w-]+\.ts)`/.exec(l)?.[1]);
    const scripts = readdirSync(join(ROOT, "bench")).filter((n) => n.endsWith(".ts")).map((n) => `bench/${n}`);
    expect([...named].sort()).toEqual(scripts.sort());
    for (const l of rows) expect({ l, dated: /\| \d{4}-\d{2}-\d{2} \| [^|]+ \|$/.test(l.trimEnd()) }).toEqual({ l, dated: true });
  });

  test("the history's sections follow each other in date order", () => {
    const dates = section(bench, "History")
      .filter((l) => l.startsWith("### "))
      .map((l) => /(\d{4}-\d{2}-\d{2})/.exec(l)?.[1] ?? "no date");
    expect(dates.length).toBeGreaterThan(5);
    expect(dates).toEqual([...dates].sort());
  });
});
