// The files that make a directory a grex workspace (`init`, `init --from`).
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOCK_FILE, MANIFEST_FILE } from "../core/base/workspace.ts";

export const STATE_BLOCK_ID = "state";
export const STATE_IGNORE_LINES = ["/.grex/.state/"];

/** grex.jsonl and grex.lock.jsonl (when missing), the state block of .gitignore and the union-merge lines of .gitattributes; returns what was (or would be) created. */
export async function createWorkspaceFiles(root: string, dryRun: boolean): Promise<string[]> {
  const created: string[] = [];
  for (const name of [MANIFEST_FILE, LOCK_FILE]) {
    const path = join(root, name);
    if (existsSync(path)) continue;
    created.push(name);
    if (!dryRun) {
      mkdirSync(root, { recursive: true });
      writeFileSync(path, "", { flag: "wx" });
    }
  }
  const { blockIdsIn, updateIgnoreFile } = await import("../core/workspace/gitignore.ts");
  const gitignore = join(root, ".gitignore");
  const needsBlock = dryRun
    ? !blockIdsIn(gitignore).includes(STATE_BLOCK_ID)
    : updateIgnoreFile(gitignore, STATE_BLOCK_ID, STATE_IGNORE_LINES);
  if (needsBlock) created.push(".gitignore");
  // Merge grex.jsonl and grex.lock.jsonl as unions (core/workspace/gitattributes.ts).
  const { ensureMergeLines, GITATTRIBUTES, missingMergeLines } = await import("../core/workspace/gitattributes.ts");
  if ((dryRun ? missingMergeLines(root) : ensureMergeLines(root)).length > 0) created.push(GITATTRIBUTES);
  return created;
}
