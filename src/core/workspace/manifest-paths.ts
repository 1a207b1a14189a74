// The path rule (base/naming.ts) applied to grex.jsonl as read: a teammate's
// line registering `a/evil` while `a` is a pack would put a clone inside `a`'s
// work tree. Such a manifest is an integrity error (exit 3) naming the line
// that made the overlap, exactly as the CLI refuses the same path (exit 2).
import { basename } from "node:path";
import { integrityError } from "../base/errors.ts";
import { nestedPackPair, overlapReason } from "../base/naming.ts";
import { eachJsonLine } from "./jsonl.ts";
import type { PackEntry } from "./manifest-events.ts";

/** Throws when one registered pack's path lies inside another's. O(n × depth); nothing is read again unless it does. */
export function assertNoNestedPacks(packs: Iterable<PackEntry>, text: string, file: string): void {
  const paths: string[] = [];
  for (const p of packs) paths.push(p.path);
  const pair = nestedPackPair(paths);
  if (pair === null) return;
  const [inner, outer] = pair;
  // The later of the two `add` lines made the overlap: name that one.
  let line = 0;
  let path = inner;
  eachJsonLine(text, (o, lineNo) => {
    if (typeof o !== "object" || o === null) return;
    const e = o as { op?: unknown; path?: unknown };
    if (e.op === "add" && (e.path === inner || e.path === outer)) {
      line = lineNo;
      path = e.path;
    }
  });
  const other = path === inner ? outer : inner;
  throw integrityError(
    `${basename(file)} line ${line} registers pack '${path}', but ${overlapReason(path, other)}; delete that line, then register that repository elsewhere with grex add.`,
    { file, line, field: "path" },
  );
}
