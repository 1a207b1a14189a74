// The submodule budget of one add or sync: count, bytes and wall time, each
// from its GREX_MAX_* variable, each failing with one sentence naming it.
import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { budgetFor, fileProtocolAllowed, SubmoduleBudget } from "../../src/core/git/submodule-budget.ts";

test("defaults, and each limit fires with its variable named", async () => {
  expect(new SubmoduleBudget({}).max).toEqual({ count: 500, bytes: 4 * 1024 ** 3, seconds: 600 });

  const count = new SubmoduleBudget({ GREX_MAX_SUBMODULES: "2" });
  count.take("p");
  count.take("p");
  expect(() => count.take("p: submodule 'x'")).toThrow(/^p: submodule 'x': one more submodule would pass the limit of 2 .*\(GREX_MAX_SUBMODULES\); nothing further was cloned — set GREX_MAX_SUBMODULES higher/);

  const time = new SubmoduleBudget({ GREX_MAX_SUBMODULE_TIME: "0" });
  await Bun.sleep(5);
  expect(() => time.take("p")).toThrow(/past the limit of 0 s per add or sync \(GREX_MAX_SUBMODULE_TIME\)/);

  const dir = mkdtempSync(join(tmpdir(), "grex-budget-"));
  try {
    mkdirSync(join(dir, ".git", "objects", "ab"), { recursive: true });
    writeFileSync(join(dir, ".git", "objects", "ab", "cd"), Buffer.alloc(3000));
    const bytes = new SubmoduleBudget({ GREX_MAX_SUBMODULE_BYTES: "2k" });
    expect(() => bytes.spent("p", dir)).toThrow(/brought 2\.9 KiB, past the limit of 2 KiB per add or sync \(GREX_MAX_SUBMODULE_BYTES\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  expect(() => new SubmoduleBudget({ GREX_MAX_SUBMODULES: "many" })).toThrow(/GREX_MAX_SUBMODULES=many is not a valid count/);
});

test("one budget per call (its signal), shared by every step of it", () => {
  const a = new AbortController().signal;
  const b = new AbortController().signal;
  expect(budgetFor(a, {})).toBe(budgetFor(a, {}));
  expect(budgetFor(a, {})).not.toBe(budgetFor(b, {}));
});

test("the file transport for submodules: only the user's own protocol.file.allow=always (or protocol.allow) opens it", () => {
  const dir = mkdtempSync(join(tmpdir(), "grex-proto-"));
  try {
    const cfg = join(dir, "config");
    const env = { GIT_CONFIG_GLOBAL: cfg, GIT_CONFIG_NOSYSTEM: "1" };
    expect(fileProtocolAllowed(env)).toBe(false);
    for (const [text, allowed] of [
      ['[protocol "file"]\n\tallow = user\n', false],
      ['[protocol "file"]\n\tallow = never\n', false],
      ['[protocol "file"]\n\tallow = always\n', true],
      ["[protocol]\n\tallow = always\n", true],
      ['[protocol]\n\tallow = always\n[protocol "file"]\n\tallow = user\n', false],
    ] as const) {
      writeFileSync(cfg, text);
      expect([text, fileProtocolAllowed(env)]).toEqual([text, allowed]);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
