// Cycle detection over the children and depends_on graphs.
import { describe, expect, test } from "bun:test";
import { GrexError } from "../../src/core/base/errors.ts";
import { cycleError, findCycle } from "../../src/core/pack/graph.ts";

const graph = (g: Record<string, string[]>) => (id: string) => g[id] ?? [];

describe("findCycle", () => {
  test("a cycle is returned as a path that ends where it starts", () => {
    expect(findCycle(["a", "b", "c"], graph({ a: ["b"], b: ["c"], c: ["a"] }))).toEqual(["a", "b", "c", "a"]);
  });

  test("the path starts at the node where the cycle closes, not at the root", () => {
    expect(findCycle(["root"], graph({ root: ["x"], x: ["y"], y: ["z"], z: ["x"] }))).toEqual(["x", "y", "z", "x"]);
  });

  test("a DAG (diamond, shared leaves) has no cycle", () => {
    const g = graph({ a: ["b", "c"], b: ["d"], c: ["d"], d: [], e: ["d", "a"] });
    expect(findCycle(["a", "b", "c", "d", "e"], g)).toBeNull();
  });

  test("a self-loop is a cycle of one", () => {
    expect(findCycle(["a", "b"], graph({ a: [], b: ["b"] }))).toEqual(["b", "b"]);
  });

  test("a cycle not reachable from the first node is still found", () => {
    expect(findCycle(["a", "p"], graph({ a: ["b"], b: [], p: ["q"], q: ["p"] }))).toEqual(["p", "q", "p"]);
  });

  test("nodes reached only through edges are walked", () => {
    expect(findCycle(["a"], graph({ a: ["hidden"], hidden: ["a"] }))).toEqual(["a", "hidden", "a"]);
  });

  test("no nodes, no cycle", () => {
    expect(findCycle([], graph({}))).toBeNull();
  });

  test("a very deep chain does not overflow the stack", () => {
    const depth = 200_000;
    const next = (id: string) => {
      const i = Number(id);
      return i < depth ? [String(i + 1)] : [];
    };
    expect(findCycle(["0"], next)).toBeNull();
    expect(findCycle(["0"], (id) => (id === String(depth) ? ["0"] : next(id)))?.length).toBe(depth + 2);
  });
});

describe("cycleError", () => {
  for (const kind of ["children", "depends_on"] as const) {
    test(`${kind}: integrity error (exit 3) showing the cycle in one sentence`, () => {
      const err = cycleError(kind, ["a", "b", "c", "a"]);
      expect(err).toBeInstanceOf(GrexError);
      expect(err.kind).toBe("integrity");
      expect(err.exitCode).toBe(3);
      expect(err.message).toContain(`${kind} graph`);
      expect(err.message).toContain("a -> b -> c -> a");
      expect(err.message).not.toContain("\n");
      expect(err.data).toEqual({ graph: kind, cycle: ["a", "b", "c", "a"] });
    });
  }
});
