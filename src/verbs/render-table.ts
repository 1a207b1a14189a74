// Aligned columns for human output (ls, status): each column as wide as its
// widest cell (colour codes do not count), two spaces between, no trailing blanks.
import { visibleWidth } from "./render-style.ts";

export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell))));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat((widths[i] as number) - visibleWidth(cell))))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
