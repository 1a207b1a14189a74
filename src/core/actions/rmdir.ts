// rmdir: remove a directory; a non-empty one needs force (delete) or backup (move aside).
import { readdirSync, renameSync, rmSync, rmdirSync } from "node:fs";
import * as v from "valibot";
import { backupName, failed, lstatOrNull, targetPath } from "./paths.ts";
import type { ActionDef } from "./types.ts";

const Args = v.strictObject({
  path: v.pipe(v.string(), v.minLength(1)),
  backup: v.optional(v.boolean(), false),
  force: v.optional(v.boolean(), false),
});
type Args = v.InferOutput<typeof Args>;

export const rmdirAction: ActionDef<Args> = {
  name: "rmdir",
  schema: Args,
  async apply(a, ctx) {
    const path = targetPath(a.path, ctx, "path");
    const st = lstatOrNull(path);
    if (!st) return { result: "already_satisfied", details: { path } };
    if (!st.isDirectory()) return failed(`${path} is not a directory`, { path });
    const empty = readdirSync(path).length === 0;
    if (!empty && !a.force && !a.backup) return failed(`${path} is not empty; set force: true to delete or backup: true to move it aside`, { path });
    if (ctx.dryRun) return { result: "would_perform_change", details: { path } };
    if (a.backup) {
      const backup = backupName(path);
      renameSync(path, backup);
      return {
        result: "performed_change",
        details: { path, backup },
        rollback: async () => {
          renameSync(backup, path);
          return `restored ${path}`;
        },
      };
    }
    if (empty) rmdirSync(path);
    else rmSync(path, { recursive: true, force: true });
    return { result: "performed_change", details: { path, deleted: true } };
  },
  // A removal cannot be undone on teardown (the content is gone or was moved aside on purpose).
  async undo(a, ctx) {
    return { result: "noop", details: { path: targetPath(a.path, ctx, "path") } };
  },
};
