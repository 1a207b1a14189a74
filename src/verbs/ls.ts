// `grex ls`: the registered packs (children included), from the manifest and lockfile only.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { BUILTIN_PACK_TYPES } from "../core/base/registry.ts";
import { GrexError, toGrexError } from "../core/base/errors.ts";
import { parseFilters } from "../core/base/filter.ts";
import { loadWorkspaceView } from "../core/workspace/packs.ts";
import { filterParam } from "./common.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import { defineVerb, READS_ONLY } from "./types.ts";

// The result's schema is built on first use: only MCP's tools/list (and the
// tests) read it, and `ls` is timed from its start.
let resultSchema: ReturnType<typeof buildResult> | undefined;
function buildResult() {
  const PackRow = v.object({
    id: v.string(),
    type: v.string(),
    path: v.string(),
    url: v.string(),
    ref: v.nullable(v.string()),
    sha: v.nullable(v.string()),
    installed_at: v.nullable(v.string()),
    depth: v.number(),
    parent: v.nullable(v.string()),
    /** Its tags (a child carries its top-level pack's), sorted. */
    tags: v.array(v.string()),
    // With `long` only: why the pack's pack.yaml cannot be read (null when it can).
    error: v.optional(v.nullable(v.object({ kind: v.string(), file: v.nullable(v.string()), field: v.nullable(v.string()), reason: v.string() }))),
  });
  return v.object({ packs: v.array(PackRow) });
}

/**
 * `ls --long` only: the packs whose pack.yaml cannot be read, each with its
 * error. Plain `ls` reads the manifest and lockfile alone and stays fast.
 */
async function unreadablePacks(packs: ReadonlyArray<{ id: string; dir: string }>) {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  const { existsSync } = await import("node:fs");
  const out = new Map<string, { kind: string; file: string | null; field: string | null; reason: string }>();
  for (const p of packs) {
    if (!existsSync(p.dir)) continue;
    try {
      await loadPackYaml(p.dir);
    } catch (err) {
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      const str = (x: unknown) => (typeof x === "string" && x !== "" ? x : null);
      out.set(p.id, { kind: e.kind, file: str(e.data?.file), field: str(e.data?.field), reason: e.message });
    }
  }
  return out;
}

export const lsVerb = defineVerb({
  name: "ls",
  description:
    "List registered packs, children included, in pre-order (each parent followed by its subtree), with type, path, url, pinned ref, installed sha and install time. Read-only.",
  params: v.strictObject({
    type: desc(v.optional(v.string()), "Only packs of this type. Default: every type.", BUILTIN_PACK_TYPES),
    long: desc(v.optional(v.boolean(), false), "Changes the CLI's text only; the tool's result always carries url, ref, sha and installed_at. Default false."),
    tree: desc(v.optional(v.boolean(), false), "Changes the CLI's text only (children indented); the result's depth and parent give the tree. Default false."),
    filter: filterParam,
  }),
  get result() {
    return (resultSchema ??= buildResult());
  },
  readOnly: true,
  effects: () => READS_ONLY,
  destructive: false,
  mcp: true,
  examples: ["grex ls", "grex ls --tree", "grex ls --long --filter 'tools/*'"],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--type <type>", description: "Only packs of this type" },
      { flag: "--long", description: "Show url, ref, sha and install time" },
      { flag: "--tree", description: "Indent children under their parent" },
    ],
  },
  async run(ctx, params) {
    const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
    // Static filters are decided here without loading anything; state terms read work trees (select.ts).
    const sel = parseFilters(params.filter);
    if (!sel.all) sel.check(view.packs);
    const keep = sel.all ? undefined : sel.needsFacts ? new Set((await (await import("./select.ts")).selectPacks(ctx, view, view.packs, params.filter)).packs) : undefined;
    const staticKeep = sel.all || sel.needsFacts ? undefined : sel;
    const type = params.type;
    // One plain loop: on a large workspace this runs once per pack in cold code.
    const packs = [];
    const invalid = params.long ? await unreadablePacks(view.packs) : undefined;
    for (const p of view.packs) {
      if ((type !== undefined && p.type !== type) || (keep !== undefined && !keep.has(p)) || (staticKeep !== undefined && !staticKeep.matches(p))) continue;
      packs.push({
        ...(invalid ? { error: invalid.get(p.id) ?? null } : {}),
        id: p.id,
        type: p.type,
        path: p.path,
        url: p.url,
        ref: p.ref,
        sha: p.lock?.sha ?? null,
        installed_at: p.lock?.installed_at ?? null,
        depth: p.depth,
        parent: p.parent,
        tags: p.tags as string[],
      });
    }
    return { packs };
  },
  failure(r) {
    // `--long` read every pack.yaml: one that cannot be read is a problem, with its own exit code (3, or 8 for an unknown action or type).
    const bad = r.packs.filter((p) => p.error);
    const first = bad[0]?.error;
    if (!first) return undefined;
    return new GrexError(
      first.kind === "plugin" ? "plugin" : "integrity",
      `${bad.length} pack${bad.length === 1 ? "" : "s"} could not be read (first: ${bad[0]?.id}: ${first.reason.replace(/\.$/, "")}); the other packs are listed above.`,
    );
  },
  render(r, params, style) {
    if (r.packs.length === 0) {
      return params.filter !== undefined || params.type !== undefined
        ? "No registered pack matches the filter; run `grex ls` without it to see them all."
        : "No packs registered; add one with `grex add <url>`.";
    }
    const c = paint(style.color);
    // The type as --json gives it (a plain repository, with no pack.yaml, is a meta pack with no children).
    const type = (p: (typeof r.packs)[number]) => c.dim(p.type);
    const rows = r.packs.map((p) => {
      const indent = params.tree ? "  ".repeat(p.depth) : "";
      const branch = params.tree && p.depth > 0 ? (style.plain ? "- " : "└ ") : "";
      const id = `${indent}${branch}${c.bold(p.id)}`;
      const tags = p.tags.length > 0 ? c.dim(p.tags.map((t) => `#${t}`).join(" ")) : "";
      if (!params.long) return tags ? [id, type(p), tags] : [id, type(p)];
      const sha = p.sha ? p.sha.slice(0, 12) : "-";
      return [id, type(p), p.url, p.ref ?? "HEAD", sha, p.installed_at ?? "never", p.tags.join(",") || "-", ...(p.error ? [c.red(`invalid: ${p.error.reason}`)] : [])];
    });
    const header = params.long ? [["ID", "TYPE", "URL", "REF", "SHA", "INSTALLED", "TAGS"].map(c.dim)] : [];
    return table([...header, ...rows]);
  },
});
