// The docs stand alone: no pointers to files outside the repository, and every
// relative link in README.md and docs/ leads to a file that exists.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

for (const file of DOCS) {
  test(`${file} refers to nothing outside the repository`, () => {
    const text = readFileSync(join(ROOT, file), "utf8");
    expect(text).not.toMatch(/SPEC\.md|SPEC §|\.\.\/shared|\/work\/shared|§/);
    for (const m of text.matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)) {
      expect(existsSync(join(ROOT, dirname(file), m[1] as string)), `${file} links to ${m[1]}`).toBe(true);
    }
  });
}
