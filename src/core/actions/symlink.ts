// symlink: make `dst` a link to `src` (a file or directory inside the pack).
//   normalize: true  → the link target is src as an absolute, normalized path
//                      (`.`/`..` and doubled separators collapsed, native separators);
//   normalize: false → the link target is the pack dir and src joined verbatim.
// Either way "already linked" compares resolved paths, and src must stay in the pack.
import { renameSync, rmSync, symlinkSync } from "node:fs";
import { dirname, isAbsolute } from "node:path";
import * as v from "valibot";
import {
  backupPath,
  backupsOf,
  confinedTarget,
  errText,
  existsOrPlanned,
  expandPath,
  failed,
  guardTarget,
  lstatOrNull,
  packPath,
  statOrNull,
} from "./paths.ts";
import { describeExisting, linkTarget } from "./checks.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  src: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  dst: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  backup: v.optional(v.boolean(), false),
  normalize: v.optional(v.boolean(), true),
  kind: v.optional(v.picklist(["auto", "file", "directory"]), "auto"),
});
type Args = v.InferOutput<typeof Args>;

interface Saved {
  target: string;
  backup: string | null;
}

const stateKey = (dst: string) => `symlink:${dst}`;

function resolveArgs(a: Args, ctx: ActionContext) {
  const src = packPath(a.src, ctx, "src");
  const raw = expandPath(a.src, ctx, "src");
  const target = a.normalize ? src : isAbsolute(raw) ? raw : `${ctx.packDir}/${raw}`;
  return { src, target, dst: confinedTarget(a.dst, ctx, "dst") };
}

/** Put a backup back at `dst` (dst must be free). Returns the backup used, or null. */
function restoreBackup(dst: string, preferred: string | null): string | null {
  const backup = [preferred, ...backupsOf(dst)].find((b): b is string => b !== null && lstatOrNull(b) !== null);
  if (!backup || lstatOrNull(dst)) return null;
  renameSync(backup, dst);
  return backup;
}

/** Remove our link and restore the backup it replaced. */
function removeLink(src: string, dst: string, ctx: ActionContext): ActionOutcome {
  const saved = ctx.state[stateKey(dst)] as Saved | undefined;
  const ours = linkTarget(dst) === src;
  // The link is gone already but a backup grex made is still aside: put it back.
  const orphan = !lstatOrNull(dst) && saved?.backup != null && lstatOrNull(saved.backup) !== null;
  if (!ours && !orphan) {
    if (!ctx.dryRun) delete ctx.state[stateKey(dst)];
    return { result: "already_satisfied", details: { dst } };
  }
  if (ctx.dryRun) return { result: "would_perform_change", details: { dst, remove: ours } };
  if (ours) rmSync(dst);
  const restored = restoreBackup(dst, saved?.backup ?? null);
  delete ctx.state[stateKey(dst)];
  return { result: "performed_change", details: { dst, removed: ours, ...(restored ? { restored } : {}) } };
}

export const symlinkAction: ActionDef<Args> = {
  name: "symlink",
  schema: Args,
  async apply(a, ctx) {
    const { src, target, dst } = resolveArgs(a, ctx);
    const srcStat = statOrNull(src);
    if (!srcStat && a.kind === "auto") {
      return failed(`source ${src} does not exist (kind: auto needs it to tell a file from a directory); add it to the pack or set kind`, { src });
    }
    if (srcStat && a.kind === "file" && srcStat.isDirectory()) return failed(`source ${src} is a directory but kind is file; fix kind`, { src });
    if (srcStat && a.kind === "directory" && !srcStat.isDirectory()) return failed(`source ${src} is not a directory but kind is directory; fix kind`, { src });
    if (srcStat && !srcStat.isFile() && !srcStat.isDirectory()) {
      return failed(`source ${src} is not a regular file or a directory (a FIFO, device or socket); link a regular file`, { src });
    }
    if (linkTarget(dst) === src) return { result: "already_satisfied", details: { src, dst } };
    if (!existsOrPlanned(dirname(dst), ctx)) {
      return failed(`the directory of ${dst} does not exist; add a mkdir action for ${dirname(dst)} before this symlink`, { dst });
    }
    const existing = lstatOrNull(dst);
    if (existing && !a.backup) {
      return failed(`${dst} already exists (${describeExisting(dst)}); set backup: true to move it aside, or remove it`, { dst });
    }
    // A directory moved aside takes everything in it along: it must not hold a repository.
    if (existing?.isDirectory()) guardTarget(dst, ctx, "dst", a.dst, { tree: true });
    if (ctx.dryRun) {
      ctx.planned.add(dst);
      return { result: "would_perform_change", details: { src, dst, ...(existing ? { backup: `${dst}.grex-bak.<timestamp>` } : {}) } };
    }
    const backup = existing ? backupPath(dst, ctx) : null;
    if (backup) renameSync(dst, backup);
    const isDir = a.kind === "directory" || (a.kind === "auto" && srcStat?.isDirectory() === true);
    try {
      symlinkSync(target, dst, isDir ? (ctx.os === "windows" ? "junction" : "dir") : "file");
    } catch (err) {
      if (backup) renameSync(backup, dst);
      return failed(`could not create the link ${dst} (${errText(err)}); check permissions${ctx.os === "windows" ? " or enable Developer Mode" : ""}`, { dst });
    }
    const prior = ctx.state[stateKey(dst)] as Saved | undefined;
    ctx.state[stateKey(dst)] = { target, backup: backup ?? prior?.backup ?? null } satisfies Saved;
    return {
      result: "performed_change",
      details: { src, dst, ...(backup ? { backup } : {}) },
      rollback: async () => {
        if (linkTarget(dst) === src) rmSync(dst);
        const restored = backup ? restoreBackup(dst, backup) : null;
        if (prior) ctx.state[stateKey(dst)] = prior;
        else delete ctx.state[stateKey(dst)];
        return `removed the link ${dst}${restored ? ` and restored ${restored}` : ""}`;
      },
    };
  },
  async undo(a, ctx) {
    const { src, dst } = resolveArgs(a, ctx);
    return removeLink(src, dst, ctx);
  },
  expect(a, ctx) {
    const { src, dst } = resolveArgs(a, ctx);
    return { path: dst, src };
  },
};
