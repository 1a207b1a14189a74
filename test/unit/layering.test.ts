// Imports point downwards only — cli → mcp → verbs → core — and no two
// folders import each other, directly or around a loop. This parses every
// import in src/ (type-only and dynamic ones included) so it stays true.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "..", "..", "src");

/** Which top-level folders each may import (besides itself). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  core: [],
  verbs: ["core"],
  mcp: ["verbs", "core"],
  cli: ["mcp", "verbs", "core"],
};

interface Edge {
  from: string; // file, relative to src
  to: string; // file, relative to src
}

const IMPORT_RE = /(?:^|[\n;])\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']|(?:^|[\n;])\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

export function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  return [...code.matchAll(IMPORT_RE)].map((m) => (m[1] ?? m[2] ?? m[3]) as string);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

function edgesOf(root: string): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(root)) {
    for (const spec of importsOf(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue; // packages and node: builtins
      const target = relative(root, resolve(dirname(file), spec));
      if (target.startsWith("..")) continue; // package.json and the like, outside src
      edges.push({ from: relative(root, file), to: target });
    }
  }
  return edges;
}

const top = (file: string) => file.split("/")[0] as string;

export function wrongDirection(edges: readonly Edge[]): string[] {
  return edges
    .filter((e) => top(e.from) !== top(e.to) && !(MAY_IMPORT[top(e.from)] ?? []).includes(top(e.to)))
    .map((e) => `${e.from} imports ${e.to}`);
}

/** Folder-level cycles (Tarjan's strongly connected components with more than one folder). */
export function folderCycles(edges: readonly Edge[]): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    const a = dirname(e.from);
    const b = dirname(e.to);
    if (!graph.has(a)) graph.set(a, new Set());
    if (!graph.has(b)) graph.set(b, new Set());
    if (a !== b) graph.get(a)?.add(b);
  }
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the checker itself", () => {
  test("reads static, type-only, re-export, side-effect and dynamic imports; skips comments", () => {
    const text = [
      'import { a } from "./a.ts";',
      'import type {\n  B,\n} from "../b/b.ts";',
      'export { c } from "./c.ts";',
      'import "./side.ts";',
      'const d = await import("../d.ts");',
      '// import { no } from "./commented.ts";',
      '/* import { no2 } from "./block.ts"; */',
    ].join("\n");
    expect(importsOf(text)).toEqual(["./a.ts", "../b/b.ts", "./c.ts", "./side.ts", "../d.ts"]);
  });

  test("flags an upward import and a folder cycle", () => {
    const edges = [
      { from: "core/sync/engine.ts", to: "verbs/types.ts" },
      { from: "core/packtypes/index.ts", to: "core/sync/tree.ts" },
      { from: "core/sync/engine.ts", to: "core/packtypes/index.ts" },
      { from: "verbs/add.ts", to: "core/locks/locks.ts" },
    ];
    expect(wrongDirection(edges)).toEqual(["core/sync/engine.ts imports verbs/types.ts"]);
    expect(folderCycles(edges)).toEqual([["core/packtypes", "core/sync"]]);
  });
});

describe("src/", () => {
  const edges = edgesOf(SRC);

  test("the parse sees the import graph", () => {
    expect(edges.length).toBeGreaterThan(100);
    expect(edges).toContainEqual({ from: "verbs/sync.ts", to: "core/sync/engine.ts" });
  });

  test("imports point downwards only: cli → mcp → verbs → core", () => {
    expect(wrongDirection(edges)).toEqual([]);
  });

  test("no folder imports itself around a loop", () => {
    expect(folderCycles(edges)).toEqual([]);
  });
});
