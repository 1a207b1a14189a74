// Imports point downwards only — cli → mcp → verbs → core, and inside core
// from room to room as ROOM_MAY_IMPORT says — no two folders import each
// other, and no file imports itself around a loop. This parses every import
// in src/ (type-only and dynamic ones included) so it stays true.
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

/**
 * The rooms of src/core and which other rooms each may import (docs/architecture.md
 * says what each owns). A room is a folder under core/, or under core/git/ for git's.
 */
const ROOM_MAY_IMPORT: Record<string, readonly string[]> = {
  "core/base": [],
  "core/fs": ["core/base"],
  "core/locks": ["core/base", "core/fs"],
  "core/workspace": ["core/base", "core/fs", "core/locks"],
  "core/git/layout": ["core/base", "core/fs", "core/locks"],
  "core/git/objects": ["core/base", "core/fs", "core/git/layout"],
  "core/git/refs": ["core/base", "core/fs", "core/git/layout", "core/git/objects"],
  "core/git/transport": ["core/base", "core/fs", "core/git/layout", "core/git/objects", "core/git/refs"],
  "core/git/worktree": ["core/base", "core/fs", "core/git/layout", "core/git/objects", "core/git/refs", "core/git/transport"],
  "core/git": ["core/base", "core/fs", "core/git/layout", "core/git/objects", "core/git/refs", "core/git/transport", "core/git/worktree"],
  "core/actions": ["core/base", "core/fs"],
  "core/pack": ["core/base", "core/fs", "core/actions", "core/workspace"],
  "core/packtypes": ["core/base", "core/fs", "core/locks", "core/actions", "core/pack", "core/workspace"],
  "core/compat": ["core/base", "core/fs", "core/locks", "core/workspace"],
  "core/sync": [
    "core/base", "core/fs", "core/locks", "core/workspace", "core/git", "core/git/layout", "core/git/objects", "core/git/refs",
    "core/git/transport", "core/git/worktree", "core/actions", "core/pack", "core/packtypes",
  ],
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

/** The room of a file under core/ ("core" for a file loose in core/ itself), else null. */
export function roomOf(file: string): string | null {
  const parts = file.split("/");
  if (parts[0] !== "core") return null;
  if (parts.length === 2) return "core";
  if (parts[1] === "git" && parts.length > 3) return `core/git/${parts[2]}`;
  return `core/${parts[1]}`;
}

/** Imports between core rooms that ROOM_MAY_IMPORT does not allow, and files in no known room. */
export function wrongRoom(edges: readonly Edge[]): string[] {
  const out = new Set<string>();
  for (const e of edges) {
    const from = roomOf(e.from);
    const to = roomOf(e.to);
    if (from === null) continue;
    const allowed = ROOM_MAY_IMPORT[from];
    if (allowed === undefined) out.add(`${e.from} is in no known room of core/ (put it in one, see docs/architecture.md)`);
    else if (to !== null && to !== from && !allowed.includes(to)) out.add(`${e.from} imports ${e.to} (${from} may import only: ${allowed.join(", ") || "nothing"})`);
  }
  return [...out];
}

/** Where git's files live is decided in one room (docs/architecture.md, "Where each rule lives"). */
const LAYOUT_ROOM = "core/git/layout/";

/**
 * A path built off a git directory by hand: `join(gitdir, …)` (any name
 * holding "gitdir", or `gd`), `join(dir, ".git", "info", …)`, a
 * `${gitdir}/…` template, or a literal `.git/objects` and the like. Each is
 * wrong somewhere: a `.git` file, a linked worktree's common directory.
 */
const GIT_PATH_BY_HAND: readonly RegExp[] = [
  /\b(?:join|resolve)\(\s*(?:[\w$]+\.)*(?:\w*[gG]it[dD]ir\w*|gd|commonDir)\s*,/,
  /["'`]\.git["'`]\s*,\s*["'`]/,
  /\$\{\s*(?:[\w$]+\.)*\w*[gG]it[dD]ir\w*\s*\}\//,
  /\.git\/(?:objects|config|info|shallow|index|HEAD|refs|packed-refs|logs|modules|hooks|commondir)\b/,
  // a name only a git directory holds, joined off anything (the directory it was joined off came from somewhere else)
  /\bjoin\([^)]*["'`](?:packed-refs|shallow|commondir|config\.worktree|ORIG_HEAD|FETCH_HEAD|index\.lock)["'`]/,
  // a git directory taken to be `<dir>/.git` (a resolver or its fallback): wrong when `.git` is a file
  /(?:[gG]it[dD]ir\w*\s*=|\?\?)\s*(?:join\([^)]*["'`]\.git["'`]\s*\)|`[^`]*\/\.git`)/,
];

/** Lines of `text` (comments blanked) that build a git path by hand, as "line: code". */
export function gitPathsByHand(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  const out: string[] = [];
  code.split("\n").forEach((line, i) => {
    if (GIT_PATH_BY_HAND.some((re) => re.test(line))) out.push(`${i + 1}: ${line.trim()}`);
  });
  return out;
}

/** Strongly connected components with more than one node, each sorted. */
function components(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
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

/** File-level import cycles, each printed as one loop "a → b → … → a" through its component. */
export function fileCycles(edges: readonly Edge[]): string[] {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    if (!graph.has(e.from)) graph.set(e.from, new Set());
    if (!graph.has(e.to)) graph.set(e.to, new Set());
    if (e.from !== e.to) graph.get(e.from)?.add(e.to);
  }
  return components(graph).map((scc) => {
    // Shortest way back to the first file, staying inside the component.
    const inside = new Set(scc);
    const start = scc[0] as string;
    const prev = new Map<string, string>();
    const queue = [start];
    let last: string | undefined;
    while (queue.length > 0 && last === undefined) {
      const v = queue.shift() as string;
      for (const w of graph.get(v) ?? []) {
        if (!inside.has(w)) continue;
        if (w === start) {
          last = v;
          break;
        }
        if (!prev.has(w)) {
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    const loop = [start];
    for (let v = last; v !== undefined && v !== start; v = prev.get(v)) loop.splice(1, 0, v);
    return `${[...loop, start].join(" → ")}${scc.length > loop.length ? ` (and ${scc.length - loop.length} more files in the same knot: ${scc.filter((f) => !loop.includes(f)).join(", ")})` : ""}`;
  });
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
  return components(graph);
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

  test("flags a file cycle, printed as a loop, even inside one folder", () => {
    const edges = [
      { from: "core/git/a.ts", to: "core/git/b.ts" },
      { from: "core/git/b.ts", to: "core/git/c.ts" },
      { from: "core/git/c.ts", to: "core/git/a.ts" },
      { from: "core/git/c.ts", to: "core/git/d.ts" },
      { from: "cli/x.ts", to: "cli/y.ts" },
    ];
    expect(fileCycles(edges)).toEqual(["core/git/a.ts → core/git/b.ts → core/git/c.ts → core/git/a.ts"]);
    expect(fileCycles(edges.slice(0, 2))).toEqual([]);
  });

  test("flags a git path built off a git directory by hand, and nothing else", () => {
    const bad = [
      'const o = join(gitdir, "objects");',
      'readFileSync(join(srcGitdir, "shallow"))',
      'existsSync(join(o.gitdir, "info", "exclude"))',
      'join(gd, "index")',
      'resolve(plan.gitdir, "config")',
      'updateIgnoreFile(join(parent.dir, ".git", "info", "exclude"), id, null);',
      'fs.existsSync(`${gitdir}/shallow`)',
      'const p = `${dir}/.git/info/exclude`;',
      'const gitdir = join(dir, ".git");',
      'hash(dir, gitdirOf(dir) ?? `${dir}/.git`, rel)',
      'const packedPath = join(store, "packed-refs");',
    ];
    for (const line of bad) expect(gitPathsByHand(line)).toEqual([`1: ${line}`]);
    const fine = [
      'const dotgit = join(dir, ".git");',
      'join(objects, "info", "alternates")',
      'join(dir, rel)',
      '// join(gitdir, "objects") in a comment',
      'const p = gitPath(repo, "info/exclude");',
    ];
    for (const line of fine) expect(gitPathsByHand(line)).toEqual([]);
  });

  test("flags an import against the room order, and a file in no room", () => {
    const edges = [
      { from: "core/base/errors.ts", to: "core/fs/fsutil.ts" },
      { from: "core/fs/fsutil.ts", to: "core/base/errors.ts" },
      { from: "core/git/objects/pack-index.ts", to: "core/git/transport/url.ts" },
      { from: "core/git/backend.ts", to: "core/git/refs/refs.ts" },
      { from: "core/loose.ts", to: "core/base/errors.ts" },
    ];
    expect(wrongRoom(edges)).toEqual([
      "core/base/errors.ts imports core/fs/fsutil.ts (core/base may import only: nothing)",
      "core/git/objects/pack-index.ts imports core/git/transport/url.ts (core/git/objects may import only: core/base, core/fs, core/git/layout)",
      "core/loose.ts is in no known room of core/ (put it in one, see docs/architecture.md)",
    ]);
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

  test("no file imports itself around a loop", () => {
    expect(fileCycles(edges)).toEqual([]);
  });

  test("core's rooms import only the rooms below them", () => {
    expect(wrongRoom(edges)).toEqual([]);
  });

  test("no git path is built off a git directory outside the layout room (core/git/layout/)", () => {
    const found = sourceFiles(SRC)
      .filter((f) => !relative(SRC, f).startsWith(LAYOUT_ROOM))
      .flatMap((f) => gitPathsByHand(readFileSync(f, "utf8")).map((l) => `${relative(SRC, f)}:${l}`));
    expect(found).toEqual([]);
  });

  test("no source file is over 450 lines (split it by what each part owns)", () => {
    const long = sourceFiles(SRC)
      .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > 450);
    expect(long).toEqual([]);
  });
});
