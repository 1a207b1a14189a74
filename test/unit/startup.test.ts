// The startup path must not pay for modules it does not use (SPEC §11).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PROBE = join(import.meta.dir, "..", "helpers", "module-probe.ts");
const HEAVY = ["@modelcontextprotocol", "isomorphic-git", "yaml", "zod", "@valibot"];

function probe(args: string[], cwd: string): { modules: string[]; streams: string[] } {
  const r = Bun.spawnSync([process.execPath, PROBE, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines = r.stderr.toString().trim().split("\n");
  const streams = lines.findLast((l) => l.startsWith("streams "))?.slice("streams ".length) ?? "null";
  return { modules: JSON.parse(lines.at(-1) ?? "[]") as string[], streams: JSON.parse(streams) as string[] };
}
const loadedBy = (args: string[], cwd: string): string[] => probe(args, cwd).modules;

describe("lazy loading", () => {
  const ws = mkdtempSync(join(tmpdir(), "grex-startup-"));
  afterAll(() => rmSync(ws, { recursive: true, force: true }));
  writeFileSync(
    join(ws, "grex.jsonl"),
    `${JSON.stringify({ op: "add", ts: "2026-01-01T00:00:00Z", id: "a", schema_version: "1", url: "https://example.invalid/a.git", path: "a", type: "meta", ref: null })}\n`,
  );

  test("grex --version loads no package at all", () => {
    expect(loadedBy(["main", "--version"], ws)).toEqual([]);
  });

  for (const args of [["ls", "--json"], ["--help"], ["ls", "--long"]]) {
    test(`grex ${args.join(" ")} loads none of the heavy modules`, () => {
      const loaded = loadedBy(["cli", ...args], ws);
      expect(loaded.length).toBeGreaterThan(0); // the probe really sees modules
      for (const heavy of HEAVY) expect(loaded.filter((m) => m.startsWith(heavy))).toEqual([]);
    });
  }

  // Node's process.stdout/stderr/stdin cost ~10 ms to build in a compiled binary: these paths write and read natively.
  for (const args of [["--version"], ["--help"], ["ls", "--json"], ["status", "--json"], ["serve"], ["no-such-verb"]]) {
    test(`grex ${args.join(" ")} never touches process.stdout/stderr/stdin`, () => {
      expect(probe(["main", ...args], ws).streams).toEqual([]);
    });
  }

  test("the probe does see a heavy module when a verb needs it (doctor reads a pack.yaml)", () => {
    mkdirSync(join(ws, "a", ".grex"), { recursive: true });
    writeFileSync(join(ws, "a", ".grex", "pack.yaml"), 'schema_version: "1"\nname: a\ntype: meta\n');
    Bun.spawnSync(["git", "init", "-q"], { cwd: join(ws, "a") });
    const loaded = loadedBy(["cli", "doctor"], ws);
    expect(loaded).toContain("yaml");
  });
});
