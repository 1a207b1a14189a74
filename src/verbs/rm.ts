// `grex rm <id>`: tear a pack down, unregister it, and delete its directory.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { packOpError, toGrexError, usageError } from "../core/errors.ts";
import { backendFor, isGitRepo } from "../core/git/backend.ts";
import { updateIgnoreFile } from "../core/gitignore.ts";
import { tryAcquireWorkspaceLock, withPackLock } from "../core/locks.ts";
import { readLockfile, writeLockfile } from "../core/lockfile.ts";
import { appendEvents, makeEvent, readManifest } from "../core/manifest.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";

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
  effects: unlessDryRun(MUTATION_PASS),
  destructive: true,
  mcp: true,
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
      if (!pack) throw usageError(`No pack '${p.id}' is registered in ${ws.manifestPath}; see \`grex ls\`.`, { field: "id" });
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
      if (!p.skip_teardown && onDisk) {
        const { teardownPack } = await import("../core/packtypes/index.ts");
        try {
          const r = await withPackLock(ws, dir, signal, () =>
            teardownPack({ ws, id: p.id, dir, type: pack.type, env: ctx.env, signal, dryRun: false }),
          );
          steps = r.steps.map((s) => ({ ...s }));
          teardown = r.failed ? "failed" : "ok";
        } catch (err) {
          const e = toGrexError(err);
          if (e.kind === "cancelled" || e.kind === "integrity") throw e;
          ctx.warn(`teardown of '${p.id}' failed: ${e.message}`);
          teardown = "failed";
        }
        if (teardown === "failed" && !p.force) {
          throw packOpError(`Teardown of '${p.id}' failed, so it stays registered; fix the cause or pass --force (or --skip-teardown).`);
        }
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
  render(r) {
    if (r.dry_run) return `would remove ${r.id}`;
    return `removed ${r.id} (teardown ${r.teardown}${r.files_deleted ? ", files deleted" : ", files kept"})`;
  },
});
