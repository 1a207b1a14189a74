// symlink: link `dst` to a file or directory inside the pack.
import { existsSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync } from "node:fs";
import { basename, dirname, normalize } from "node:path";
import * as v from "valibot";
import { backupName, failed, lstatOrNull, packSource, targetPath } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  src: v.pipe(v.string(), v.minLength(1)),
  dst: v.pipe(v.string(), v.minLength(1)),
  backup: v.optional(v.boolean(), false),
  normalize: v.optional(v.boolean(), true),
  kind: v.optional(v.picklist(["auto", "file", "directory"]), "auto"),
});
type Args = v.InferOutput<typeof Args>;

function resolveArgs(a: Args, ctx: ActionContext) {
  let src = packSource(a.src, ctx, "src");
  if (a.normalize) src = normalize(src);
  return { src, dst: targetPath(a.dst, ctx, "dst") };
}

const stateKey = (dst: string) => `symlink:${dst}`;

function restoreBackup(dst: string, ctx: ActionContext): string {
  const recorded = ctx.state[stateKey(dst)];
  const candidates =
    typeof recorded === "string"
      ? [recorded]
      : readdirSync(dirname(dst))
          .filter((n) => n.startsWith(`${basename(dst)}.grex-bak.`))
          .sort()
          .reverse()
          .map((n) => `${dirname(dst)}/${n}`);
  const backup = candidates.find((c) => existsSync(c) || lstatOrNull(c));
  if (!backup) return "";
  renameSync(backup, dst);
  delete ctx.state[stateKey(dst)];
  return ` and restored ${backup}`;
}

function unlink(src: string, dst: string, ctx: ActionContext): ActionOutcome {
  const st = lstatOrNull(dst);
  if (!st?.isSymbolicLink() || readlinkSync(dst) !== src) return { result: "already_satisfied", details: { dst } };
  if (ctx.dryRun) return { result: "would_perform_change", details: { dst, remove: true } };
  rmSync(dst);
  const restored = restoreBackup(dst, ctx);
  return { result: "performed_change", details: { dst, removed: true, restored: restored !== "" } };
}

export const symlinkAction: ActionDef<Args> = {
  name: "symlink",
  schema: Args,
  async apply(a, ctx) {
    const { src, dst } = resolveArgs(a, ctx);
    const srcStat = existsSync(src) ? statSync(src) : null;
    if (!srcStat && a.kind === "auto") return failed(`source ${src} does not exist (kind: auto needs it to decide file or directory)`, { src });
    if (srcStat && a.kind === "file" && !srcStat.isFile()) return failed(`source ${src} is not a file`, { src });
    if (srcStat && a.kind === "directory" && !srcStat.isDirectory()) return failed(`source ${src} is not a directory`, { src });
    const st = lstatOrNull(dst);
    if (st?.isSymbolicLink() && readlinkSync(dst) === src) return { result: "already_satisfied", details: { src, dst } };
    // In a dry run an earlier mkdir may be what creates the parent.
    if (!existsSync(dirname(dst)) && !ctx.dryRun) return failed(`the parent directory of ${dst} does not exist; add a mkdir action before it`, { dst });
    if (st && !a.backup) return failed(`${dst} already exists; set backup: true to move it aside`, { dst });
    if (ctx.dryRun) return { result: "would_perform_change", details: { src, dst, backup: st !== null } };
    let backup: string | null = null;
    if (st) {
      backup = backupName(dst);
      renameSync(dst, backup);
    }
    try {
      symlinkSync(src, dst, srcStat?.isDirectory() || a.kind === "directory" ? "dir" : "file");
    } catch (err) {
      if (backup) renameSync(backup, dst);
      return failed(`could not create the link ${dst} (${err instanceof Error ? err.message : String(err)})`, { dst });
    }
    if (backup) ctx.state[stateKey(dst)] = backup;
    return {
      result: "performed_change",
      details: { src, dst, ...(backup ? { backup } : {}) },
      rollback: async () => {
        unlink(src, dst, ctx);
        return `removed link ${dst}${backup ? " and restored the backup" : ""}`;
      },
    };
  },
  async undo(a, ctx) {
    const { src, dst } = resolveArgs(a, ctx);
    return unlink(src, dst, ctx);
  },
};
