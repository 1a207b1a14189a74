// `npm run demo` (and `npm run release`, which runs it with the binary) leaves
// no grex-demo-* directory behind, whether the demo succeeds or fails.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

setDefaultTimeout(60_000);
const DEMO = join(import.meta.dir, "..", "..", "scripts", "demo.ts");

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "grex-democlean-"));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

function demo(env: Record<string, string> = {}) {
  return Bun.spawnSync([process.execPath, DEMO], { env: { ...process.env, TMPDIR: tmp, ...env }, stdout: "pipe", stderr: "pipe" });
}

test("a demo that succeeds removes its temp directory", () => {
  const r = demo();
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString()).toContain("removed after the demo");
  expect(readdirSync(tmp)).toEqual([]);
});

test("a demo that fails (a grex that exits 1) removes it too", () => {
  const r = demo({ GREX_BIN: "/bin/false" });
  expect(r.exitCode).toBe(1);
  expect(readdirSync(tmp)).toEqual([]);
});
