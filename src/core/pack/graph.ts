// Cycle detection for the `children` and `depends_on` graphs (each separately).
import { GrexError, integrityError } from "../errors.ts";

/** A cycle as a path that ends where it starts (`[a, b, a]`), or null. */
export function findCycle(nodes: string[], edges: (id: string) => string[]): string[] | null {
  const state = new Map<string, 1 | 2>(); // 1 = on the stack, 2 = done
  const stack: string[] = [];
  const visit = (n: string): string[] | null => {
    state.set(n, 1);
    stack.push(n);
    for (const m of edges(n)) {
      const s = state.get(m);
      if (s === 1) return [...stack.slice(stack.indexOf(m)), m];
      if (s === undefined) {
        const c = visit(m);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 2);
    return null;
  };
  for (const n of nodes) {
    if (state.has(n)) continue;
    const c = visit(n);
    if (c) return c;
  }
  return null;
}

export function cycleError(kind: "children" | "depends_on", cycle: string[]): GrexError {
  return integrityError(`The ${kind} graph has a cycle: ${cycle.join(" -> ")}; remove one of those entries.`, { cycle });
}
