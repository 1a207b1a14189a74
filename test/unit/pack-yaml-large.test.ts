// A pack.yaml just under the 1 MiB cap parses in linear time. The yaml
// library's own unique-key check is quadratic (tens of thousands of keys took
// minutes); with it, this test would hit the test timeout.
import { expect, test } from "bun:test";
import { MAX_PACK_YAML_BYTES, parsePackYamlText } from "../../src/core/pack/load.ts";

function bigDoc(extraDuplicate: boolean): { text: string; keys: number } {
  const parts = ['schema_version: "1"\nname: big\ntype: declarative\n'];
  let size = parts[0]!.length;
  let keys = 0;
  for (;;) {
    const line = `x-k${keys}: ${keys}\n`;
    if (size + line.length > MAX_PACK_YAML_BYTES - 64) break;
    parts.push(line);
    size += line.length;
    keys++;
  }
  if (extraDuplicate) parts.push("x-k7: again\n");
  return { text: parts.join(""), keys };
}

test("a pack.yaml of ~70,000 keys under the size cap parses (linear duplicate-key check)", async () => {
  const { text, keys } = bigDoc(false);
  expect(keys).toBeGreaterThan(60_000);
  const doc = (await parsePackYamlText(text, "big/.grex/pack.yaml")) as Record<string, unknown>;
  expect(Object.keys(doc).length).toBe(keys + 3);
  expect(doc[`x-k${keys - 1}`]).toBe(keys - 1);
});

test("a duplicate key at the end of a huge mapping is still refused with its line", async () => {
  const { text, keys } = bigDoc(true);
  const err = await parsePackYamlText(text, "big/.grex/pack.yaml").then(
    () => null,
    (e: Error) => e,
  );
  expect(err?.message).toContain(`line ${keys + 4} is not valid YAML (Map keys must be unique`);
  expect(err?.message).toContain("'x-k7'");
});

test("nesting deeper than the cap is refused before conversion", async () => {
  const deep = `schema_version: "1"\nname: d\ntype: declarative\nx-deep: ${"[".repeat(200)}${"]".repeat(200)}\n`;
  await expect(parsePackYamlText(deep, "d/.grex/pack.yaml")).rejects.toThrow(/nests deeper than 64 levels/);
});
