// `grex status`: each pack's state (children included) — on disk, installed,
// dirty, on its branch, setup unchanged and in place, level with its remote.
// `fetch` first refreshes every pack's remote-tracking refs, in parallel.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { GrexError, toGrexError, usageError } from "../core/base/errors.ts";
import { parseFilters } from "../core/base/filter.ts";
import { unknownPackId } from "../core/base/pack-ids.ts";
import { withBackendLock } from "../core/locks/locks.ts";
import type { PackStatus } from "../core/sync/pack-status.ts";
import { PACK_STATES } from "../core/sync/pack-states.ts";
import { loadWorkspaceView, type PackNode } from "../core/workspace/packs.ts";
import { capScheduler } from "../core/locks/scheduler.ts";
import { dryRunParam, filterParam, parallelParam } from "./common.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import { ageOf } from "../core/base/age.ts";
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
    /** Why ahead/behind are null for a branch with an upstream: a shallow clone whose merge base is below its history. */
    ahead_behind_unknown: v.nullable(v.string()),
    setup_drift: v.array(v.object({ action: v.string(), idx: v.number(), where: v.string(), path: v.string(), differs: v.string() })),
    install_error: v.nullable(v.string()),
    off_branch: v.nullable(v.string()),
    topic: v.nullable(
      v.object({
        branch: v.string(),
        base: v.nullable(v.string()),
        ahead: v.nullable(v.number()),
        behind: v.nullable(v.number()),
        upstream: v.nullable(v.string()),
        pushed: v.boolean(),
      }),
    ),
    missing_filters: v.array(v.string()),
    submodules_moved: v.array(v.object({ path: v.string(), recorded: v.string(), head: v.nullable(v.string()) })),
    error: v.nullable(v.object({ kind: v.string(), file: v.nullable(v.string()), field: v.nullable(v.string()), reason: v.string() })),
    /** Its tags (a child carries its top-level pack's), sorted. */
    tags: v.array(v.string()),
    /** Paths git status would list, by kind (0 for a clean pack; null when not on disk or unreadable). */
    staged: v.nullable(v.number()),
    unstaged: v.nullable(v.number()),
    untracked: v.nullable(v.number()),
    /** HEAD's commit (with `long`; null otherwise or when it cannot be read). */
    last_commit: v.nullable(v.object({ sha: v.string(), date: v.string(), subject: v.string() })),
    /** Where the user's url.<base>.insteadOf sends this pack's fetches (a password hidden); null when no rewrite applies. */
    fetch_url: v.nullable(v.string()),
    /** The linked worktrees of this pack's repository (task workspaces made with init --from): present only when there are some. */
    worktrees: v.optional(v.array(v.object({ path: v.string(), branch: v.nullable(v.string()), dirty: v.nullable(v.boolean()), prunable: v.nullable(v.string()) }))),
  });
  // Every selected pack counted by state (also with `changed`, which leaves clean packs out of `packs`).
  const Summary = v.object({ total: v.number(), states: v.record(v.string(), v.number()) });
  return v.object({ packs: v.array(Row), summary: Summary, warnings: v.array(v.string()) });
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
  if (x.drift === "not-installed" && x.install_error) parts.push(x.install_error);
  if (x.drift === "not-installed" && x.dirty) parts.push("has uncommitted changes");
  if (x.topic) parts.push(topicText(x.topic));
  if (x.drift === "off-branch" && x.off_branch) parts.push(x.off_branch);
  for (const d of x.setup_drift) parts.push(`${d.action} ${d.path}: ${d.differs}`);
  if (x.ahead_behind_unknown !== null) parts.push(`ahead/behind unknown: ${x.ahead_behind_unknown}`);
  for (const m of x.submodules_moved) parts.push(`submodule ${m.path} at ${m.head?.slice(0, 7) ?? "an unreadable HEAD"}, recorded ${m.recorded.slice(0, 7)}`);
  if (x.missing_filters.length > 0) parts.push(`needs git filter ${x.missing_filters.join(", ")} (not configured: files kept as stored)`);
  return parts.join("; ");
}

/** `topic on main: 2 ahead, 3 behind origin/main; pushed to origin/feature/x` */
function topicText(t: NonNullable<PackStatus["topic"]>): string {
  const counts = t.ahead === null ? "" : `: ${t.ahead} ahead, ${t.behind} behind origin/${t.base}`;
  const where = t.upstream === null ? "no upstream" : t.pushed ? `pushed to ${t.upstream}` : `not pushed (upstream ${t.upstream})`;
  return `topic on ${t.base ?? "a tag or commit"}${counts}; ${where}`;
}

/** The static part of a filter, when it has state terms (they are decided after a fetch); the filter itself otherwise. */
function staticOnly(filter: string | string[] | undefined): string | string[] | undefined {
  const sel = parseFilters(filter);
  if (!sel.needsFacts) return filter;
  // Each expression without its state terms (an expression of state terms only selects everything statically).
  const exprs = [filter ?? []].flat().map((e) => e.split(/,(?![^{]*\})/).filter((t) => !parseFilters(t).needsFacts).join(",") || "**");
  return exprs;
}

/** Paths in the order people read a tree: segment by segment (`a`, `a/b`, `a-b`), so a pack's children follow it. */
function comparePaths(a: string, b: string): number {
  // Character by character, with '/' ranking before every other character: the same order as comparing segment by segment.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x === 47 ? -1 : y === 47 ? 1 : x - y;
  }
  return a.length - b.length;
}

/** Counts by state, clean first, then in the order of the state table. */
function orderStates(states: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of ["clean", ...PACK_STATES.filter((x) => x !== "clean"), ...Object.keys(states)]) if (states[s] !== undefined) out[s] = states[s];
  return out;
}

/** "20 packs: 15 clean, 3 dirty, 2 behind". */
export function summaryLine(summary: { total: number; states: Record<string, number> }): string {
  const parts = Object.entries(summary.states).map(([state, n]) => `${n} ${state}`);
  return `${summary.total} pack${summary.total === 1 ? "" : "s"}: ${parts.join(", ")}`;
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
    "Report every pack's state (children included), or only the packs the optional ids name (with their children): invalid (its pack.yaml or state file cannot be read; error names file, field, reason), clean, dirty, missing, not-installed (with install_error), setup-changed, setup-drift (with setup_drift: action, path, what differs), topic (on a local branch other than the tracked one: the user's work, not drift; topic gives branch, base, ahead/behind origin/<base>, upstream, pushed), behind, ahead, diverged or off-branch (a HEAD the user detached), plus branch and ahead/behind against origin, staged/unstaged/untracked counts and tags; rows sorted by path; summary counts every selected pack by state; warnings names packs grex.lock.jsonl records at two commits. changed: only packs that are not clean. long: also each pack's last commit. fetch: refresh remote-tracking refs first. Changes no pack.",
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
      "true: the call fails (isError, code -32004, kind drift) when any pack is neither clean nor on a topic branch; the report is still returned. Default false.",
    ),
    fetch: desc(
      v.optional(v.boolean(), false),
      "true: fetch every pack from origin first (network; updates remote-tracking refs only, never the checkout) so ahead/behind are current. Default false: as of the last fetch.",
    ),
    changed: desc(
      v.optional(v.boolean(), false),
      "true: list only packs that are not clean (summary still counts every selected pack). Default false.",
    ),
    long: desc(v.optional(v.boolean(), false), "true: also read each pack's last commit (last_commit: short sha, date, subject). Default false: last_commit is null."),
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
  examples: ["grex status --changed", "grex status --filter 'tag=frontend,dirty' --long", "grex status dotfiles --fail-on-drift"],
  cli: {
    args: "[...ids]",
    positionals: ["...ids"],
    flags: [
      { flag: "--stale-after <dur>", description: "Also call packs installed longer ago than this setup-changed (e.g. 7d)" },
      { flag: "--fail-on-drift", description: "Exit 7 when any pack is not clean (a topic branch is not drift)" },
      { flag: "--fetch", description: "Fetch every pack first (in parallel) so behind/ahead are current" },
      { flag: "-q, --changed", description: "Only packs that are not clean (the summary counts all)" },
      { flag: "--long", description: "Also show each pack's last commit: short sha, age, subject" },
    ],
  },
  async run(ctx, p, signal) {
    const staleMs = p.stale_after === undefined ? null : parseDuration(p.stale_after);
    const view = await loadWorkspaceView(ctx.workspace(), ctx.warn);
    const chosen = selectIds(view.packs, p.ids, view.ws.manifestPath);
    const reads = new Map<string, string | null>(); // one report: a file every pack's setup checks (~/.bashrc) is read once
    const extras = { staleMs, reads };
    const { selectPacks, statusRow } = await import("./select.ts");
    // A fetch first would change what behind/ahead terms see: with --fetch, select on static terms, fetch, then decide.
    const selected = await selectPacks(ctx, view, view.packs.filter((n) => chosen(n.id)), p.fetch && !p.dry_run ? staticOnly(p.filter) : p.filter, extras);
    let picked = selected.packs;
    // A fetch writes remote-tracking refs: a dry run only says it would.
    if (p.fetch && p.dry_run) ctx.warn(`dry run: would fetch ${picked.length} pack(s) first; ahead/behind are as of the last fetch`);
    else if (p.fetch) {
      await fetchAll(ctx, picked, p.parallel, signal);
      if (staticOnly(p.filter) !== p.filter) picked = (await selectPacks(ctx, view, picked, p.filter, extras)).packs;
    }
    const { workTreeGitdir, readHeadSync } = await import("../core/git/backend.ts");
    const { mirrorOf } = await import("../core/git/transport/url-rewrite.ts");
    const mirror = mirrorOf(); // the user's git config, read once per report
    const rows = await Promise.all(
      picked.map(async (n) => {
        const row = (p.fetch ? undefined : selected.rows.get(n.id)) ?? (await statusRow(ctx, view, n, extras));
        ctx.debug(1, `${n.id}: ${row.drift}; HEAD ${row.branch ?? "detached"}, at the recorded commit: ${row.sha_match}, setup unchanged: ${row.actions_hash_match}, dirty: ${row.dirty}, installed: ${n.lock?.installed_at || "never"}`);
        const gitdir = row.on_disk && row.error === null ? workTreeGitdir(n.dir) : null;
        // Counts cost a second look at the work tree: only for packs the dirty check found dirty.
        let counts: { staged: number; unstaged: number; untracked: number } | null;
        try {
          counts = gitdir === null ? null : row.dirty ? await (await import("../core/git/worktree/change-counts.ts")).countChanges(n.dir, gitdir) : { staged: 0, unstaged: 0, untracked: 0 };
        } catch (err) {
          // A file the counting could not compare (a required filter failing): this pack's row, not the whole report.
          if (!(err instanceof GrexError) || err.kind === "cancelled") throw err;
          const bad = (await import("../core/sync/pack-status.ts")).invalidStatus(n, err);
          return { ...bad, tags: n.tags as string[], staged: null, unstaged: null, untracked: null, last_commit: null, fetch_url: mirror(n.url), worktrees: undefined };
        }
        const head = p.long && gitdir !== null ? readHeadSync(n.dir) : null;
        const last = head ? (await import("../core/git/last-commit.ts")).lastCommit(gitdir as string, head.sha) : null;
        const worktrees = gitdir === null ? null : await (await import("../core/git/worktree/worktree-list.ts")).linkedWorktreesOf(n.dir);
        const out = { ...row, tags: n.tags as string[], staged: counts?.staged ?? null, unstaged: counts?.unstaged ?? null, untracked: counts?.untracked ?? null, last_commit: last, fetch_url: mirror(n.url) };
        return worktrees === null ? { ...out, worktrees: undefined } : { ...out, worktrees };
      }),
    );
    // Already in path order (the usual case: the manifest's order is often alphabetical) costs one pass.
    if (rows.some((r, i) => i > 0 && comparePaths((rows[i - 1] as typeof r).path, r.path) > 0)) rows.sort((a, b) => comparePaths(a.path, b.path));
    const states: Record<string, number> = {};
    for (const r of rows) states[r.drift] = (states[r.drift] ?? 0) + 1;
    // A union merge that kept two branches' lines for one pack at different commits: sync --locked refuses it.
    const { lockConflicts } = await import("../core/workspace/lockfile.ts");
    const warnings: string[] = [];
    for (const [id, shas] of lockConflicts(view.ws)) {
      const w = `grex.lock.jsonl records pack '${id}' at ${shas.length} commits (${shas.map((x) => x.slice(0, 7)).join(", ")}), left by a merge; keep the line you want (or run grex sync) and commit it`;
      warnings.push(w);
      ctx.warn(w);
    }
    return { packs: p.changed ? rows.filter((r) => r.drift !== "clean") : rows, summary: { total: rows.length, states: orderStates(states) }, warnings };
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
    // A topic branch is the user's work, not drift.
    const drifted = r.packs.filter((x) => x.drift !== "clean" && x.drift !== "topic");
    if (drifted.length === 0) return undefined;
    return new GrexError("drift", `${drifted.length} pack(s) drifted (first: ${drifted[0]?.id} is ${drifted[0]?.drift}); see grex status for what to run.`);
  },
  render(r, p, style) {
    if (r.summary.total === 0) {
      return p.filter !== undefined
        ? "No registered pack matches the filter; run `grex status` without it to see them all."
        : "No packs registered; add one with `grex add <url>`.";
    }
    const c = paint(style.color);
    const colour = (state: string) => (state === "clean" ? c.green : state === "missing" || state === "diverged" || state === "invalid" ? c.red : c.yellow)(state);
    const up = style.plain ? "+" : "↑";
    const down = style.plain ? "-" : "↓";
    const rows = r.packs.map((x) => {
      const counts = x.ahead_behind_unknown !== null ? [`${up}?`, `${down}?`] : [x.ahead ? `${up}${x.ahead}` : "", x.behind ? `${down}${x.behind}` : ""];
      const track = x.branch === null ? (x.on_disk && x.error === null ? "(detached)" : "") : [x.branch, ...counts].filter(Boolean).join(" ");
      const files = [x.staged ? `${x.staged} staged` : "", x.unstaged ? `${x.unstaged} unstaged` : "", x.untracked ? `${x.untracked} untracked` : ""].filter(Boolean).join(", ");
      const last = p.long ? (x.last_commit ? `${c.cyan(x.last_commit.sha.slice(0, 7))} ${x.last_commit.date ? `${ageOf(x.last_commit.date)}  ` : ""}${x.last_commit.subject}` : "") : undefined;
      const extra = [x.tags.map((t) => `#${t}`).join(" "), describe(x)].filter(Boolean).join("  ");
      return [`${"  ".repeat(x.depth)}${c.bold(x.id)}`, colour(String(x.drift)), track, files, ...(last === undefined ? [] : [last]), c.dim(extra)];
    });
    // Task workspaces' worktrees of each pack: with --long only, so the default report stays one line a pack.
    const trees = p.long ? r.packs.flatMap((x) => (x.worktrees ?? []).map((w) => `  ${x.id}: worktree ${w.path} on ${w.branch ?? "(detached)"}${w.prunable ? ` (stale: ${w.prunable}; grex doctor --fix prunes it)` : w.dirty ? " (dirty)" : ""}`)) : [];
    return [...(rows.length > 0 ? [table(rows)] : []), ...trees, summaryLine(r.summary)].join("\n");
  },
});
