// `grex rm <id>`: tear a pack down, unregister it, and delete its directory.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { stepLines, type StepLike } from "../cli/steps.ts";
import { packOpError, toGrexError, usageError } from "../core/errors.ts";
import { backendFor, isGitRepo } from "../core/git/backend.ts";
import { updateIgnoreFile } from "../core/gitignore.ts";
import { tryAcquireWorkspaceLock, withPackLock } from "../core/locks.ts";
import { readLockfile, writeLockfile } from "../core/lockfile.ts";
import { appendEvents, makeEvent, readManifest } from "../core/manifest.ts";
import { closest } from "../core/closest.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb } from "./types.ts";

const Result = v.object({
  id: v.string(),
  removed: v.boolean(),
  files_deleted: v.boolean(),
  teardown: v.picklist(["ok", "skipped", "failed"]),
  dry_run: v.boolean(),
  steps: v.array(v.record(v.string(), v.unknown())),
});

export const rmVerb = defineVerb({
  name: "rm",
  description:
    "Unregister a pack: runs its teardown (children first, unless skip_teardown), records the removal in grex.jsonl, drops its .gitignore block and deletes its directory (unless keep_files). Refuses a pack with uncommitted changes unless force.",
  params: v.strictObject({
    id: v.pipe(v.string(), v.minLength(1, "is required")),
    keep_files: v.optional(v.boolean(), false),
    skip_teardown: v.optional(v.boolean(), false),
    force: v.optional(v.boolean(), false),
    dry_run: dryRunParam,
  }),
  result: Result,
  readOnly: false,
  destructive: true,
  mcp: true,
  examples: ["grex rm dotfiles", "grex rm tools/mine --keep-files", "grex rm scratch --force --skip-teardown"],
  cli: {
    args: "<id>",
    positionals: ["id"],
    flags: [
      { flag: "--keep-files", description: "Leave the pack's directory on disk" },
      { flag: "--skip-teardown", description: "Do not undo the pack's setup" },
      { flag: "--force", description: "Remove even with uncommitted changes" },
    ],
  },
  async run(ctx, p, signal) {
    const ws = ctx.workspace();
    const lock = p.dry_run ? null : tryAcquireWorkspaceLock(ws, "rm");
    try {
      const { state } = await readManifest(ws, { warn: ctx.warn });
      const pack = state.get(p.id);
      if (!pack) {
        const { loadWorkspaceView } = await import("../core/packs.ts");
        const children = (await loadWorkspaceView(ws, () => {})).packs.filter((n) => n.parent !== null).map((n) => n.id);
        throw notRegistered(p.id, [...state.keys()], children, ws.manifestPath);
      }
      const dir = join(ws.root, pack.path);
      const lockEntries = readLockfile(ws, { warn: ctx.warn });
      const subtree = [...lockEntries.keys()].filter((id) => id === p.id || id.startsWith(`${p.id}/`));
      const onDisk = existsSync(dir);
      if (onDisk && !p.force && !p.keep_files) {
        // Deleting files is what loses work: check the pack and every child repo in it.
        for (const id of [p.id, ...subtree.filter((id) => id !== p.id)]) {
          const d = join(ws.root, id);
          if (isGitRepo(d) && (await backendFor(pack.url).isDirty(d))) {
            throw packOpError(`Pack '${id}' has uncommitted changes in ${d}; commit or stash them, or pass --force to delete anyway.`);
          }
        }
      }
      if (p.dry_run) {
        return { id: p.id, removed: false, files_deleted: false, teardown: p.skip_teardown || !onDisk ? "skipped" as const : "ok" as const, dry_run: true, steps: [] };
      }
      let teardown: "ok" | "skipped" | "failed" = "skipped";
      let steps: Record<string, unknown>[] = [];
      let cause = "";
      if (!p.skip_teardown && onDisk) {
        const { teardownPack } = await import("../core/packtypes/index.ts");
        try {
          const r = await withPackLock(ws, dir, signal, () =>
            teardownPack({ ws, id: p.id, dir, type: pack.type, env: ctx.env, signal, dryRun: false }),
          );
          steps = r.steps.map((s) => ({ ...s }));
          teardown = r.failed ? "failed" : "ok";
          if (r.failed) cause = `action ${r.failed.idx} (${r.failed.action}) failed: ${r.failed.reason.replace(/\.$/, "")}`;
        } catch (err) {
          const e = toGrexError(err);
          if (e.kind === "cancelled") throw e;
          cause = e.message.replace(/\.$/, "");
          teardown = "failed";
        }
        if (teardown === "failed" && !p.force) {
          throw packOpError(
            `Teardown of '${p.id}' failed (${cause}), so it stays registered; fix that and run \`grex rm ${p.id}\` again, or pass --force to remove it anyway (--skip-teardown leaves its setup in place).`,
          );
        }
        if (teardown === "failed") ctx.warn(`teardown of '${p.id}' failed (${cause}); removed anyway (--force).`);
      }
      await appendEvents(ws, [makeEvent("rm", p.id, {})], signal);
      for (const id of subtree) lockEntries.delete(id);
      await writeLockfile(ws, lockEntries.values());
      updateIgnoreFile(join(ws.root, ".gitignore"), p.id, null);
      let filesDeleted = false;
      if (onDisk && !p.keep_files) {
        rmSync(dir, { recursive: true, force: true });
        filesDeleted = true;
      }
      return { id: p.id, removed: true, files_deleted: filesDeleted, teardown, dry_run: false, steps };
    } finally {
      lock?.release();
    }
  },
  render(r, _p, style) {
    if (r.dry_run) return `would remove ${r.id}`;
    const lines = stepLines(r.steps as unknown as StepLike[], style);
    return [...lines, `removed ${r.id} (teardown ${r.teardown}${r.files_deleted ? ", files deleted" : ", files kept"})`].join("\n");
  },
});

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
