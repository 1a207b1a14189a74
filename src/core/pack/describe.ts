// How a wrong value is named in pack.yaml messages ("got a list", "got string \"x\"").
export function describeValue(x: unknown): string {
  if (x === null || x === undefined) return "nothing";
  if (Array.isArray(x)) return "a list";
  if (typeof x === "object") return "a mapping";
  const s = JSON.stringify(x) ?? String(x);
  return `${typeof x} ${s.length > 40 ? `${s.slice(0, 37)}...` : s}`;
}
