// `grex doctor`: check the workspace's files and packs, report findings, and
// (with --fix, CLI only) heal what is safe to heal, converting files written by the Rust grex.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { GrexError, toGrexError } from "../core/base/errors.ts";
import type { PackManifest } from "../core/pack/schema.ts";
import { inspectLocks, removeStaleLocks, withManifestLock } from "../core/locks/locks.ts";
import { readLockfile, writeLockfile, writeLockfileLocked, type LockEntry } from "../core/workspace/lockfile.ts";
import { compactManifest } from "../core/workspace/manifest-compact.ts";
import { readManifest, readManifestLocked, type ManifestEvent, type PackEntry } from "../core/workspace/manifest.ts";
import type { Workspace } from "../core/base/workspace.ts";
import { STATE_BLOCK_ID } from "./init.ts";
import { dryRunParam } from "./common.ts";
import { paint } from "./render-style.ts";
import { table } from "./render-table.ts";
import { defineVerb, READS_ONLY } from "./types.ts";
import { fixTeamFiles, TEAM_CHECKS, teamFindings } from "./doctor-team.ts";
import { doctorRuntime } from "./doctor-runtime.ts";
import { serveWatchFindings } from "./doctor-serve.ts";

export const DOCTOR_CHECKS = [
  "manifest-schema",
  "lockfile-schema",
  "gitignore-sync",
  "on-disk-drift",
  "pack-schema",
  "stale-locks",
  "incomplete-actions",
  "orphans",
  "legacy-coexistence",
  "install-state",
  "setup-drift",
  "off-branch",
  "git-filters",
  "serve-watch",
  ...TEAM_CHECKS,
] as const;
type Check = (typeof DOCTOR_CHECKS)[number];
type Severity = "ok" | "warning" | "error";

interface Finding {
  check: Check;
  severity: Severity;
  pack: string | null;
  detail: string;
  auto_fixable: boolean;
}

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
  compaction: v.nullable(
    v.object({ manifest_lines: v.tuple([v.number(), v.number()]), lockfile_lines: v.tuple([v.number(), v.number()]) }),
  ),
});

interface Loaded {
  events: ManifestEvent[];
  state: Map<string, PackEntry>;
  lock: Map<string, LockEntry>;
}

/** Run every check; findings only (no writes). */
async function diagnose(ws: Workspace, lint: boolean, warn: (m: string) => void): Promise<{ findings: Finding[]; loaded: Loaded | null }> {
  const { describeRustShape, graphProblems, interruptedPacks, isGitRepo, originUrlSync, packIgnoreLines, parseBlocks, rustShape, trashDir, trashLeftovers } =
    await doctorRuntime();
  const findings: Finding[] = [];
  const add = (check: Check, severity: Severity, pack: string | null, detail: string, auto_fixable = false) =>
    findings.push({ check, severity, pack, detail, auto_fixable });

  let events: ManifestEvent[] = [];
  let state = new Map<string, PackEntry>();
  try {
    ({ events, state } = await readManifest(ws, { warn, keepEvents: true }));
  } catch (err) {
    add("manifest-schema", "error", null, toGrexError(err).message);
    return { findings, loaded: null };
  }
  let lock = new Map<string, LockEntry>();
  try {
    lock = readLockfile(ws, { warn });
  } catch (err) {
    add("lockfile-schema", "error", null, toGrexError(err).message);
  }

  // gitignore-sync: one well-formed block per registered pack, plus grex:state.
  const gitignore = join(ws.root, ".gitignore");
  const text = existsSync(gitignore) ? readFileSync(gitignore, "utf8") : "";
  const parsed = parseBlocks(text);
  for (const p of parsed.problems) {
    add("gitignore-sync", "error", p.id, `.gitignore line ${p.line}: ${p.problem} managed block 'grex:${p.id}'`, true);
  }
  if (parsed.problems.length === 0) {
    for (const pack of state.values()) {
      const want = packIgnoreLines(pack.path, await manifestOrNull(join(ws.root, pack.path)));
      const have = parsed.blocks.get(pack.id);
      if (!have) add("gitignore-sync", "warning", pack.id, `.gitignore has no grex block for ${pack.path}`, true);
      else if (have.join("\n") !== want.join("\n")) add("gitignore-sync", "warning", pack.id, `.gitignore block for ${pack.id} was edited by hand`, true);
    }
    if (!parsed.blocks.has(STATE_BLOCK_ID)) add("gitignore-sync", "warning", null, ".gitignore does not ignore /.grex/.state/", true);
    for (const id of parsed.blocks.keys()) {
      if (id !== STATE_BLOCK_ID && !state.has(id)) add("gitignore-sync", "warning", id, `.gitignore block for unregistered pack '${id}'`, true);
    }
  }

  // on-disk-drift and pack-schema.
  const { loadPackYaml } = await import("../core/pack/load.ts");
  for (const pack of state.values()) {
    const dir = join(ws.root, pack.path);
    if (!existsSync(dir)) {
      add("on-disk-drift", "warning", pack.id, `registered but missing on disk (${dir}); run grex sync`);
      continue;
    }
    if (!isGitRepo(dir)) {
      add("on-disk-drift", "error", pack.id, `${dir} is not a git repository`);
      continue;
    }
    const origin = originUrlSync(dir);
    if (origin !== pack.url) add("on-disk-drift", "warning", pack.id, `origin is ${origin ?? "unset"} but the manifest says ${pack.url}`);
    const packDirs = [dir, ...[...lock.keys()].filter((id) => id.startsWith(`${pack.id}/`)).map((id) => join(ws.root, id))];
    for (const d of packDirs) {
      if (!existsSync(d)) continue;
      try {
        const m = await loadPackYaml(d);
        if (lint && m) lintPack(m.name, d, m.actions.length, add);
      } catch (err) {
        add("pack-schema", "error", pack.id, toGrexError(err).message);
      }
    }
  }

  // install-state, setup-drift, off-branch: the same reading `status` does.
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const { childFacts, inspectPack } = await import("../core/sync/pack-status.ts");
  const view = await loadWorkspaceView(ws, warn).catch(() => null);
  const { runtimeEvents } = await import("../core/workspace/journal.ts");
  const runtime = runtimeEvents(ws, events, { warn }); // the journal's, after any an older grex left in grex.jsonl
  const interrupted = interruptedPacks(runtime);
  const reads = new Map<string, string | null>(); // one report: shared files are read once
  for (const node of view?.packs ?? []) {
    if (!existsSync(node.dir) || !isGitRepo(node.dir)) continue;
    let st: Awaited<ReturnType<typeof inspectPack>>;
    try {
      st = await inspectPack(ws, node, { ...childFacts(view?.packs ?? [], node), staleMs: null, interrupted: interrupted.has(node.id), reads });
    } catch (err) {
      // A pack.yaml or state file grex cannot read (bad YAML, an unknown action, a damaged state file):
      // reported (once) with the file it names; its state is unknown, the other packs are checked as usual.
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      if (!findings.some((f) => f.check === "pack-schema" && f.pack === node.id)) add("pack-schema", "error", node.id, e.message);
      continue;
    }
    // A pack never synced here is just new; a failed or interrupted install is a finding.
    const failedInstall = node.lock?.install_error !== undefined || interrupted.has(node.id);
    if (failedInstall) add("install-state", "warning", node.id, `setup not installed: ${st.install_error}; grex sync retries it`);
    for (const d of st.setup_drift) add("setup-drift", "warning", node.id, `${d.where} ${d.action} ${d.path}: ${d.differs}; grex sync re-applies it`);
    // A note, not a failure: git too keeps such files as stored.
    for (const f of st.missing_filters) add("git-filters", "ok", node.id, `its .gitattributes name the filter '${f}', which no git config defines: those files stay as stored (configure filter.${f}, e.g. with the tool's install command, then re-check them out)`);
    if (st.off_branch) add("off-branch", "warning", node.id, `${st.off_branch}; sync leaves it alone (switch back, or grex update ${node.id} --ref <branch>)`);
  }
  // pack-schema: MCP server ids must be unique across the workspace.
  const { collectDeclaredServers } = await import("../core/pack/mcp-declared.ts");
  const declared = await collectDeclaredServers(ws, () => {}).catch(() => undefined);
  for (const p of declared?.problems ?? []) if (p.kind === "duplicate-id") add("pack-schema", "error", p.pack, p.message);
  await serveWatchFindings(ws, view?.packs ?? [], add);

  // stale-locks.
  for (const l of inspectLocks(ws)) {
    if (l.stale) add("stale-locks", "warning", null, `${l.path} was left by pid ${l.pid ?? "?"}, which is gone`, true);
  }

  // incomplete-actions.
  const { incompleteActions } = await import("../core/sync/engine.ts");
  for (const w of incompleteActions(runtime)) add("incomplete-actions", "warning", null, w);
  await teamFindings(ws, events, add);

  // orphans: lock entries without a live pack; git dirs nobody registered.
  for (const id of lock.keys()) {
    const top = id.split("/")[0] as string;
    if (!state.has(top)) add("orphans", "warning", id, `lockfile entry '${id}' has no registered pack`, true);
  }
  for (const left of trashLeftovers(ws)) {
    add("orphans", "warning", null, `${join(trashDir(ws), left)} was left by an interrupted grex rm; grex doctor --fix (or the next rm) deletes it`, true);
  }
  for (const left of await leftoverClones(ws, state)) {
    add("orphans", "warning", null, `${left} was left by a clone that was killed; grex doctor --fix (or the next add or sync of that pack) deletes it`, true);
  }
  for (const d of await graphProblems(ws, state, lock)) add("pack-schema", "error", d.pack, d.detail);
  for (const entry of readdirSync(ws.root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || state.has(entry.name)) continue;
    if (isGitRepo(join(ws.root, entry.name))) {
      add("orphans", "warning", entry.name, `${entry.name}/ is a git repository grex does not manage; grex import --scan registers it`);
    }
  }

  // legacy-coexistence: REPOS.json entries not imported, a .scripts/ dir still present.
  const reposJson = join(ws.root, "REPOS.json");
  if (existsSync(reposJson)) {
    try {
      const list = JSON.parse(readFileSync(reposJson, "utf8")) as unknown;
      // Entries without a url are not importable (grex import skips them), so they are not "missing".
      const importable = (e: unknown) => e !== null && typeof e === "object" && "path" in e && "url" in e && String(e.url).trim() !== "";
      const paths = Array.isArray(list) ? list.map((e) => (importable(e) ? String((e as { path: unknown }).path) : "")) : [];
      const missing = paths.filter((p) => p !== "" && !state.has(p.replace(/\/+$/, "")));
      if (missing.length > 0) {
        add("legacy-coexistence", "warning", null, `REPOS.json lists ${missing.length} repo(s) not in grex.jsonl (${missing.slice(0, 3).join(", ")}); run grex import --from-repos-json REPOS.json`);
      }
    } catch {
      add("legacy-coexistence", "warning", null, "REPOS.json is not valid JSON");
    }
  }
  const rust = describeRustShape(rustShape(ws));
  if (rust) add("legacy-coexistence", "warning", null, rust, true);
  if (existsSync(join(ws.root, ".scripts"))) {
    add("legacy-coexistence", "warning", null, ".scripts/ is still present; move its setup into pack actions and remove it");
  }
  return { findings, loaded: { events, state, lock } };
}

/** A pack's manifest for its ignore block; a pack.yaml that does not load is reported by the pack-schema check. */
async function manifestOrNull(dir: string): Promise<PackManifest | null> {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  return loadPackYaml(dir).catch(() => null);
}

function lintPack(name: string, dir: string, actions: number, add: (c: Check, s: Severity, p: string | null, d: string) => void) {
  if (!existsSync(join(dir, "README.md"))) add("pack-schema", "warning", name, `pack '${name}' has no README.md`);
  if (actions > 50) add("pack-schema", "warning", name, `pack '${name}' declares ${actions} actions; split it into child packs`);
}

/** Hidden `.<name>.grex-clone-*` folders a killed clone left, in the workspace root and in every pack (children clone there). */
async function leftoverClones(ws: Workspace, state: Map<string, { path: string }>): Promise<string[]> {
  const { deadClones } = await import("../core/git/clone.ts");
  const out: string[] = [];
  for (const parent of [ws.root, ...[...state.values()].map((p) => join(ws.root, p.path))]) {
    for (const name of deadClones(parent)) out.push(join(parent, name));
  }
  return out;
}

/** What fix() would do for these findings, one line per repair. */
function plannedFixes(findings: Finding[]): string[] {
  return findings
    .filter((f) => f.auto_fixable)
    .map((f) => {
      const what = f.check === "gitignore-sync" ? "rewrite the .gitignore block" : f.check === "stale-locks" ? "remove the stale lock" : f.check === "team-files" ? "add the union-merge lines to .gitattributes" : "remove the leftover";
      return `${f.check}${f.pack ? ` [${f.pack}]` : ""}: ${what} (${f.detail})`;
    });
}

function lineCount(path: string): number {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
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
  if (fixable.has("stale-locks")) {
    removeStaleLocks(ws);
    fixed.push("stale-locks");
  }
  if (fixable.has("orphans") && sweepTrash(ws).length > 0) fixed.push("trash");
  if (fixable.has("orphans")) {
    const left = await leftoverClones(ws, loaded.state);
    for (const path of left) rmSync(path, { recursive: true, force: true });
    if (left.length > 0) fixed.push("clones");
  }
  if (fixable.has("orphans")) {
    // Decided under the manifest lock on what the files hold now (an `add` may have run since the check).
    const dropped = await withManifestLock(ws, undefined, () => {
      const state = readManifestLocked(ws, { warn: () => {} }).state;
      const lock = readLockfile(ws);
      const keep = [...lock.values()].filter((e) => state.has(e.id.split("/")[0] as string));
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
        await writeLockfile(ws, lock.values());
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
