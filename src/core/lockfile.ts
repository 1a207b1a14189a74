// grex.lock.jsonl, the resolved state (SPEC §2.2): one object per line, last
// line wins per id; rewritten compactly (temp + rename) at the end of a sync.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import * as v from "valibot";
import { integrityError } from "./errors.ts";
import { atomicWriteFile } from "./fsutil.ts";
import type { Workspace } from "./workspace.ts";

export const LockEntrySchema = v.object({
  id: v.pipe(v.string(), v.minLength(1)),
  sha: v.string(),
  branch: v.nullable(v.string()),
  installed_at: v.string(),
  actions_hash: v.string(),
  type: v.string(),
  /** Commit the pack's setup last ran at (`update` reinstalls when HEAD moved past it). */
  installed_sha: v.optional(v.string()),
  /** Children only: where they come from, so `ls` needs no pack.yaml. */
  url: v.optional(v.string()),
  ref: v.optional(v.nullable(v.string())),
});

export type LockEntry = v.InferOutput<typeof LockEntrySchema>;

export function parseLockfile(text: string, file: string): { entries: Map<string, LockEntry>; tornTail: boolean } {
  const entries = new Map<string, LockEntry>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).replace(/\r$/, "");
    if (line.trim() === "") continue;
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      // A torn last line (no newline after it) is what a crash mid-append leaves.
      if (i === lines.length - 1) return { entries, tornTail: true };
      throw integrityError(`${basename(file)} line ${i + 1} is not valid JSON; fix or delete that line, then run grex sync.`, {
        file,
        line: i + 1,
      });
    }
    const parsed = v.safeParse(LockEntrySchema, obj);
    if (!parsed.success) {
      const field = parsed.issues[0].path?.map((p) => String(p.key)).join(".") ?? "entry";
      throw integrityError(`${basename(file)} line ${i + 1} has a bad '${field}'; fix or delete that line, then run grex sync.`, {
        file,
        line: i + 1,
      });
    }
    entries.delete(parsed.output.id); // keep the order of the last write
    entries.set(parsed.output.id, parsed.output);
  }
  return { entries, tornTail: false };
}

export function readLockfile(ws: Workspace, opts?: { warn(message: string): void }): Map<string, LockEntry> {
  let text: string;
  try {
    text = readFileSync(ws.lockPath, "utf8");
  } catch {
    return new Map();
  }
  const { entries, tornTail } = parseLockfile(text, ws.lockPath);
  if (tornTail) opts?.warn(`${basename(ws.lockPath)} ends in a partly written line; it is ignored and the next sync rewrites the file.`);
  return entries;
}

/** Compact atomic rewrite. */
export function writeLockfile(ws: Workspace, entries: Iterable<LockEntry>): void {
  let out = "";
  for (const e of entries) out += `${JSON.stringify(e)}\n`;
  atomicWriteFile(ws.lockPath, out);
}
