// schema/pack.schema.json: generated from the valibot schemas, committed, and
// in step with the code. A real JSON Schema validator (ajv) accepts every
// fixture pack.yaml and the docs' examples, and rejects what grex rejects.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { parse } from "yaml";
import { PACK_SCHEMA_PATH, PACK_SCHEMA_URL, packJsonSchemaText } from "../../src/core/pack/json-schema.ts";
import { validatePack } from "../../src/core/pack/schema.ts";
import { FIXTURES } from "../helpers/workspace.ts";

const ROOT = join(import.meta.dir, "..", "..");
const committed = readFileSync(join(ROOT, PACK_SCHEMA_PATH), "utf8");
const validate = new Ajv({ allErrors: true }).compile(JSON.parse(committed));

/** Whether grex itself accepts the document (schema and every action's args). */
async function grexAccepts(doc: unknown): Promise<boolean> {
  try {
    const m = validatePack(doc, "pack.yaml");
    const { parseActionItem } = await import("../../src/core/actions/index.ts");
    [...m.actions, ...(m.teardown ?? [])].forEach((a, i) => parseActionItem(a, `actions[${i}]`));
    return true;
  } catch {
    return false;
  }
}

/** ```yaml blocks holding a whole pack.yaml (they have schema_version). */
function yamlBlocks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string).filter((b) => b.includes("schema_version"));
}

describe("pack.yaml JSON Schema", () => {
  test(`${PACK_SCHEMA_PATH} is what the code generates (run \`npm run pack-schema\` after a schema change)`, () => {
    expect(committed).toBe(packJsonSchemaText());
  });

  // Every fixture pack.yaml at any depth; those grex accepts, the schema accepts too
  // (fixtures that exist to be rejected, such as rust-compat/psversion-bad, are
  // covered by the hand-written bad documents below and by their own tests).
  const fixtures = readdirSync(FIXTURES, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(join(".grex", "pack.yaml")))
    .map((f) => join(FIXTURES, f))
    .sort();
  test("finds the fixture packs", () => expect(fixtures.length).toBeGreaterThanOrEqual(10));
  for (const file of fixtures) {
    test(`accepts fixture ${file.slice(FIXTURES.length + 1)} when grex does`, async () => {
      const doc = parse(readFileSync(file, "utf8"));
      if (!(await grexAccepts(doc))) return;
      expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    });
  }

  test("accepts every pack.yaml example in README.md and docs/pack-yaml.md", async () => {
    const blocks = [...yamlBlocks("README.md"), ...yamlBlocks("docs/pack-yaml.md")];
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const block of blocks) {
      const doc = parse(block);
      expect(await grexAccepts(doc), block).toBe(true);
      expect(validate(doc), `${block}\n${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  test("the README's example points editors at the schema", () => {
    expect(yamlBlocks("README.md")[0]?.startsWith(`# yaml-language-server: $schema=${PACK_SCHEMA_URL}\n`)).toBe(true);
  });

  const head = 'schema_version: "1"\nname: p\ntype: declarative\n';
  const bad: Record<string, string> = {
    "schema_version as a number": "schema_version: 1\nname: p\ntype: meta\n",
    "missing name": 'schema_version: "1"\ntype: meta\n',
    "an upper-case name": 'schema_version: "1"\nname: P\ntype: meta\n',
    "an unknown pack type": 'schema_version: "1"\nname: p\ntype: fancy\n',
    "an unknown top-level key": `${head}colour: blue\n`,
    "an unknown action": `${head}actions:\n  - symlnk: { src: a, dst: b }\n`,
    "two actions in one item": `${head}actions:\n  - mkdir: { path: a }\n    rmdir: { path: b }\n`,
    "a symlink without dst": `${head}actions:\n  - symlink: { src: a }\n`,
    "an unknown symlink field": `${head}actions:\n  - symlink: { src: a, dst: b, mode: 1 }\n`,
    "an env scope that does not exist": `${head}actions:\n  - env: { name: A, value: b, scope: galaxy }\n`,
    "a when without actions": `${head}actions:\n  - when: { os: linux }\n`,
    "a bad action nested in when": `${head}actions:\n  - when: { os: linux, actions: [ { mkdir: { dir: a } } ] }\n`,
    "a condition with two keys": `${head}actions:\n  - require: { all_of: [ { os: linux, symlink_ok: true } ] }\n`,
    "a child path with a slash": 'schema_version: "1"\nname: p\ntype: meta\nchildren:\n  - url: https://x.invalid/a.git\n    path: a/b\n',
    "a child without url": 'schema_version: "1"\nname: p\ntype: meta\nchildren:\n  - path: a\n',
  };
  for (const [what, text] of Object.entries(bad)) {
    test(`rejects ${what} (as grex does)`, async () => {
      const doc = parse(text);
      expect(await grexAccepts(doc)).toBe(false);
      expect(validate(doc)).toBe(false);
    });
  }

  test("accepts x- extensions, as grex does", async () => {
    const doc = parse(`${head}x-owner: me\n`);
    expect(await grexAccepts(doc)).toBe(true);
    expect(validate(doc)).toBe(true);
  });
});
