// Where the shared object cache is: GREX_OBJECT_CACHE, else the workspace's
// .grex/object-cache (first line that is not blank or a comment; `~/` is HOME,
// a relative path is taken from the workspace); `off` turns it off.
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { currentObjectCache, objectCacheSetting, withObjectCache } from "../../src/core/git/object-cache-setting.ts";

const root = mkdtempSync(join(tmpdir(), "grex-cache-setting-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("the environment wins, the file follows, `off` and nothing mean no cache", () => {
  const home = "/home/someone";
  expect(objectCacheSetting(root, { HOME: home })).toBeNull();
  mkdirSync(join(root, ".grex"));
  writeFileSync(join(root, ".grex", "object-cache"), "\n# the team's cache\n  ~/.cache/grex/objects  \nignored\n");
  expect(objectCacheSetting(root, { HOME: home })).toBe("/home/someone/.cache/grex/objects");
  writeFileSync(join(root, ".grex", "object-cache"), "../shared\n");
  expect(objectCacheSetting(root, { HOME: home })).toBe(resolve(root, "..", "shared"));
  expect(objectCacheSetting(root, { HOME: home, GREX_OBJECT_CACHE: "/var/cache/grex" })).toBe("/var/cache/grex");
  expect(objectCacheSetting(root, { HOME: home, GREX_OBJECT_CACHE: "off" })).toBeNull();
  expect(objectCacheSetting(root, { HOME: home, GREX_OBJECT_CACHE: "  " })).toBe(resolve(root, "..", "shared"));
  expect(objectCacheSetting(null, { HOME: home })).toBeNull();
});

test("a call sees the cache its invoke set up, not another call's", async () => {
  const seen = await Promise.all([
    withObjectCache("/a", async () => {
      await Bun.sleep(5);
      return currentObjectCache();
    }),
    withObjectCache(null, async () => {
      await Bun.sleep(1);
      return currentObjectCache();
    }),
  ]);
  expect(seen).toEqual(["/a", null]);
});
