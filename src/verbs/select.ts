// Which packs a verb works on, by the one filter grammar (core/base/filter.ts):
// `ls`, `status`, `exec`, `run`, `sync` and `update` all select here, on the
// CLI and over MCP alike. Static terms are checked against every registered
// pack first (a typo is exit 2 with a suggestion); state terms read each
// candidate's work tree the way `status` does, and only for packs whose
// static terms already match.
import { type PackFacts, parseFilters } from "../core/base/filter.ts";
import { toGrexError } from "../core/base/errors.ts";
import type { PackStatus } from "../core/sync/pack-status.ts";
import type { PackNode, WorkspaceView } from "../core/workspace/packs.ts";
import type { VerbContext } from "./types.ts";

export interface Selected {
  packs: PackNode[];
  /** The status rows read to decide state terms (by id), for a caller that reports them anyway. */
  rows: Map<string, PackStatus>;
}

export interface InspectExtras {
  staleMs: number | null;
  /** One report: a file every pack's setup checks is read once. */
  reads: Map<string, string | null>;
}

/** One pack's status row as `status` reports it; an unreadable pack is its own `invalid` row. */
export async function statusRow(ctx: VerbContext, view: WorkspaceView, n: PackNode, extras: InspectExtras): Promise<PackStatus> {
  const { childFacts, inspectPack, invalidStatus } = await import("../core/sync/pack-status.ts");
  try {
    return await inspectPack(view.ws, n, { ...childFacts(view.packs, n), staleMs: extras.staleMs, interrupted: view.interrupted.has(n.id), reads: extras.reads });
  } catch (err) {
    const e = toGrexError(err);
    if (e.kind === "cancelled") throw e;
    return invalidStatus(n, e);
  }
}

/** What the filter's state terms read, from a status row. */
export function factsOf(row: PackStatus, n: PackNode): PackFacts {
  return {
    missing: row.drift === "missing",
    dirty: row.dirty,
    ahead: row.ahead ?? 0,
    behind: row.behind ?? 0,
    branch: row.branch,
    tracked: n.lock?.branch ?? null,
    state: row.drift,
  };
}

/**
 * The candidates `filter` selects (in their order). A static term no
 * registered pack matches is a usage error; state terms that leave nothing
 * selected say so once on stderr and select nothing.
 */
export async function selectPacks(
  ctx: VerbContext,
  view: WorkspaceView,
  candidates: readonly PackNode[],
  filter: string | readonly string[] | undefined,
  extras: InspectExtras = { staleMs: null, reads: new Map() },
): Promise<Selected> {
  const sel = parseFilters(filter);
  const rows = new Map<string, PackStatus>();
  if (sel.all) return { packs: [...candidates], rows };
  sel.check(view.packs);
  if (!sel.needsFacts) return { packs: candidates.filter((n) => sel.matches(n)), rows };
  const maybe = candidates.filter((n) => sel.mayMatch(n));
  await Promise.all(maybe.map(async (n) => rows.set(n.id, await statusRow(ctx, view, n, extras))));
  const packs = maybe.filter((n) => sel.matches(n, factsOf(rows.get(n.id) as PackStatus, n)));
  if (packs.length === 0) {
    ctx.warn(`no pack matches ${sel.stateTerms.map((t) => `'${t}'`).join(", ")} now, so nothing is selected (--filter ${[filter].flat().map((f) => `'${f}'`).join(" ")})`);
  }
  return { packs, rows };
}

/** `sync`/`update`: the top-level packs `filter` selects (each then synced with its subtree), or undefined for no filter. */
export async function selectedTopLevel(ctx: VerbContext, filter: string | readonly string[] | undefined): Promise<ReadonlySet<string> | undefined> {
  if (parseFilters(filter).all) return undefined;
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
  const { packs } = await selectPacks(ctx, view, view.packs.filter((n) => n.parent === null), filter);
  return new Set(packs.map((n) => n.id));
}
