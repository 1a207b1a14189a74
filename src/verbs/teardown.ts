// `grex teardown <id>`: undo a pack's setup (its own teardown, then its
// children's, as `rm` does) but keep it registered and on disk. The lockfile
// marks the pack and its children as not installed, so the next `grex sync`
// installs them again.
import { unknownPackId } from "../core/base/pack-ids.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { packOpError, usageError } from "../core/base/errors.ts";
import { withPackLock } from "../core/locks/locks.ts";
import { readLockfile, writeLockfile } from "../core/workspace/lockfile.ts";
import { readManifest } from "../core/workspace/manifest.ts";
import { stepLines, type StepLike } from "./render-steps.ts";
import { dryRunParam } from "./common.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeEntry, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";

const Result = v.object({
  id: v.string(),
  teardown: v.picklist(["ok", "failed"]),
  /** The pack and the children whose setup is now marked as not installed. */
  reset: v.array(v.string()),
  dry_run: v.boolean(),
  steps: v.array(v.record(v.string(), v.unknown())),
  failed: v.nullable(v.object({ idx: v.number(), action: v.string(), reason: v.string() })),
});

export const teardownVerb = defineVerb({
  name: "teardown",
  description:
    "Undo a pack's setup (its teardown actions or hook, then its children's, children last-first) and keep it registered and on disk; the next sync installs it again.",
  params: v.strictObject({
    id: v.pipe(v.string(), v.minLength(1, "is required")),
    dry_run: dryRunParam,
    ...allowOutsideHomeEntry,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun(MUTATION_PASS),
  destructive: true,
  // A lifecycle hook of rm, kept as a CLI verb; MCP serves the design's 11 tools.
  mcp: false,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: ["grex teardown dotfiles", "grex teardown dev-env/themes --dry-run"],
  cli: { args: "<id>", positionals: ["id"], flags: [allowOutsideHomeFlag] },
  async run(ctx, p, signal) {
    const ws = ctx.workspace();
    const { state } = await readManifest(ws, { warn: ctx.warn });
    const lockEntries = readLockfile(ws, { warn: ctx.warn });
    // A top-level pack from the manifest, or a child recorded in the lockfile.
    const top = state.get(p.id);
    const child = top ? undefined : lockEntries.get(p.id);
    if (!top && (!child || !p.id.includes("/"))) {
      throw unknownPackId(p.id, [...state.keys(), ...lockEntries.keys()], ws.manifestPath, "id");
    }
    const dir = join(ws.root, top ? top.path : p.id);
    if (!existsSync(dir)) {
      throw usageError(`Pack '${p.id}' is not on disk (${dir}), so there is no setup to undo; run grex sync to clone it.`, { field: "id" });
    }
    const { teardownPack } = await import("../core/packtypes/index.ts");
    const type = top?.type ?? child?.type ?? "meta";
    const undo = () => teardownPack({ ws, id: p.id, dir, type, env: ctx.env, signal, dryRun: p.dry_run, allowOutsideHome: allowsOutsideHome(ctx, p) });
    // A dry run touches nothing, locks included.
    const r = p.dry_run ? await undo() : await withPackLock(ws, dir, signal, undo);
    const subtree = [...lockEntries.keys()].filter((id) => id === p.id || id.startsWith(`${p.id}/`));
    if (!p.dry_run) {
      // Even a partial teardown has undone some setup: mark all of it for reinstall.
      for (const id of subtree) {
        const e = lockEntries.get(id);
        if (e) lockEntries.set(id, { ...e, installed_at: "" });
      }
      await writeLockfile(ws, lockEntries.values(), signal);
    }
    return {
      id: p.id,
      teardown: r.failed ? ("failed" as const) : ("ok" as const),
      reset: p.dry_run ? [] : subtree,
      dry_run: p.dry_run,
      steps: r.steps.map((s) => ({ ...s })),
      failed: r.failed,
    };
  },
  failure(r) {
    if (!r.failed) return undefined;
    return packOpError(
      `Teardown of '${r.id}' stopped at ${r.failed.action}[${r.failed.idx}]: ${r.failed.reason.replace(/\.$/, "")}; fix the cause and run grex teardown ${r.id} again (grex sync reinstalls it).`,
    );
  },
  render(r, _p, style) {
    const lines = stepLines(r.steps as unknown as StepLike[], style);
    if (r.dry_run) return [...lines, `would tear down ${r.id} (${r.steps.length} step(s))`].join("\n");
    const changed = r.steps.filter((s) => s.result === "performed_change").length;
    return [...lines, `tore down ${r.id}: ${changed} change(s) undone${r.teardown === "failed" ? ", stopped on a failure" : ""}; it stays registered, grex sync reinstalls it`].join("\n");
  },
});
