// Domain rules defined once (core/base/naming.ts, core/base/issues.ts, the depends_on
// resolver in core/sync/plan.ts): what they decide, and that the plan checks
// and the install order resolve depends_on the same way.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { firstIssue } from "../../src/core/base/issues.ts";
import { BARE_NAME_RE, PACK_PATH_RE, defaultPathFromUrl, isBareName, urlKey } from "../../src/core/base/naming.ts";
import { validatePack } from "../../src/core/pack/schema.ts";
import { dependencyResolver, installOrder, type KnownPack } from "../../src/core/sync/plan.ts";
import { newNode, type TreeNode } from "../../src/core/sync/tree.ts";

describe("naming", () => {
  test("bare names and pack paths", () => {
    for (const ok of ["a", "A1", "x.y_z-1"]) expect(isBareName(ok)).toBe(true);
    for (const bad of [".", "..", ".hidden", "-x", "a/b", "", "a b"]) expect(isBareName(bad)).toBe(false);
    expect(BARE_NAME_RE.test("a/b")).toBe(false);
    expect(PACK_PATH_RE.test("a/b.c/d")).toBe(true);
    expect(PACK_PATH_RE.test("a//b")).toBe(false);
    expect(PACK_PATH_RE.test("/a")).toBe(false);
  });

  test("default path from a URL, scp-style address or local path", () => {
    expect(defaultPathFromUrl("https://host/org/repo.git")).toBe("repo");
    expect(defaultPathFromUrl("https://host/org/repo/")).toBe("repo");
    expect(defaultPathFromUrl("git@host:org/tools.git")).toBe("tools");
    expect(defaultPathFromUrl("git@host:tools")).toBe("tools");
    expect(defaultPathFromUrl("/srv/git/dots.git/")).toBe("dots");
  });

  test("two URLs name one repository regardless of a trailing slash or .git", () => {
    expect(urlKey("https://h/o/r.git")).toBe(urlKey("https://h/o/r/"));
    expect(urlKey("https://h/o/r")).not.toBe(urlKey("https://h/o/s"));
  });
});

describe("firstIssue", () => {
  test("names the field by its dotted path, drops the final period, says whether it is missing", () => {
    const schema = v.object({ a: v.object({ b: v.string("must be text.") }), c: v.number() });
    const bad = v.safeParse(schema, { a: { b: 1 }, c: 1 });
    if (bad.success) throw new Error("expected a failure");
    expect(firstIssue(bad.issues)).toEqual({ field: "a.b", message: "must be text", missing: false });
    const missing = v.safeParse(schema, { a: { b: "x" } });
    if (missing.success) throw new Error("expected a failure");
    expect(firstIssue(missing.issues)).toMatchObject({ field: "c", missing: true });
  });
});

describe("depends_on: one resolver", () => {
  const known: KnownPack[] = [
    { id: "tools", url: "https://h/o/tools.git", name: null },
    { id: "other", url: "https://h/o/other", name: "tools" }, // its pack.yaml name collides with an id
    { id: "lib", url: "https://h/o/lib", name: "library" },
  ];

  test("an entry names a pack by id first, then by name, then by URL", () => {
    const resolve = dependencyResolver(known);
    expect(resolve("tools")?.id).toBe("tools");
    expect(resolve("library")?.id).toBe("lib");
    expect(resolve("https://h/o/tools/")?.id).toBe("tools");
    expect(resolve("https://h/o/other.git")?.id).toBe("other");
    expect(resolve("nothing")).toBeUndefined();
  });

  test("install order follows the same pack the checks resolved, even when another synced pack carries that name", () => {
    const node = (id: string, name: string, deps: string[]): TreeNode => {
      const n = newNode({ id, path: id, dir: `/ws/${id}`, url: `https://h/o/${id}`, ref: null, recordedType: "declarative", depth: 0, parent: null });
      n.manifest = validatePack({ schema_version: "1", name, type: "declarative", depends_on: deps }, `${id}/.grex/pack.yaml`);
      return n;
    };
    // "tools" (the id) is not part of this run; "other", named tools, is. app depends on "tools".
    const app = node("app", "app", ["tools"]);
    const other = node("other", "tools", []);
    const order = installOrder([app, other], known).map((n) => n.id);
    expect(order).toEqual(["app", "other"]); // nothing orders app after "other": its dependency is the pack with id tools
    expect(installOrder([app, other]).map((n) => n.id)).toEqual(["other", "app"]); // without the workspace, the name is all there is
  });
});
