// The `grex serve` argv fast path declines everything but the plain stdio form,
// so the CLI adapter handles (and reports) the rest.
import { describe, expect, test } from "bun:test";
import { serveFromArgv, serverLocation } from "../../src/mcp/serve-verb.ts";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

describe("serveFromArgv", () => {
  test("declines other verbs, --http, --help, unknown flags and bad values without touching stdio", async () => {
    const env = { GREX_PARALLEL: "2" };
    for (const argv of [
      ["ls"],
      ["--manifest", "x", "serve"],
      ["serve", "--http"],
      ["serve", "--http", "127.0.0.1:9"],
      ["serve", "--token", "t"],
      ["serve", "--help"],
      ["serve", "--bogus"],
      ["serve", "extra"],
      ["serve", "--manifest"],
      ["serve", "--manifest", "--json"],
      ["serve", "--parallel", "x"],
      ["serve", "--parallel=-1"],
      ["serve", "--json=1"],
    ]) {
      expect(await serveFromArgv(argv, "/", env)).toBeUndefined();
    }
    expect(await serveFromArgv(["serve"], "/", { GREX_PARALLEL: "lots" })).toBeUndefined();
  });
});

describe("serverLocation", () => {
  test("the nearest workspace at or above cwd, else cwd; --manifest is made absolute", () => {
    const root = mkdtempSync(join(tmpdir(), "grex-mcp-location-"));
    try {
      const ws = join(root, "ws");
      mkdirSync(join(ws, "a", "b"), { recursive: true });
      writeFileSync(join(ws, "grex.jsonl"), "");
      expect(serverLocation(join(ws, "a", "b"), undefined)).toEqual({ cwd: ws, manifest: undefined });
      expect(serverLocation(root, undefined)).toEqual({ cwd: root, manifest: undefined });
      expect(serverLocation(root, "ws/grex.jsonl")).toEqual({ cwd: root, manifest: join(ws, "grex.jsonl") });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
