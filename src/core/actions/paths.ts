// Helpers shared by the actions: argument expansion, path resolution and
// confinement, backups, careful file rewrites, outcomes.
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { confinementError } from "../fs/confine.ts";
import { packOpError } from "../base/errors.ts";
import { fsyncDir } from "../fs/fsutil.ts";
import { expandVars, homeOf } from "../base/vars.ts";
import type { ActionContext, ActionOutcome } from "./types.ts";

/** "actions[2].symlink.dst of pack 'x'" — how messages name an argument. */
export const fieldName = (ctx: ActionContext, field: string): string => `${ctx.where}.${field} of pack '${ctx.packId}'`;

export const expandField = (raw: string, ctx: ActionContext, field: string): string =>
  expandVars(raw, ctx.env, fieldName(ctx, field));

export const home = (ctx: ActionContext): string => homeOf(ctx.env);

/** Expand variables and a leading `~` (not yet resolved). */
export function expandPath(raw: string, ctx: ActionContext, field: string): string {
  const p = expandField(raw, ctx, field);
  return p === "~" || p.startsWith("~/") || p.startsWith(`~${sep}`) ? home(ctx) + p.slice(1) : p;
}

/** Expand variables and a leading `~`, then resolve against the pack dir. */
export const targetPath = (raw: string, ctx: ActionContext, field: string): string =>
  resolve(ctx.packDir, expandPath(raw, ctx, field));

const inside = (root: string, p: string): boolean => {
  const rel = relative(root, p);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
};

/**
 * Apply the confinement rule (../confine.ts) to `p`, a path this action will
 * write, move or delete; throws the refusal (a failed step, exit 4). `tree`:
 * an existing directory about to be deleted or moved aside, so nothing inside
 * it may be a git repository either. `cwd`: an exec working directory.
 */
export function guardTarget(p: string, ctx: ActionContext, field: string, raw: string, opts: { tree?: boolean; cwd?: boolean } = {}): void {
  const refusal = opts.tree ? ctx.confine.treeRefusal(p, ctx.packDir) : ctx.confine.refusal(p, ctx.packDir, { cwd: opts.cwd === true });
  if (refusal) throw confinementError(refusal, fieldName(ctx, field), raw);
}

/** Resolve a target the action writes, moves or deletes, refusing what the confinement rule forbids. */
export function confinedTarget(raw: string, ctx: ActionContext, field: string): string {
  const p = targetPath(raw, ctx, field);
  guardTarget(p, ctx, field, raw);
  return p;
}

/** A path that must stay inside the pack dir (symlink src, exec cwd), also after following symlinks. */
export function packPath(raw: string, ctx: ActionContext, field: string): string {
  const p = targetPath(raw, ctx, field);
  let escapes = !inside(ctx.packDir, p);
  if (!escapes && existsSync(p)) {
    try {
      escapes = !inside(realpathSync(ctx.packDir), realpathSync(p));
    } catch {
      // Unreadable: the lexical check stands.
    }
  }
  if (escapes) {
    throw packOpError(`${fieldName(ctx, field)} ('${raw}') points outside the pack directory ${ctx.packDir}; keep it inside the pack.`, {
      path: p,
    });
  }
  return p;
}

export function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

export function statOrNull(p: string) {
  try {
    return statSync(p);
  } catch {
    return null;
  }
}

/** Whether `p` exists on disk or an earlier step of this dry run would create it. */
export function existsOrPlanned(p: string, ctx: ActionContext): boolean {
  return lstatOrNull(p) !== null || (ctx.dryRun && ctx.planned.has(p));
}

/** `<p>.grex-bak.<UTC timestamp>`; names sort oldest to newest. The backup is a target too: the rule applies. */
export function backupPath(p: string, ctx: ActionContext): string {
  const stamp = ctx.now().toISOString().replace(/[-:]/g, "").replace(".", "");
  const base = `${p}.grex-bak.${stamp}`;
  let candidate = base;
  for (let n = 1; lstatOrNull(candidate); n++) candidate = `${base}-${n}`;
  guardTarget(candidate, ctx, "backup", candidate);
  return candidate;
}

/** Existing `<p>.grex-bak.*` siblings, newest first. */
export function backupsOf(p: string): string[] {
  const dir = dirname(p);
  const prefix = `${basename(p)}.grex-bak.`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix))
    .sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
    .reverse()
    .map((n) => join(dir, n));
}

/**
 * Replace a text file's content atomically (temp + fsync + rename), keeping
 * its permission bits, and writing through a symlink to the real file (rc
 * files are often links into a dotfiles repo; a rename would replace the link).
 */
export function rewriteFile(path: string, text: string): void {
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    // Does not exist yet: create it where asked.
  }
  const mode = statOrNull(real)?.mode ?? 0o644;
  const dir = dirname(real);
  const tmp = join(dir, `.${basename(real)}.grex-${process.pid}-${Math.random().toString(36).slice(2)}.tmp`);
  const fd = openSync(tmp, "wx", mode & 0o7777);
  try {
    const bytes = Buffer.from(text, "utf8");
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
    closeSync(fd);
    chmodSync(tmp, mode & 0o7777); // openSync's mode is filtered by the umask
    renameSync(tmp, real);
  } catch (err) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
}

export const errText = (err: unknown): string => {
  const m = err instanceof Error ? err.message : String(err);
  return m.replace(/\.$/, "");
};

/** A failed step's outcome; `reason` is a clause "what; what to do" without a final period. */
export const failed = (reason: string, details: Record<string, unknown> = {}, stderr = ""): ActionOutcome => ({
  result: "failed",
  details: { ...details, reason },
  failure: { reason, stderr },
});
