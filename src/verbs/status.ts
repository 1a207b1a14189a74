// `grex status`: each pack's state (children included) — on disk, installed,
// dirty, on its branch, setup unchanged and in place, level with its remote.
// `fetch` first refreshes every pack's remote-tracking refs, in parallel.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { GrexError, toGrexError, usageError } from "../core/base/errors.ts";
import { parseFilter } from "../core/base/filter.ts";
import { unknownPackId } from "../core/base/pack-ids.ts";
import { withBackendLock } from "../core/locks/locks.ts";
import type { PackStatus } from "../core/sync/pack-status.ts";
import { PACK_STATES } from "../core/sync/pack-states.ts";
import { loadWorkspaceView, type PackNode } from "../core/workspace/packs.ts";
import { capScheduler } from "../core/locks/scheduler.ts";
import { dryRunParam, filterParam, parallelParam } from "./common.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import { defineVerb, READS_ONLY, type VerbContext } from "./types.ts";

const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** `90s`, `15m`, `24h`, `7d`, `2w` → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  if (!m) throw usageError(`Invalid --stale-after '${text}': use a number and a unit s, m, h, d or w (e.g. 7d).`, { field: "stale_after" });
  return Number(m[1]) * (UNITS[m[2] as string] as number);
}

// The result's schema is built on first use: only MCP's tools/list (and the
// tests) read it, and building it cost a report about 0.2 ms of its start.
let resultSchema: ReturnType<typeof buildResult> | undefined;
function buildResult() {
  const Row = v.object({
    id: v.string(),
    path: v.string(),
    depth: v.number(),
    on_disk: v.boolean(),
    dirty: v.boolean(),
    sha_match: v.boolean(),
    actions_hash_match: v.boolean(),
    drift: v.picklist(PACK_STATES),
    branch: v.nullable(v.string()),
    ahead: v.nullable(v.number()),
    behind: v.nullable(v.number()),
    setup_drift: v.array(v.object({ action: v.string(), idx: v.number(), where: v.string(), path: v.string(), differs: v.string() })),
    install_error: v.nullable(v.string()),
    off_branch: v.nullable(v.string()),
    missing_filters: v.array(v.string()),
    submodules_moved: v.array(v.object({ path: v.string(), recorded: v.string(), head: v.nullable(v.string()) })),
    error: v.nullable(v.object({ kind: v.string(), file: v.nullable(v.string()), field: v.nullable(v.string()), reason: v.string() })),
    fetch_url: v.nullable(v.string()),
  });
  return v.object({ packs: v.array(Row) });
}

/** Refresh origin's tracking refs of every pack on disk, in parallel under the scheduler; failures become warnings. */
async function fetchAll(ctx: VerbContext, packs: PackNode[], parallel: number | undefined, signal: AbortSignal): Promise<void> {
  const { backendFor, isGitRepo } = await import("../core/git/backend.ts");
  const scheduler = capScheduler(ctx.scheduler, parallel);
  const ws = ctx.workspace();
  await Promise.all(
    packs
      .filter((n) => n.url !== "" && isGitRepo(n.dir))
      .map((n) =>
        scheduler
          .withPermit(signal, () => withBackendLock(ws, n.dir, signal, () => backendFor(n.url).fetch(n.dir, n.url, { signal })))
          .catch((err: unknown) => {
            const e = toGrexError(err);
            if (e.kind === "cancelled") throw e;
            ctx.warn(`could not fetch '${n.id}' (${e.message}); its ahead/behind are as of the last fetch`);
          }),
      ),
  );
}

/** A status row: the pack's state, and where it is fetched from when the user's url.<base>.insteadOf rewrites its URL (else null). */
type StatusRow = PackStatus & { fetch_url: string | null };

function describe(x: StatusRow): string {
  if (x.error) return x.error.reason;
  const parts: string[] = [];
  if (x.fetch_url !== null) parts.push(`fetched from ${x.fetch_url}`);
  if (x.branch !== null) parts.push(x.ahead === null ? x.branch : `${x.branch} +${x.ahead}/-${x.behind}`);
  if (x.drift === "not-installed" && x.install_error) parts.push(x.install_error);
  if (x.drift === "off-branch" && x.off_branch) parts.push(x.off_branch);
  for (const d of x.setup_drift) parts.push(`${d.action} ${d.path}: ${d.differs}`);
  for (const m of x.submodules_moved) parts.push(`submodule ${m.path} at ${m.head?.slice(0, 7) ?? "an unreadable HEAD"}, recorded ${m.recorded.slice(0, 7)}`);
  if (x.missing_filters.length > 0) parts.push(`needs git filter ${x.missing_filters.join(", ")} (not configured: files kept as stored)`);
  return parts.join("; ");
}

/** Which packs the ids name: each id and everything under it; an unknown id is a usage error with a suggestion. */
function selectIds(packs: readonly PackNode[], ids: readonly string[], manifestPath: string): (id: string) => boolean {
  if (ids.length === 0) return () => true;
  const known = new Set(packs.map((n) => n.id));
  for (const id of ids) if (!known.has(id)) throw unknownPackId(id, known, manifestPath);
  return (id) => ids.some((want) => id === want || id.startsWith(`${want}/`));
}

export const statusVerb = defineVerb({
  name: "status",
  description:
    "Report every pack's state (children included), or only the packs the optional ids name (with their children): invalid (its pack.yaml or state file cannot be read; error names file, field, reason), clean, dirty, missing, not-installed (with install_error), setup-changed, setup-drift (with setup_drift: action, path, what differs), behind, ahead, diverged or off-branch, plus branch and ahead/behind against origin. fetch: refresh remote-tracking refs first. Changes no pack.",
  params: v.strictObject({
    ids: desc(
      v.optional(v.array(v.string()), []),
      "Registered pack ids to report, as ls shows them (their children come along), e.g. [\"dotfiles\"]. Default []: every registered pack.",
    ),
    stale_after: desc(
      v.optional(v.string()),
      "Also report packs installed longer ago than this as setup-changed: a whole number and a unit s, m, h, d or w (90s, 15m, 24h, 7d, 2w). Default: no age limit.",
    ),
    fail_on_drift: desc(
      v.optional(v.boolean(), false),
      "true: the call fails (isError, code -32004, kind drift) when any pack is not clean; the report is still returned. Default false.",
    ),
    fetch: desc(
      v.optional(v.boolean(), false),
      "true: fetch every pack from origin first (network; updates remote-tracking refs only, never the checkout) so ahead/behind are current. Default false: as of the last fetch.",
    ),
    filter: filterParam,
    parallel: parallelParam,
    dry_run: dryRunParam,
  }),
  get result() {
    return (resultSchema ??= buildResult());
  },
  readOnly: true,
  effects: () => READS_ONLY,
  destructive: false,
  mcp: true,
  // --dry-run only changes what --fetch does on the CLI; a read-only tool offers none.
  cliOnly: ["dry_run"],
  examples: ["grex status", "grex status dotfiles --fail-on-drift", "grex status --stale-after 7d --json"],
  cli: {
    args: "[...ids]",
    positionals: ["...ids"],
    flags: [
      { flag: "--stale-after <dur>", description: "Also call packs installed longer ago than this setup-changed (e.g. 7d)" },
      { flag: "--fail-on-drift", description: "Exit 7 when any pack is not clean" },
      { flag: "--fetch", description: "Fetch every pack first (in parallel) so behind/ahead are current" },
    ],
  },
  async run(ctx, p, signal) {
    const staleMs = p.stale_after === undefined ? null : parseDuration(p.stale_after);
    const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
    const keep = parseFilter(p.filter);
    const chosen = selectIds(view.packs, p.ids, view.ws.manifestPath);
    const picked = view.packs.filter((n) => keep(n) && chosen(n.id));
    // A fetch writes remote-tracking refs: a dry run only says it would.
    if (p.fetch && p.dry_run) ctx.warn(`dry run: would fetch ${picked.length} pack(s) first; ahead/behind are as of the last fetch`);
    else if (p.fetch) await fetchAll(ctx, picked, p.parallel, signal);
    const { childFacts, inspectPack } = await import("../core/sync/pack-status.ts");
    const { mirrorOf } = await import("../core/git/transport/url-rewrite.ts");
    const mirror = mirrorOf(); // the user's git config, read once per report
    const reads = new Map<string, string | null>(); // one report: a file every pack's setup checks (~/.bashrc) is read once
    const states = await Promise.all(
      picked.map(async (n) => {
        try {
          const row = await inspectPack(view.ws, n, { ...childFacts(view.packs, n), staleMs, interrupted: view.interrupted.has(n.id), reads });
          ctx.debug(1, `${n.id}: ${row.drift}; HEAD ${row.branch ?? "detached"}, at the recorded commit: ${row.sha_match}, setup unchanged: ${row.actions_hash_match}, dirty: ${row.dirty}, installed: ${n.lock?.installed_at || "never"}`);
          return row;
        } catch (err) {
          // One pack's unreadable pack.yaml or state file is its own row; the others are reported normally.
          const e = toGrexError(err);
          if (e.kind === "cancelled") throw e;
          const { invalidStatus } = await import("../core/sync/pack-status.ts");
          return invalidStatus(n, e);
        }
      }),
    );
    const rows: StatusRow[] = states.map((row, i) => ({ ...row, fetch_url: mirror((picked[i] as PackNode).url) }));
    return { packs: rows };
  },
  failure(r, p) {
    const invalid = r.packs.filter((x) => x.error !== null);
    const first = invalid[0]?.error;
    if (first) {
      // A pack grex cannot read is a problem whatever the flags: the exit code is its error's (3 integrity, 8 unknown action or type).
      const kind = (["integrity", "plugin"].includes(first.kind) ? first.kind : "integrity") as "integrity" | "plugin";
      return new GrexError(
        kind,
        `${invalid.length} pack${invalid.length === 1 ? "" : "s"} could not be read (first: ${invalid[0]?.id}: ${first.reason.replace(/\.$/, "")}); the other packs are reported above.`,
      );
    }
    if (!p.fail_on_drift) return undefined;
    const drifted = r.packs.filter((x) => x.drift !== "clean");
    if (drifted.length === 0) return undefined;
    return new GrexError("drift", `${drifted.length} pack(s) drifted (first: ${drifted[0]?.id} is ${drifted[0]?.drift}); see grex status for what to run.`);
  },
  render(r, p, style) {
    if (r.packs.length === 0) {
      return p.filter !== undefined
        ? "No registered pack matches the filter; run `grex status` without it to see them all."
        : "No packs registered; add one with `grex add <url>`.";
    }
    const c = paint(style.color);
    const colour = (state: string) => (state === "clean" ? c.green : state === "missing" || state === "diverged" || state === "invalid" ? c.red : c.yellow)(state);
    return table(
      r.packs.map((x) => {
        const extra = describe(x);
        return [`${"  ".repeat(x.depth)}${c.bold(x.id)}`, colour(String(x.drift)), ...(extra ? [c.dim(extra)] : [])];
      }),
    );
  },
});
