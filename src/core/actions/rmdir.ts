// rmdir: remove a directory. Empty: removed (undo recreates it with its mode).
// Not empty: needs backup (move it to <path>.grex-bak.<timestamp>, which undo
// puts back) or force (delete it, which nothing can undo). backup wins when
// both are set.
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, rmdirSync } from "node:fs";
import * as v from "valibot";
import { backupPath, confinedTarget, failed, guardTarget, lstatOrNull } from "./paths.ts";
import type { ActionDef } from "./types.ts";

const Args = v.strictObject({
  path: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  backup: v.optional(v.boolean(), false),
  force: v.optional(v.boolean(), false),
});
type Args = v.InferOutput<typeof Args>;

/** backup: where it was moved; emptyMode: it was an empty directory with this mode. */
type Saved = { backup: string } | { emptyMode: number };

const stateKey = (p: string) => `rmdir:${p}`;

export const rmdirAction: ActionDef<Args> = {
  name: "rmdir",
  schema: Args,
  async apply(a, ctx) {
    const path = confinedTarget(a.path, ctx, "path");
    const st = lstatOrNull(path);
    if (!st) return { result: "already_satisfied", details: { path } };
    if (!st.isDirectory()) return failed(`${path} is not a directory; remove it by other means or fix the path`, { path });
    // Deleted or moved aside, it takes everything in it along: it must not hold a repository.
    guardTarget(path, ctx, "path", a.path, { tree: true });
    const empty = readdirSync(path).length === 0;
    if (!empty && !a.force && !a.backup) {
      return failed(`${path} is not empty; set backup: true to move it aside or force: true to delete it`, { path });
    }
    if (ctx.dryRun) return { result: "would_perform_change", details: { path, ...(a.backup ? { backup: `${path}.grex-bak.<timestamp>` } : { delete: true }) } };
    if (a.backup) {
      const backup = backupPath(path, ctx);
      renameSync(path, backup);
      ctx.state[stateKey(path)] = { backup } satisfies Saved;
      return {
        result: "performed_change",
        details: { path, backup },
        rollback: async () => {
          if (lstatOrNull(path)) return `left ${backup} aside (${path} exists again)`;
          renameSync(backup, path);
          delete ctx.state[stateKey(path)];
          return `restored ${path} from ${backup}`;
        },
      };
    }
    if (!empty) {
      rmSync(path, { recursive: true, force: true });
      return { result: "performed_change", details: { path, deleted: true } };
    }
    const emptyMode = st.mode & 0o7777;
    rmdirSync(path);
    ctx.state[stateKey(path)] = { emptyMode } satisfies Saved;
    return {
      result: "performed_change",
      details: { path, deleted: true },
      rollback: async () => {
        recreate(path, emptyMode);
        delete ctx.state[stateKey(path)];
        return `recreated ${path}`;
      },
    };
  },
  // Undo puts back what this action can: a directory moved aside, or an empty one. A forced deletion is gone.
  async undo(a, ctx) {
    const path = confinedTarget(a.path, ctx, "path");
    const saved = ctx.state[stateKey(path)] as Saved | undefined;
    const backup = saved && "backup" in saved && lstatOrNull(saved.backup) ? saved.backup : null;
    const emptyMode = saved && "emptyMode" in saved ? saved.emptyMode : null;
    if (backup === null && emptyMode === null) {
      if (!ctx.dryRun) delete ctx.state[stateKey(path)];
      return { result: "noop", details: { path } };
    }
    if (lstatOrNull(path)) {
      if (!ctx.dryRun) delete ctx.state[stateKey(path)];
      return { result: "already_satisfied", details: { path, ...(backup ? { note: `${path} exists; ${backup} left aside` } : {}) } };
    }
    if (ctx.dryRun) return { result: "would_perform_change", details: { path, ...(backup ? { restore: backup } : { recreate: true }) } };
    if (backup) renameSync(backup, path);
    else recreate(path, emptyMode ?? 0o755);
    delete ctx.state[stateKey(path)];
    return { result: "performed_change", details: { path, ...(backup ? { restored: backup } : { recreated: true }) } };
  },
};

function recreate(path: string, mode: number): void {
  if (lstatOrNull(path)) return;
  mkdirSync(path, { mode });
  chmodSync(path, mode);
}
