// `grex update`: re-resolve refs (optionally re-pinning them) and reinstall packs whose commit or setup changed.
import * as v from "valibot";
import { packOpError, usageError } from "../core/base/errors.ts";
import { unknownPackId } from "../core/base/pack-ids.ts";
import { appendEvents, appendEventsLocked, makeEvent, readManifest, readManifestLocked, type ManifestEvent, type PackEntry } from "../core/workspace/manifest.ts";
import { normaliseTags } from "../core/workspace/manifest-fold.ts";
import { withManifestLock } from "../core/locks/locks.ts";
import type { Workspace } from "../core/base/workspace.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { renderPackTable, streamPackRows, summaryLine, syncSelectionEntries } from "./sync-shared.ts";
import { tagList } from "./common.ts";
import { desc } from "./describe.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";

const Result = v.object({
  verb: v.literal("update"),
  dry_run: v.boolean(),
  packs: v.array(
    v.object({
      id: v.string(),
      synced: v.boolean(),
      reinstalled: v.boolean(),
      reason: v.picklist(["sha-changed", "hash-changed", "forced", "none"]),
      result: v.picklist(["ok", "skipped", "dirty", "failed"]),
      message: v.string(),
    }),
  ),
  /** With dissociate: each pack that borrowed objects (the shared object cache) and how many it now holds itself. */
  dissociated: v.array(v.object({ id: v.string(), objects: v.number() })),
  /** The packs named with tag/untag, with their tags now (in a dry run: as they would be). */
  tagged: v.array(v.object({ id: v.string(), tags: v.array(v.string()) })),
});

export const updateVerb = defineVerb({
  name: "update",
  description:
    "Update packs: fetch and move each to its ref (re-pinning it first when ref is given, recorded in the manifest), then reinstall packs whose commit or setup changed (or all with force). Optional ids limit it to those packs. tag/untag change the named packs' tags (recorded in the manifest); given without ref, nothing is fetched or moved.",
  params: v.strictObject({
    ...syncSelectionEntries,
    tag: tagList("Tags to give the packs named in ids, e.g. [\"frontend\"]. Default []. Without ref, only the tags change: nothing is fetched or moved."),
    untag: tagList("Tags to take off the packs named in ids, e.g. [\"legacy\"]. Default []."),
    depth: desc(
      v.optional(v.pipe(v.number(), v.integer("must be a whole number"), v.minValue(0, "must be 0"), v.maxValue(0, "must be 0: a pack's depth is chosen when it is added (grex rm, then grex add --depth <n>)"))),
      "0: fetch the whole history of the shallow packs named in ids (git fetch --unshallow) and record them as full clones again (the manifest's depth is dropped). Only 0 is accepted.",
    ),
    dissociate: desc(
      v.optional(v.boolean(), false),
      "true: copy the objects the selected packs (ids, else all) borrow from the shared object cache into each pack's own store and stop borrowing, as git repack -a -d after --reference does; nothing is fetched or moved. Default false.",
    ),
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun(MUTATION_PASS),
  destructive: false,
  mcp: true,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: ["grex update", "grex update tools/mine --ref v2.0.0", "grex update big-repo --depth 0"],
  cli: {
    args: "[...ids]",
    positionals: ["...ids"],
    flags: [
      { flag: "--ref <ref>", description: "Re-pin the given packs to this branch, tag or sha (recorded)" },
      { flag: "--force", description: "Reinstall every selected pack; also move dirty packs" },
      { flag: "--tag <tag>", description: "Add this tag to the named packs (repeatable; alone, changes only tags)", repeatable: true },
      { flag: "--untag <tag>", description: "Remove this tag from the named packs (repeatable)", repeatable: true },
      { flag: "--depth <n>", description: "0: fetch the full history of the named shallow packs and record them as full clones", number: true },
      { flag: "--dissociate", description: "Copy the objects packs borrow from the object cache into each pack; nothing is fetched" },
      allowOutsideHomeFlag,
    ],
  },
  async run(ctx, p, signal, progress) {
    const ws = ctx.workspace();
    if (p.ref !== undefined && p.ids.length === 0) {
      throw usageError("--ref re-pins packs, so name them: grex update <id...> --ref <ref>.", { field: "ref" });
    }
    if (p.depth !== undefined && p.ids.length === 0) {
      throw usageError("--depth 0 brings back the full history of the packs you name: grex update <id...> --depth 0.", { field: "depth" });
    }
    const retag = p.tag.length > 0 || p.untag.length > 0;
    if (retag && p.ids.length === 0) {
      throw usageError("--tag and --untag change the packs you name: grex update <id...> --tag <tag>.", { field: p.tag.length > 0 ? "tag" : "untag" });
    }
    const both = p.tag.find((t) => p.untag.includes(t));
    if (both !== undefined) throw usageError(`Tag '${both}' is given to both --tag and --untag; keep one.`, { field: "untag" });
    if (p.dissociate) {
      if (retag || p.ref !== undefined || p.depth !== undefined) throw usageError("--dissociate runs alone: leave out --ref, --depth, --tag and --untag.", { field: "dissociate" });
      const { dissociatePacks } = await import("./update-dissociate.ts");
      return { verb: "update" as const, dry_run: p.dry_run, packs: [], tagged: [], dissociated: await dissociatePacks(ctx, p.ids, p.dry_run, signal) };
    }
    const tagged = retag ? await retagPacks(ws, p, ctx.warn, signal) : [];
    if (retag && p.ref === undefined && p.depth === undefined) {
      // Only the tags change: nothing to fetch, move or install.
      return { verb: "update" as const, dry_run: p.dry_run, packs: [], tagged, dissociated: [] };
    }
    if (p.ref !== undefined || p.depth !== undefined) {
      const { state } = await readManifest(ws, { warn: ctx.warn });
      for (const id of p.ids) {
        if (!state.has(id)) throw unknownPackId(id, state.keys(), ws.manifestPath);
      }
    }
    const { runSync } = await import("../core/sync/engine.ts"); // lazy: `ls` and `--help` never load the engine
    const selected = await (await import("./select.ts")).selectedTopLevel(ctx, p.filter);
    // Known as each pack completes (its result alone decides it), so streamed rows say it too.
    const unpinned = (r: { id: string; result: string }) =>
      p.ref !== undefined && !p.dry_run && p.ids.includes(r.id) && r.result !== "ok";
    const note = <R extends { id: string; result: string; message: string }>(r: R): R =>
      unpinned(r) ? { ...r, message: `${r.message.replace(/\.$/, "")}; the pin to '${p.ref}' was not recorded` } : r;
    const report = await runSync(
      ctx,
      {
        mode: "update",
        ids: p.ids,
        only: [],
        selected,
        ref: p.ref ?? null,
        force: p.force,
        failFast: false,
        recursive: true,
        dryRun: p.dry_run,
        parallel: p.parallel,
        unshallow: p.depth === 0,
        allowOutsideHome: allowsOutsideHome(ctx, p),
        onPackDone: streamPackRows(ctx.rows, (r) => updateRow(note(r))),
      },
      signal,
      progress,
    );
    // The new pin is recorded only for packs that reached it; the others keep their old pin.
    const pinned = p.ref === undefined || p.dry_run ? [] : report.packs.filter((r) => p.ids.includes(r.id) && r.result === "ok");
    if (pinned.length > 0) await appendEvents(ws, pinned.map((r) => makeEvent("update", r.id, { ref: p.ref ?? null })), signal);
    // Full history again: recorded only for packs that got it.
    if (p.depth === 0 && !p.dry_run) await recordFullHistory(ws, report.packs.filter((r) => p.ids.includes(r.id) && r.result === "ok").map((r) => r.id), ctx.warn, signal);
    return {
      verb: "update" as const,
      dry_run: p.dry_run,
      tagged,
      dissociated: [],
      packs: report.packs.map((r) => ({
        id: r.id,
        synced: r.result === "ok",
        reinstalled: r.reinstalled,
        reason: r.reason === "never-installed" ? ("hash-changed" as const) : r.reason,
        result: r.result,
        message: note(r).message,
      })),
    };
  },
  failure(r) {
    const failed = r.packs.filter((p) => p.result === "failed");
    if (failed.length === 0) return undefined;
    return packOpError(`${failed.length} pack(s) failed to update (first: ${failed[0]?.id}: ${failed[0]?.message}).`);
  },
  render(r, p, style) {
    if (r.dissociated.length > 0 || p.dissociate) {
      if (r.dissociated.length === 0) return "no pack borrows objects: nothing to copy";
      return r.dissociated.map((d) => `${r.dry_run ? "would copy" : "copied"} the borrowed objects into ${d.id}${r.dry_run ? "" : ` (${d.objects} objects); it no longer borrows`}`).join("\n");
    }
    const tagLines = r.tagged.map((t) => `${r.dry_run ? "would tag" : "tagged"} ${t.id}: ${t.tags.length > 0 ? t.tags.join(", ") : "(no tags)"}`);
    if (r.packs.length === 0 && tagLines.length > 0 && p.ref === undefined) return tagLines.join("\n");
    const count = (res: string) => r.packs.filter((p) => p.result === res).length;
    const summary = summaryLine(r.dry_run, { total: r.packs.length, ok: count("ok"), skipped: count("skipped"), dirty: count("dirty"), failed: count("failed") });
    if (style.rowsStreamed) return [...tagLines, summary].join("\n");
    return [...tagLines, renderPackTable(r.packs.map(updateRow), style), summary].filter((l) => l !== "").join("\n");
  },
});

/** A pack's row: what happened, and whether (and why) its setup ran again. */
function updateRow<P extends { id: string; result: string; message: string; reinstalled: boolean; reason: string }>(p: P): P {
  const reason = p.reason === "never-installed" ? "hash-changed" : p.reason;
  return { ...p, message: [p.message, p.reinstalled ? `reinstalled (${reason})` : ""].filter((m) => m !== "").join("; ") };
}

/** `update --depth 0`: drop the recorded depth of the packs that now hold their full history (a pack without one gets no line). */
async function recordFullHistory(ws: Workspace, ids: string[], warn: (m: string) => void, signal: AbortSignal): Promise<void> {
  if (ids.length === 0) return;
  await withManifestLock(ws, signal, () => {
    const { state } = readManifestLocked(ws, { warn });
    const events = ids.filter((id) => state.get(id)?.depth !== undefined).map((id) => makeEvent("update", id, { depth: null }));
    if (events.length > 0) appendEventsLocked(ws, events, { warn });
  });
}

/** Record the tag changes of `update --tag/--untag` for the named packs (decided under the manifest lock); a pack whose tags stay the same gets no line. */
async function retagPacks(
  ws: Workspace,
  p: { ids: string[]; tag: string[]; untag: string[]; dry_run: boolean },
  warn: (m: string) => void,
  signal: AbortSignal,
): Promise<Array<{ id: string; tags: string[] }>> {
  const decide = (state: Map<string, PackEntry>) => {
    const out: Array<{ id: string; tags: string[] }> = [];
    const events: ManifestEvent[] = [];
    for (const id of p.ids) {
      const pack = state.get(id);
      if (!pack) throw unknownPackId(id, state.keys(), ws.manifestPath);
      const before = pack.tags ?? [];
      const after = normaliseTags([...before.filter((t) => !p.untag.includes(t)), ...p.tag]);
      out.push({ id, tags: after });
      if (after.join("\0") !== before.join("\0")) events.push(makeEvent("update", id, { tags: after }));
    }
    return { out, events };
  };
  if (p.dry_run) return decide((await readManifest(ws, { warn })).state).out;
  return withManifestLock(ws, signal, () => {
    const d = decide(readManifestLocked(ws, { warn }).state);
    if (d.events.length > 0) appendEventsLocked(ws, d.events, { warn });
    return d.out;
  });
}
