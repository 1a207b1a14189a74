// `grex status`: compare every pack on disk with what the lockfile says was installed.
import { existsSync } from "node:fs";
import * as v from "valibot";
import { GrexError, usageError } from "../core/errors.ts";
import { parseFilter } from "../core/filter.ts";
import { backendFor, isGitRepo, readHeadSync } from "../core/git/backend.ts";
import { loadWorkspaceView, type PackNode } from "../core/packs.ts";
import { filterParam } from "./common.ts";
import { defineVerb, READS_ONLY } from "./types.ts";

const Drift = v.picklist(["clean", "dirty", "missing", "untracked", "stale"]);

const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** `90s`, `15m`, `24h`, `7d`, `2w` → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  if (!m) throw usageError(`Invalid --stale-after '${text}': use a number and a unit s, m, h, d or w (e.g. 7d).`, { field: "stale_after" });
  return Number(m[1]) * (UNITS[m[2] as string] as number);
}

const Row = v.object({
  id: v.string(),
  path: v.string(),
  depth: v.number(),
  on_disk: v.boolean(),
  dirty: v.boolean(),
  sha_match: v.boolean(),
  actions_hash_match: v.boolean(),
  drift: Drift,
});
type Row = v.InferOutput<typeof Row>;

async function inspect(p: PackNode, childShas: string[], staleMs: number | null): Promise<Row> {
  const base = { id: p.id, path: p.path, depth: p.depth };
  if (!existsSync(p.dir) || !isGitRepo(p.dir)) {
    return { ...base, on_disk: existsSync(p.dir), dirty: false, sha_match: false, actions_hash_match: false, drift: "missing" };
  }
  const dirty = await backendFor(p.url || p.dir).isDirty(p.dir);
  const head = readHeadSync(p.dir);
  const lock = p.lock;
  const shaMatch = lock !== undefined && head !== null && head.sha === lock.sha;
  let hashMatch = false;
  if (lock) {
    const { computeActionsHash } = await import("../core/packtypes/index.ts");
    const { loadPackYaml } = await import("../core/pack/load.ts");
    const manifest = await loadPackYaml(p.dir); // a broken pack.yaml is an integrity error naming it, not "stale"
    hashMatch = computeActionsHash(manifest?.type ?? p.type, p.dir, manifest, childShas) === lock.actions_hash;
  }
  const old = lock !== undefined && staleMs !== null && Date.now() - Date.parse(lock.installed_at) > staleMs;
  const drift: Row["drift"] = dirty
    ? "dirty"
    : lock === undefined
      ? "untracked"
      : !shaMatch || !hashMatch || old
        ? "stale"
        : "clean";
  return { ...base, on_disk: true, dirty, sha_match: shaMatch, actions_hash_match: hashMatch, drift };
}

export const statusVerb = defineVerb({
  name: "status",
  description:
    "Report drift for every pack (children included): whether it is on disk, has uncommitted changes, is at the installed commit and has the installed setup; drift is clean, dirty, missing, untracked (never synced) or stale. Read-only.",
  params: v.strictObject({
    stale_after: v.optional(v.string()),
    fail_on_drift: v.optional(v.boolean(), false),
    filter: filterParam,
  }),
  result: v.object({ packs: v.array(Row) }),
  readOnly: true,
  effects: () => READS_ONLY,
  destructive: false,
  mcp: true,
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--stale-after <dur>", description: "Also call packs installed longer ago than this stale (e.g. 7d)" },
      { flag: "--fail-on-drift", description: "Exit 7 when any pack is not clean" },
    ],
  },
  async run(ctx, p) {
    const staleMs = p.stale_after === undefined ? null : parseDuration(p.stale_after);
    const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
    const keep = parseFilter(p.filter);
    const rows = await Promise.all(
      view.packs
        .filter((n) => keep(n))
        .map((n) => {
          const childShas = view.packs
            .filter((c) => c.parent === n.id)
            .map((c) => readHeadSync(c.dir)?.sha ?? "");
          return inspect(n, childShas, staleMs);
        }),
    );
    return { packs: rows };
  },
  failure(r, p) {
    if (!p.fail_on_drift) return undefined;
    const drifted = r.packs.filter((x) => x.drift !== "clean");
    if (drifted.length === 0) return undefined;
    return new GrexError("drift", `${drifted.length} pack(s) drifted (first: ${drifted[0]?.id} is ${drifted[0]?.drift}); run grex sync.`);
  },
  render(r, _p, style) {
    if (r.packs.length === 0) return "No packs registered.";
    return r.packs
      .map((x) => `${"  ".repeat(x.depth)}${x.drift === "clean" ? (style.plain ? "clean" : "✓") : x.drift}  ${x.id}`)
      .join("\n");
  },
});
