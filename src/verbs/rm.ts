// `grex rm <id>`: tear a pack down, unregister it, and delete its directory.
import { existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { stepLines, type StepLike } from "./render-steps.ts";
import { CancelledError, GrexError, packOpError, toGrexError, usageError } from "../core/base/errors.ts";
import { withPackLock } from "../core/locks/locks.ts";
import { statusCacheFile } from "../core/git/worktree/status-cache.ts";
import { readLockfile, writeLockfile } from "../core/workspace/lockfile.ts";
import { appendEvents, makeEvent, readManifest } from "../core/workspace/manifest.ts";
import { closest } from "../core/base/closest.ts";
import { dryRunParam } from "./common.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeEntry, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";

const Result = v.object({
  id: v.string(),
  removed: v.boolean(),
  files_deleted: v.boolean(),
  teardown: v.picklist(["ok", "skipped", "failed"]),
  dry_run: v.boolean(),
  steps: v.array(v.record(v.string(), v.unknown())),
  /** Child packs removed with it (ids). */
  children: v.array(v.string()),
  /** Directories deleted (or, in a dry run, that would be). */
  deleted: v.array(v.string()),
  /** Local-only work deleted because of --force, one entry per repository. */
  discarded: v.array(v.string()),
});

export const rmVerb = defineVerb({
  name: "rm",
  description:
    "Unregister a pack: runs its teardown (children first, unless skip_teardown), records the removal in grex.jsonl, drops its .gitignore block and deletes its directory (unless keep_files). Refuses when the pack or a child holds work that exists only here (uncommitted or untracked files, unpushed commits, stashes, branches without upstream) unless force.",
  params: v.strictObject({
    id: desc(v.pipe(v.string(), v.minLength(1, "is required")), "The pack id to remove, as ls shows it, e.g. \"dotfiles\" or \"tools/mine\". Required."),
    keep_files: desc(v.optional(v.boolean(), false), "true: leave the pack's directory on disk (only unregister it). Default false: the directory is deleted."),
    skip_teardown: desc(v.optional(v.boolean(), false), "true: do not undo the pack's setup (symlinks, env blocks, created directories stay). Default false: teardown runs, children first."),
    force: desc(
      v.optional(v.boolean(), false),
      "true: remove even when work that exists only here would be lost (uncommitted or untracked files, unpushed commits, stashes) or teardown failed. Default false: refuse and name that work.",
    ),
    dry_run: dryRunParam,
    ...allowOutsideHomeEntry,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun(MUTATION_PASS),
  destructive: true,
  mcp: true,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: ["grex rm dotfiles", "grex rm tools/mine --keep-files", "grex rm scratch --force --skip-teardown"],
  cli: {
    args: "<id>",
    positionals: ["id"],
    flags: [
      { flag: "--keep-files", description: "Leave the pack's directory on disk" },
      { flag: "--skip-teardown", description: "Do not undo the pack's setup" },
      { flag: "--force", description: "Remove even when local-only work (changes, unpushed commits, stashes) would be lost, or teardown failed" },
      allowOutsideHomeFlag,
    ],
  },
  async run(ctx, p, signal) {
    const ws = ctx.workspace();
    const [{ updateIgnoreFile }, { moveToTrash, sweepTrash, trashDir, trashedId }] = await Promise.all([
      import("../core/workspace/gitignore.ts"),
      import("../core/workspace/trash.ts"),
    ]);
      // What an interrupted rm left behind goes first: it was already unregistered or checked.
      const swept = p.dry_run ? [] : sweepTrash(ws);
      for (const left of swept) ctx.debug(1, `swept ${left} from an interrupted rm`);
      const { state } = await readManifest(ws, { warn: ctx.warn });
      const pack = state.get(p.id);
      const finished = swept.filter((name) => trashedId(name) === p.id);
      if (!pack && finished.length > 0) {
        // The same rm, interrupted after its record: only the deletion was left, and is now done.
        const deleted = finished.map((name) => join(trashDir(ws), name));
        return { id: p.id, removed: true, files_deleted: true, teardown: "skipped" as const, dry_run: false, steps: [], children: [], deleted, discarded: [] };
      }
      if (!pack) {
        const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
        const children = (await loadWorkspaceView(ws, () => {})).packs.filter((n) => n.parent !== null).map((n) => n.id);
        throw notRegistered(p.id, [...state.keys()], children, ws.manifestPath);
      }
      const dir = join(ws.root, pack.path);
      const lockEntries = readLockfile(ws, { warn: ctx.warn });
      const onDisk = existsSync(dir);
      const children = await childrenOf(p.id, dir, lockEntries.keys());
      const wt = await import("./rm-worktrees.ts");
      const { linked, discarded } = onDisk && !p.keep_files ? await wt.workBeforeDelete(ctx, p.id, dir, children, p.force) : { linked: [], discarded: [] };
      const deleted = onDisk && !p.keep_files ? [dir] : [];
      const base = { id: p.id, children: children.map((c) => c.id), deleted, discarded };
      let teardown: "ok" | "skipped" | "failed" = "skipped";
      let steps: Record<string, unknown>[] = [];
      let cause = "";
      if (!p.skip_teardown && onDisk) {
        const { teardownPack } = await import("../core/packtypes/index.ts");
        try {
          const undo = () => teardownPack({ ws, id: p.id, dir, type: pack.type, env: ctx.env, signal, dryRun: p.dry_run, allowOutsideHome: allowsOutsideHome(ctx, p) });
          // A dry run only reads: no pack lock, so it leaves no lock file behind (as `teardown --dry-run`).
          const r = p.dry_run ? await undo() : await withPackLock(ws, dir, signal, undo);
          steps = r.steps.map((s) => ({ ...s }));
          teardown = r.failed ? "failed" : "ok";
          if (r.failed) cause = `action ${r.failed.idx} (${r.failed.action}) failed: ${r.failed.reason.replace(/\.$/, "")}`;
        } catch (err) {
          const e = toGrexError(err);
          if (e.kind === "cancelled" || e.kind === "integrity") throw e;
          cause = e.message.replace(/\.$/, "");
          teardown = "failed";
        }
        if (teardown === "failed" && !p.force && !p.dry_run) {
          throw packOpError(
            `Teardown of '${p.id}' failed (${cause}), so it stays registered; fix that and run \`grex rm ${p.id}\` again, or pass --force to remove it anyway (--skip-teardown leaves its setup in place).`,
          );
        }
        if (teardown === "failed") ctx.warn(`teardown of '${p.id}' failed (${cause}); removed anyway (--force).`);
      }
      if (p.dry_run) return { ...base, removed: false, files_deleted: false, teardown, dry_run: true, steps };
      // Crash-safe order: the directory leaves in one rename, then the records,
      // and the rm event last (the commit point); a re-run finishes any of it.
      let trashed: string | null = null;
      try {
        trashed = deleted.length > 0 ? moveToTrash(ws, dir, p.id) : null;
        for (const c of children) lockEntries.delete(c.id);
        lockEntries.delete(p.id);
        await writeLockfile(ws, lockEntries.values());
        updateIgnoreFile(join(ws.root, ".gitignore"), p.id, null);
        await appendEvents(ws, [makeEvent("rm", p.id, {})], signal);
      } catch (err) {
        // Before the commit point (a full disk, a cancel): say where things are, and put them back where they were.
        const now = await readManifest(ws, { warn: () => {} }).catch(() => null);
        if (now !== null && !now.state.has(p.id)) throw err; // the record landed: the next rm sweeps the trash
        throw whereThingsAre(toGrexError(err), p.id, dir, trashed, teardown === "ok");
      }
      if (deleted.length > 0) {
        rmSync(trashed ?? dir, { recursive: true, force: true });
        await wt.forgetRegistrations(linked);
        // The directories above a nested pack (`libs/` of `libs/core`) go too, once nothing else is in them.
        if (pack.path.includes("/")) (await import("../core/fs/pack-parents.ts")).removeEmptyParents(ws.root, pack.path);
      }
      // The status caches go with their packs (an accelerator only: a leftover would be harmless, just clutter).
      for (const id of [p.id, ...children.map((c) => c.id)]) rmSync(statusCacheFile(ws.stateDir, id), { force: true });
      return { ...base, removed: true, files_deleted: deleted.length > 0, teardown, dry_run: false, steps };
  },
  render(r, _p, style) {
    const lines = stepLines(r.steps as unknown as StepLike[], style);
    if (r.children.length > 0) lines.push(`  children: ${r.children.join(", ")}`);
    for (const d of r.deleted) lines.push(`  ${r.dry_run ? "would delete" : "deleted"} ${d}`);
    for (const d of r.discarded) lines.push(`  discarded (--force) ${d}`);
    lines.push(r.dry_run ? `would remove ${r.id}` : `removed ${r.id} (teardown ${r.teardown}${r.files_deleted ? ", files deleted" : ", files kept"})`);
    return lines.join("\n");
  },
});

/**
 * An rm stopped before its record: the directory goes back from the trash (a
 * rename, which needs no space), and the sentence says where everything is.
 * When it cannot go back, the sentence names the trash entry instead.
 */
function whereThingsAre(err: GrexError, id: string, dir: string, trashed: string | null, tornDown: boolean): GrexError {
  const setup = tornDown ? " (its setup was torn down; grex sync installs it again)" : "";
  let where = `its directory is at ${dir}`;
  if (trashed !== null) {
    try {
      renameSync(trashed, dir);
      where = `its directory is back at ${dir}`;
    } catch {
      where = `its directory is in ${trashed} until \`grex rm ${id}\` runs again and finishes the removal`;
    }
  }
  const message = `${err.message.replace(/\.$/, "")}; '${id}' is still registered and ${where}${setup}.`;
  return err.kind === "cancelled" ? new CancelledError(message) : new GrexError(err.kind, message, err.data);
}

/** Child packs inside `dir`: those recorded in the lockfile, and those its pack.yaml files declare. */
async function childrenOf(id: string, dir: string, recorded: Iterable<string>): Promise<Array<{ id: string; dir: string }>> {
  const out = new Map<string, string>();
  for (const r of recorded) if (r.startsWith(`${id}/`)) out.set(r, join(dir, r.slice(id.length + 1)));
  const { loadPackYaml } = await import("../core/pack/load.ts");
  const walk = async (pid: string, pdir: string, depth: number) => {
    if (depth > 32) return;
    let children: Array<{ path: string }> = [];
    try {
      children = (await loadPackYaml(pdir))?.children ?? [];
    } catch {
      return; // an unreadable pack.yaml: the lockfile's record is what is known
    }
    for (const c of children) {
      const cid = `${pid}/${c.path}`;
      const cdir = join(pdir, c.path);
      out.set(cid, cdir);
      if (existsSync(cdir)) await walk(cid, cdir, depth + 1);
    }
  };
  if (existsSync(dir)) await walk(id, dir, 0);
  return [...out].map(([cid, cdir]) => ({ id: cid, dir: cdir })).sort((a, b) => a.id.localeCompare(b.id));
}

/** Why `id` cannot be removed: a child of a registered pack, a near miss, or simply unknown. */
function notRegistered(id: string, registered: string[], children: string[], manifestPath: string) {
  const parent = registered.filter((r) => id.startsWith(`${r}/`)).sort((a, b) => b.length - a.length)[0];
  if (parent !== undefined && children.includes(id)) {
    return usageError(
      `'${id}' is a child of '${parent}' (listed under children: in its .grex/pack.yaml), so it cannot be removed on its own; drop it from that list and run \`grex sync\`, or remove '${parent}'.`,
      { field: "id" },
    );
  }
  const hint = closest(id, [...registered, ...children]);
  return usageError(`No pack '${id}' is registered in ${manifestPath}.${hint ? ` Did you mean '${hint}'?` : ""} See \`grex ls\`.`, { field: "id" });
}
