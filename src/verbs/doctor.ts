// `grex doctor`: check the workspace's files and packs, report findings, and
// (with --fix, CLI only) heal what is safe to heal, converting files written by the Rust grex.
// The checks themselves are a table in doctor-checks.ts.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { GrexError } from "../core/base/errors.ts";
import { removeStaleLocks, withManifestLock } from "../core/locks/locks.ts";
import { readLockfile, writeLockfile, writeLockfileLocked } from "../core/workspace/lockfile.ts";
import { compactManifest } from "../core/workspace/manifest-compact.ts";
import { readManifestLocked } from "../core/workspace/manifest.ts";
import type { Workspace } from "../core/base/workspace.ts";
import { STATE_BLOCK_ID } from "./init.ts";
import { dryRunParam } from "./common.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import { defineVerb, READS_ONLY } from "./types.ts";
import { fixTeamFiles } from "./doctor-team.ts";
import { doctorRuntime } from "./doctor-runtime.ts";
import { DOCTOR_CHECKS, diagnose, type Finding, type Loaded, leftoverClones, manifestOrNull, ownedByRegistered, type Severity } from "./doctor-checks.ts";

export { DOCTOR_CHECKS } from "./doctor-checks.ts";

/**
 * `[before, after]`: an array of two numbers, published as `items` + `minItems`/`maxItems`. A tuple
 * schema would be published in the `items: [...]` form, which JSON Schema 2020-12 does not accept.
 */
const BeforeAfter = v.pipe(v.array(v.number()), v.length(2, "must be [before, after]"));

const Result = v.object({
  exit_code: v.number(),
  worst_severity: v.picklist(["ok", "warning", "error"]),
  findings: v.array(
    v.object({
      check: v.picklist(DOCTOR_CHECKS),
      severity: v.picklist(["ok", "warning", "error"]),
      pack: v.nullable(v.string()),
      detail: v.string(),
      auto_fixable: v.boolean(),
    }),
  ),
  fixed: v.array(v.string()),
  compacted: v.boolean(),
  dry_run: v.boolean(),
  /** Dry run with --fix: each repair that would be made. */
  would_fix: v.array(v.string()),
  /** With --compact: line counts before and after (in a dry run, what they would be). */
  compaction: v.nullable(v.object({ manifest_lines: BeforeAfter, lockfile_lines: BeforeAfter })),
});

/** What fix() would do for these findings, one line per repair. */
function plannedFixes(findings: Finding[]): string[] {
  return findings
    .filter((f) => f.auto_fixable)
    .map((f) => {
      const what = f.check === "worktrees" ? "prune the registration" : f.check === "gitignore-sync" ? "rewrite the .gitignore block" : f.check === "stale-locks" ? "remove the stale lock" : f.check === "team-files" ? "add the union-merge lines to .gitattributes" : "remove the leftover";
      return `${f.check}${f.pack ? ` [${f.pack}]` : ""}: ${what} (${f.detail})`;
    });
}

function lineCount(path: string): number {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
}

/** `git worktree prune` in every pack's repository: registrations whose directory is gone (a deleted task workspace). */
async function pruneStaleWorktrees(ws: Workspace): Promise<boolean> {
  const [{ loadWorkspaceView }, { pruneWorktrees }, { dotGitOf }] = await Promise.all([
    import("../core/workspace/packs.ts"),
    import("../core/git/worktree/linked-worktrees.ts"),
    import("../core/git/layout/layout.ts"),
  ]);
  let pruned = 0;
  for (const node of (await loadWorkspaceView(ws, () => {})).packs) {
    const gitdir = dotGitOf(node.dir);
    if (gitdir !== null) pruned += pruneWorktrees(gitdir).length;
  }
  return pruned > 0;
}

/** Heal what is safe: ignore blocks, stale locks, orphan lock entries. */
async function fix(ws: Workspace, findings: Finding[], loaded: Loaded): Promise<string[]> {
  const { blockIdsIn, convertRustWorkspace, editIgnoreFile, packIgnoreLines, repairBlocks, sweepTrash, updateIgnoreFile } = await doctorRuntime();
  const fixed: string[] = [];
  const fixable = new Set(findings.filter((f) => f.auto_fixable).map((f) => f.check));
  // First, so the heals below rewrite files already in this grex's format.
  if (fixable.has("legacy-coexistence") && (await convertRustWorkspace(ws)).length > 0) fixed.push("legacy-coexistence");
  if (fixable.has("gitignore-sync")) {
    const gitignore = join(ws.root, ".gitignore");
    if (existsSync(gitignore)) editIgnoreFile(gitignore, "repaired blocks", repairBlocks);
    // Which blocks belong is judged on the manifest as it is now, under its lock: an `add` may have registered one since the check.
    await withManifestLock(ws, undefined, async () => {
      const { state } = readManifestLocked(ws, { warn: () => {} });
      for (const id of blockIdsIn(gitignore)) {
        if (id !== STATE_BLOCK_ID && !state.has(id)) updateIgnoreFile(gitignore, id, null);
      }
      updateIgnoreFile(gitignore, STATE_BLOCK_ID, ["/.grex/.state/"]);
      for (const pack of state.values()) {
        updateIgnoreFile(gitignore, pack.id, packIgnoreLines(pack.path, await manifestOrNull(join(ws.root, pack.path))));
      }
    });
    fixed.push("gitignore-sync");
  }
  if (fixable.has("team-files") && (await fixTeamFiles(ws))) fixed.push("team-files");
  if (fixable.has("worktrees") && (await pruneStaleWorktrees(ws))) fixed.push("worktrees");
  if (fixable.has("stale-locks")) {
    removeStaleLocks(ws);
    fixed.push("stale-locks");
  }
  if (fixable.has("orphans") && sweepTrash(ws).length > 0) fixed.push("trash");
  if (fixable.has("orphans")) {
    const left = await leftoverClones(ws, loaded.state, loaded.lock);
    for (const path of left) rmSync(path, { recursive: true, force: true });
    if (left.length > 0) fixed.push("clones");
  }
  if (fixable.has("orphans")) {
    // Decided under the manifest lock on what the files hold now (an `add` may have run since the check).
    const dropped = await withManifestLock(ws, undefined, () => {
      const state = readManifestLocked(ws, { warn: () => {} }).state;
      const lock = readLockfile(ws);
      const keep = [...lock.values()].filter((e) => ownedByRegistered(e.id, state));
      if (keep.length !== lock.size) writeLockfileLocked(ws, keep);
      return keep.length !== lock.size;
    });
    if (dropped) fixed.push("orphans");
  }
  return fixed;
}

const worst = (fs: Finding[]): Severity =>
  fs.some((f) => f.severity === "error") ? "error" : fs.some((f) => f.severity === "warning") ? "warning" : "ok";

export const doctorVerb = defineVerb({
  name: "doctor",
  description:
    "Check the workspace: manifest and lockfile integrity, .gitignore blocks, packs missing or changed on disk, pack.yaml validity, stale locks, interrupted actions, orphans and leftovers of a REPOS.json setup. Read-only over MCP; reports findings with severity.",
  params: v.strictObject({
    fix: desc(v.optional(v.boolean(), false), "CLI only: heal .gitignore blocks, stale locks and orphan lock entries, then check again."),
    compact: desc(v.optional(v.boolean(), false), "CLI only: rewrite grex.jsonl and grex.lock.jsonl in compacted form."),
    lint_config: desc(
      v.optional(v.boolean(), false),
      "true: also lint each pack's layout (warns about a pack without README.md and one declaring more than 50 actions), reported as pack-schema warnings. Default false: validity checks only.",
    ),
    dry_run: dryRunParam,
  }),
  result: Result,
  readOnly: true,
  effects: (p) => (p.fix || p.compact ? { workspace: "none", packs: "none", writes: true } : READS_ONLY),
  destructive: false,
  mcp: true,
  // dry_run only previews --fix/--compact, which are CLI-only too.
  cliOnly: ["fix", "compact", "dry_run"],
  examples: ["grex doctor", "grex doctor --fix", "grex doctor --compact"],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--fix", description: "Heal .gitignore blocks, .gitattributes merge lines, stale locks and orphan lock entries, then re-check" },
      { flag: "--compact", description: "Compact grex.jsonl and grex.lock.jsonl (fold-equivalent); runtime events move to .grex/.state/" },
      { flag: "--lint-config", description: "Also lint pack.yaml style" },
    ],
  },
  async run(ctx, p) {
    const ws = ctx.workspace();
    let { findings, loaded } = await diagnose(ws, p.lint_config, ctx.warn);
    const fixed: string[] = [];
    const wouldFix = p.fix && loaded && p.dry_run ? plannedFixes(findings) : [];
    if (p.fix && loaded && !p.dry_run) {
      fixed.push(...(await fix(ws, findings, loaded)));
      ({ findings, loaded } = await diagnose(ws, p.lint_config, ctx.warn));
    }
    let compacted = false;
    let compaction: { manifest_lines: [number, number]; lockfile_lines: [number, number] } | null = null;
    if (p.compact && loaded && !findings.some((f) => f.severity === "error" && f.check.endsWith("-schema"))) {
      if (p.dry_run) {
        const lock = readLockfile(ws, { warn: ctx.warn });
        compaction = { manifest_lines: [loaded.events.length, loaded.state.size], lockfile_lines: [lineCount(ws.lockPath), lock.size] };
      } else {
        const { convertRustWorkspace } = await import("../core/compat/convert-rust.ts");
        await convertRustWorkspace(ws); // a Rust-format file gets its backup before compaction rewrites it
        const lock = readLockfile(ws, { warn: ctx.warn });
        const lockLines = [lineCount(ws.lockPath), lock.size] as [number, number];
        const m = await compactManifest(ws);
        await writeLockfile(ws, lock.values(), undefined, { compact: true });
        compaction = { manifest_lines: [m.linesBefore, m.linesAfter], lockfile_lines: lockLines };
        compacted = true;
      }
    }
    // Every check appears: the ones with nothing to say as `ok`.
    for (const check of DOCTOR_CHECKS) {
      if (!findings.some((f) => f.check === check)) findings.push({ check, severity: "ok", pack: null, detail: "ok", auto_fixable: false });
    }
    findings.sort((a, b) => DOCTOR_CHECKS.indexOf(a.check) - DOCTOR_CHECKS.indexOf(b.check));
    const sev = worst(findings);
    const integrity = findings.some((f) => f.severity === "error" && (f.check === "manifest-schema" || f.check === "lockfile-schema"));
    return {
      exit_code: integrity ? 3 : sev === "ok" ? 0 : 7,
      worst_severity: sev,
      findings,
      fixed,
      compacted,
      dry_run: p.dry_run,
      would_fix: wouldFix,
      compaction,
    };
  },
  failure(r, p) {
    if (r.exit_code === 0) return undefined;
    const problems = r.findings.filter((f) => f.severity !== "ok");
    const first = problems[0];
    // Suggest --fix only when it would help: never after a --fix run, never when nothing left is fixable.
    const fixable = problems.filter((f) => f.auto_fixable).length;
    const way =
      fixable > 0 && !p.fix
        ? `\`grex doctor --fix\` heals ${fixable === problems.length ? (fixable === 1 ? "it" : "them") : `${fixable} of them; the rest need a hand (each line above says what is wrong)`}`
        : `${p.fix ? "--fix cannot heal what is left; " : ""}fix ${problems.length === 1 ? "it" : "them"} by hand (each line above says what is wrong) and run \`grex doctor\` again`;
    const msg = `grex doctor found ${problems.length} problem${problems.length === 1 ? "" : "s"} (first: ${first?.check}: ${first?.detail.replace(/\.$/, "")}); ${way}.`;
    return new GrexError(r.exit_code === 3 ? "integrity" : "drift", msg);
  },
  render(r, _p, style) {
    const c = paint(style.color);
    const colour = (s: Severity) => (s === "ok" ? c.green : s === "warning" ? c.yellow : c.red);
    const icon = (s: Severity) => colour(s)(style.plain ? s : s === "ok" ? "✓" : s === "warning" ? "!" : "✗");
    const rows = r.findings.map((f) => [
      icon(f.severity),
      `${f.check}${f.pack ? ` [${f.pack}]` : ""}`,
      `${f.severity === "ok" && f.detail === "ok" ? "" : f.detail}${f.auto_fixable ? c.dim(" (fixable)") : ""}`,
    ]);
    const lines = [table(rows)];
    if (r.fixed.length) lines.push(`fixed: ${r.fixed.join(", ")}`);
    for (const f of r.would_fix) lines.push(`would fix: ${f}`);
    if (r.compaction) {
      const [m0, m1] = r.compaction.manifest_lines;
      const [l0, l1] = r.compaction.lockfile_lines;
      lines.push(`${r.compacted ? "compacted" : "would compact"} grex.jsonl ${m0} → ${m1} lines, grex.lock.jsonl ${l0} → ${l1} lines`);
    }
    return lines.join("\n");
  },
});
