// Cycle detection for the `children` and `depends_on` graphs (each checked
// separately). Iterative DFS, so a deep chain cannot overflow the stack.
import { type GrexError, integrityError } from "../base/errors.ts";

/**
 * The first cycle found, as a path that ends where it starts
 * (`["a", "b", "c", "a"]`; a self-loop is `["a", "a"]`), or null for a DAG.
 * Nodes reached through `edges` but missing from `nodes` are walked too.
 * Deterministic: nodes and edges are visited in the order given.
 */
export function findCycle(nodes: string[], edges: (id: string) => string[]): string[] | null {
  const DONE = 2;
  const ON_STACK = 1;
  const state = new Map<string, number>();
  for (const root of nodes) {
    if (state.has(root)) continue;
    // Each frame: node and the index of the next edge to follow.
    const stack: Array<{ id: string; next: string[]; i: number }> = [{ id: root, next: edges(root), i: 0 }];
    state.set(root, ON_STACK);
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { id: string; next: string[]; i: number };
      if (top.i >= top.next.length) {
        state.set(top.id, DONE);
        stack.pop();
        continue;
      }
      const m = top.next[top.i++] as string;
      const s = state.get(m);
      if (s === ON_STACK) {
        const from = stack.findIndex((f) => f.id === m);
        return [...stack.slice(from).map((f) => f.id), m];
      }
      if (s === undefined) {
        state.set(m, ON_STACK);
        stack.push({ id: m, next: edges(m), i: 0 });
      }
    }
  }
  return null;
}

/** Integrity error (exit 3) showing the cycle as `a -> b -> c -> a`. */
export function cycleError(kind: "children" | "depends_on", cycle: string[]): GrexError {
  return integrityError(
    `The ${kind} graph has a cycle: ${cycle.join(" -> ")}; remove one of those ${kind} entries to break it.`,
    { graph: kind, cycle },
  );
}
