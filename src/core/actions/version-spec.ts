// Version requirements for the `psversion` condition, as the Rust grex writes
// them: ">=5.1", ">7", "<=7.4", "<6", "=7.2" or a bare "5.1" (a minimum).
// Parts compare numerically; a missing part counts as 0 (">=7" is ">=7.0").

/** How many combiner lists conditions may nest (a condition 32 lists deep is rejected), as in the Rust grex. */
export const MAX_CONDITION_DEPTH = 32;

export type VersionOp = ">=" | ">" | "<=" | "<" | "=";
export interface VersionSpec {
  op: VersionOp;
  version: number[];
}

/** A requirement: an optional comparison, then a dotted version (also the pack.yaml JSON Schema's pattern). */
export const VERSION_SPEC_RE = /^\s*(>=|<=|==|>|<|=)?\s*v?(\d+(?:\.\d+)*)\s*$/;

/** Parse a requirement; null when it is not one (the caller reports it at parse time). */
export function parseVersionSpec(spec: string): VersionSpec | null {
  const m = VERSION_SPEC_RE.exec(spec);
  if (!m) return null;
  const op = (m[1] === "==" ? "=" : (m[1] ?? ">=")) as VersionOp;
  return { op, version: (m[2] as string).split(".").map(Number) };
}

/** Compare two dotted versions numerically (missing parts are 0). */
export function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Whether an installed version (such as "7.4.1") meets the requirement. */
export function versionSatisfies(installed: string, spec: VersionSpec): boolean {
  const have = installed.trim().split(/[.\-+]/).map((p) => Number.parseInt(p, 10)).filter((n) => Number.isFinite(n));
  const d = compareVersions(have, spec.version);
  switch (spec.op) {
    case ">=":
      return d >= 0;
    case ">":
      return d > 0;
    case "<=":
      return d <= 0;
    case "<":
      return d < 0;
    default:
      return d === 0;
  }
}
