// Issue 35: the sync engine's run and doctor's diagnosis were split so that no
// function in them is over 100 lines (the checks are a table, one pack's
// install lives in install.ts). Top-level functions start at column 0 and end
// at the first line that is a lone `}`.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");
const FILES = ["core/sync/engine.ts", "core/sync/install.ts", "core/sync/record.ts", "verbs/doctor.ts", "verbs/doctor-checks.ts"];

function longFunctions(file: string, limit: number): string[] {
  const lines = readFileSync(join(SRC, file), "utf8").split("\n");
  const out: string[] = [];
  let start = -1;
  let name = "";
  for (const [i, line] of lines.entries()) {
    const m = /^(?:export )?(?:async )?function\*? ?(\w+)/.exec(line);
    if (m && start < 0) {
      start = i;
      name = m[1] as string;
    } else if (start >= 0 && line === "}") {
      if (i - start + 1 > limit) out.push(`${file}: ${name} is ${i - start + 1} lines`);
      start = -1;
    }
  }
  return out;
}

test("no function of the sync engine or doctor is over 100 lines", () => {
  expect(FILES.flatMap((f) => longFunctions(f, 100))).toEqual([]);
  // The check can fail: these files do have functions, and a limit of 10 finds some.
  expect(FILES.flatMap((f) => longFunctions(f, 10)).length).toBeGreaterThan(3);
});
