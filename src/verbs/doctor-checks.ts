// `grex doctor`'s checks, as a table: each entry reads what it needs from one
// shared reading of the workspace (manifest, lockfile, runtime helpers) and
// adds findings. `diagnose` reads the files once and runs every entry in
// order; doctor.ts owns the verb (fixes, compaction, rendering).
import { serveWatchFindings } from "./doctor-serve.ts";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { toGrexError } from "../core/base/errors.ts";
import type { PackManifest } from "../core/pack/schema.ts";
import { inspectLocks } from "../core/locks/locks.ts";
import { readLockfile, type LockEntry } from "../core/workspace/lockfile.ts";
import { readManifest, type ManifestEvent, type PackEntry } from "../core/workspace/manifest.ts";
import type { Workspace } from "../core/base/workspace.ts";
import { STATE_BLOCK_ID } from "./init.ts";
import { TEAM_CHECKS, teamFindings } from "./doctor-team.ts";
import { doctorRuntime } from "./doctor-runtime.ts";

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
  "mirrors",
  "alternates",
  "serve-watch",
  "worktrees",
  ...TEAM_CHECKS,
] as const;
export type Check = (typeof DOCTOR_CHECKS)[number];
export type Severity = "ok" | "warning" | "error";

export interface Finding {
  check: Check;
  severity: Severity;
  pack: string | null;
  detail: string;
  auto_fixable: boolean;
}

export interface Loaded {
  events: ManifestEvent[];
  state: Map<string, PackEntry>;
  lock: Map<string, LockEntry>;
}

/** What every check reads: the workspace, its files read once, and a way to add a finding. */
interface DoctorRun extends Loaded {
  ws: Workspace;
  lint: boolean;
  warn(m: string): void;
  add(check: Check, severity: Severity, pack: string | null, detail: string, autoFixable?: boolean): void;
  has(check: Check, pack: string): boolean;
  rt: Awaited<ReturnType<typeof doctorRuntime>>;
}

type CheckStep = (r: DoctorRun) => Promise<void> | void;

/** gitignore-sync: one well-formed block per registered pack, plus grex:state. */
async function gitignoreSync(r: DoctorRun): Promise<void> {
  const gitignore = join(r.ws.root, ".gitignore");
  const parsed = r.rt.parseBlocks(existsSync(gitignore) ? readFileSync(gitignore, "utf8") : "");
  for (const p of parsed.problems) r.add("gitignore-sync", "error", p.id, `.gitignore line ${p.line}: ${p.problem} managed block 'grex:${p.id}'`, true);
  if (parsed.problems.length > 0) return;
  for (const pack of r.state.values()) {
    const want = r.rt.packIgnoreLines(pack.path, await manifestOrNull(join(r.ws.root, pack.path)));
    const have = parsed.blocks.get(pack.id);
    if (!have) r.add("gitignore-sync", "warning", pack.id, `.gitignore has no grex block for ${pack.path}`, true);
    else if (have.join("\n") !== want.join("\n")) r.add("gitignore-sync", "warning", pack.id, `.gitignore block for ${pack.id} was edited by hand`, true);
  }
  if (!parsed.blocks.has(STATE_BLOCK_ID)) r.add("gitignore-sync", "warning", null, ".gitignore does not ignore /.grex/.state/", true);
  for (const id of parsed.blocks.keys()) {
    if (id !== STATE_BLOCK_ID && !r.state.has(id)) r.add("gitignore-sync", "warning", id, `.gitignore block for unregistered pack '${id}'`, true);
  }
}

/** on-disk-drift and pack-schema: each registered pack on disk, a git repository with the manifest's origin, pack.yaml valid. */
async function onDisk(r: DoctorRun): Promise<void> {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  for (const pack of r.state.values()) {
    const dir = join(r.ws.root, pack.path);
    if (!existsSync(dir)) {
      r.add("on-disk-drift", "warning", pack.id, `registered but missing on disk (${dir}); run grex sync`);
      continue;
    }
    if (!r.rt.isGitRepo(dir)) {
      r.add("on-disk-drift", "error", pack.id, `${dir} is not a git repository`);
      continue;
    }
    const origin = r.rt.originUrlSync(dir);
    if (origin !== pack.url) r.add("on-disk-drift", "warning", pack.id, `origin is ${origin ?? "unset"} but the manifest says ${pack.url}`);
    const packDirs = [dir, ...[...r.lock.keys()].filter((id) => id.startsWith(`${pack.id}/`)).map((id) => join(r.ws.root, id))];
    for (const d of packDirs) {
      if (!existsSync(d)) continue;
      try {
        const m = await loadPackYaml(d);
        if (r.lint && m) lintPack(m.name, d, m.actions.length, r.add);
      } catch (err) {
        r.add("pack-schema", "error", pack.id, toGrexError(err).message);
      }
    }
  }
}

/** install-state, setup-drift, off-branch, git-filters: the same reading `status` does (a topic branch is no finding). */
async function packStates(r: DoctorRun): Promise<void> {
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const { childFacts, inspectPack } = await import("../core/sync/pack-status.ts");
  const view = await loadWorkspaceView(r.ws, r.warn).catch(() => null);
  const interrupted = r.rt.interruptedPacks(await runtimeOf(r));
  const reads = new Map<string, string | null>(); // one report: shared files are read once
  for (const node of view?.packs ?? []) {
    if (!existsSync(node.dir) || !r.rt.isGitRepo(node.dir)) continue;
    // A work-tree move cut short (a kill, a full disk): named until the next sync finishes it.
    const cut = r.rt.interruptedMove(node.dir);
    if (cut) r.add("on-disk-drift", "warning", node.id, `an update of ${node.dir} to ${cut.slice(0, 12)} was cut short (killed, or the disk was full); the next grex sync finishes it`);
    let st: Awaited<ReturnType<typeof inspectPack>>;
    try {
      st = await inspectPack(r.ws, node, { ...childFacts(view?.packs ?? [], node), staleMs: null, interrupted: interrupted.has(node.id), reads });
    } catch (err) {
      // A pack.yaml or state file grex cannot read (bad YAML, an unknown action, a damaged state file):
      // reported (once) with the file it names; its state is unknown, the other packs are checked as usual.
      const e = toGrexError(err);
      if (e.kind === "cancelled") throw e;
      if (!r.has("pack-schema", node.id)) r.add("pack-schema", "error", node.id, e.message);
      continue;
    }
    // A pack never synced here is just new; a failed or interrupted install is a finding.
    if (node.lock?.install_error !== undefined || interrupted.has(node.id)) r.add("install-state", "warning", node.id, `setup not installed: ${st.install_error}; grex sync retries it`);
    for (const d of st.setup_drift) r.add("setup-drift", "warning", node.id, `${d.where} ${d.action} ${d.path}: ${d.differs}; grex sync re-applies it`);
    // A note, not a failure: git too keeps such files as stored.
    for (const f of st.missing_filters) r.add("git-filters", "ok", node.id, `its .gitattributes name the filter '${f}', which your own git config does not define (a pack's own repository config does not count): those files stay as stored (configure filter.${f} in your git config, e.g. with the tool's install command, then re-check them out)`);
    if (st.off_branch) r.add("off-branch", "warning", node.id, `${st.off_branch}; sync leaves it alone (switch back, or grex update ${node.id} --ref <branch>)`);
  }
}

// The runtime events (the journal's, after any an older grex left in grex.jsonl), read once for the checks that need them.
const runtimes = new WeakMap<DoctorRun, ManifestEvent[]>();
async function runtimeOf(r: DoctorRun): Promise<ManifestEvent[]> {
  let events = runtimes.get(r);
  if (!events) {
    const { runtimeEvents } = await import("../core/workspace/journal.ts");
    events = runtimeEvents(r.ws, r.events, { warn: r.warn });
    runtimes.set(r, events);
  }
  return events;
}

/** pack-schema: MCP server ids must be unique across the workspace. */
async function declaredServers(r: DoctorRun): Promise<void> {
  const { collectDeclaredServers } = await import("../core/pack/mcp-declared.ts");
  const declared = await collectDeclaredServers(r.ws, () => {}).catch(() => undefined);
  for (const p of declared?.problems ?? []) if (p.kind === "duplicate-id") r.add("pack-schema", "error", p.pack, p.message);
}

function staleLocks(r: DoctorRun): void {
  for (const l of inspectLocks(r.ws)) {
    if (l.stale) r.add("stale-locks", "warning", null, `${l.path} was left by pid ${l.pid ?? "?"}, which is gone`, true);
  }
}

async function incompleteActions(r: DoctorRun): Promise<void> {
  const { incompleteActions: open } = await import("../core/sync/engine.ts");
  for (const w of open(await runtimeOf(r))) r.add("incomplete-actions", "warning", null, w);
}

const team: CheckStep = (r) => teamFindings(r.ws, r.events, r.add);

/** orphans: lock entries without a live pack, leftovers of rm and killed clones, git dirs nobody registered. */
async function orphans(r: DoctorRun): Promise<void> {
  for (const id of r.lock.keys()) {
    if (!ownedByRegistered(id, r.state)) r.add("orphans", "warning", id, `lockfile entry '${id}' has no registered pack`, true);
  }
  for (const left of r.rt.trashLeftovers(r.ws)) {
    r.add("orphans", "warning", null, `${join(r.rt.trashDir(r.ws), left)} was left by an interrupted grex rm; grex doctor --fix (or the next rm) deletes it`, true);
  }
  for (const left of await leftoverClones(r.ws, r.state, r.lock)) {
    r.add("orphans", "warning", null, `${left} was left by a clone that was killed; grex doctor --fix (or the next add or sync of that pack) deletes it`, true);
  }
  for (const d of await r.rt.graphProblems(r.ws, r.state, r.lock)) r.add("pack-schema", "error", d.pack, d.detail);
  for (const entry of readdirSync(r.ws.root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || r.state.has(entry.name)) continue;
    if (r.rt.isGitRepo(join(r.ws.root, entry.name))) {
      r.add("orphans", "warning", entry.name, `${entry.name}/ is a git repository grex does not manage; grex import --scan registers it`);
    }
  }
}

/** legacy-coexistence: REPOS.json entries not imported, a Rust grex's files, a .scripts/ dir still present. */
function legacy(r: DoctorRun): void {
  const reposJson = join(r.ws.root, "REPOS.json");
  if (existsSync(reposJson)) {
    try {
      const list = JSON.parse(readFileSync(reposJson, "utf8")) as unknown;
      // Entries without a url are not importable (grex import skips them), so they are not "missing".
      const importable = (e: unknown) => e !== null && typeof e === "object" && "path" in e && "url" in e && String(e.url).trim() !== "";
      const paths = Array.isArray(list) ? list.map((e) => (importable(e) ? String((e as { path: unknown }).path) : "")) : [];
      const missing = paths.filter((p) => p !== "" && !r.state.has(p.replace(/\/+$/, "")));
      if (missing.length > 0) {
        r.add("legacy-coexistence", "warning", null, `REPOS.json lists ${missing.length} repo(s) not in grex.jsonl (${missing.slice(0, 3).join(", ")}); run grex import --from-repos-json REPOS.json`);
      }
    } catch {
      r.add("legacy-coexistence", "warning", null, "REPOS.json is not valid JSON");
    }
  }
  const rust = r.rt.describeRustShape(r.rt.rustShape(r.ws));
  if (rust) r.add("legacy-coexistence", "warning", null, rust, true);
  if (existsSync(join(r.ws.root, ".scripts"))) {
    r.add("legacy-coexistence", "warning", null, ".scripts/ is still present; move its setup into pack actions and remove it");
  }
}

/** The checks after the files were read, in the order they run (findings are sorted by DOCTOR_CHECKS afterwards). */
/** mirrors: a note per pack the user's url.<base>.insteadOf sends elsewhere; an error when that URL would be refused. */
async function mirrors(r: DoctorRun): Promise<void> {
  const { bareRewriteError, checkedFetchUrl, mirrorOf, userUrlRewrites } = await import("../core/git/transport/url-rewrite.ts");
  const { displayUrl } = await import("../core/git/transport/url.ts");
  const bare = bareRewriteError(userUrlRewrites());
  if (bare !== null) {
    r.add("mirrors", "error", null, bare.message);
    return;
  }
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(r.ws, r.warn).catch(() => null);
  const mirror = mirrorOf();
  for (const node of view?.packs ?? []) {
    const to = mirror(node.url);
    if (to === null) continue;
    try {
      checkedFetchUrl(node.url);
      r.add("mirrors", "ok", node.id, `fetched from ${to} (url.<base>.insteadOf in your git config); the manifest keeps ${displayUrl(node.url)}`);
    } catch (err) {
      r.add("mirrors", "error", node.id, toGrexError(err).message);
    }
  }
}

/** alternates: a pack borrowing objects (the shared object cache) from a directory that is gone or unreadable; one error per pack. */
async function alternates(r: DoctorRun): Promise<void> {
  const { brokenAlternate } = await import("../core/git/dissociate.ts");
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(r.ws, r.warn).catch(() => null);
  for (const node of view?.packs ?? []) {
    const broken = brokenAlternate(node.dir);
    if (broken === null) continue;
    r.add(
      "alternates",
      "error",
      node.id,
      `pack '${node.id}' borrows its objects from ${broken.path} (named in its objects/info/alternates), which ${broken.why}; restore that directory (the object cache entry), or remove the pack's directory and run grex sync to clone it again.`,
    );
  }
}

/** serve-watch: packs a running `grex serve` cannot watch, so it scans them on every status (doctor-serve.ts). */
async function serveWatch(r: DoctorRun): Promise<void> {
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(r.ws, r.warn).catch(() => null);
  await serveWatchFindings(r.ws, view?.packs ?? [], r.add);
}

/** worktrees: registrations of task workspaces' worktrees (init --from) whose directory is gone, as `git worktree prune` finds them. */
async function worktrees(r: DoctorRun): Promise<void> {
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(r.ws, r.warn).catch(() => null);
  const { linkedWorktreesOf } = await import("../core/git/worktree/worktree-list.ts");
  for (const node of view?.packs ?? []) {
    for (const w of (await linkedWorktreesOf(node.dir)) ?? []) {
      if (w.prunable === null) continue;
      r.add("worktrees", "warning", node.id, `the worktree registered at ${w.path}${w.branch ? ` (branch ${w.branch})` : ""} is stale: ${w.prunable}; --fix prunes the registration, and its branch stays`, true);
    }
  }
}

const CHECK_STEPS: readonly CheckStep[] = [gitignoreSync, onDisk, packStates, mirrors, alternates, declaredServers, serveWatch, worktrees, staleLocks, incompleteActions, team, orphans, legacy];

/** Run every check; findings only (no writes). */
export async function diagnose(ws: Workspace, lint: boolean, warn: (m: string) => void): Promise<{ findings: Finding[]; loaded: Loaded | null }> {
  const findings: Finding[] = [];
  const add = (check: Check, severity: Severity, pack: string | null, detail: string, auto_fixable = false) =>
    void findings.push({ check, severity, pack, detail, auto_fixable });
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
  const has = (check: Check, pack: string) => findings.some((f) => f.check === check && f.pack === pack);
  const run: DoctorRun = { ws, lint, warn, add, has, events, state, lock, rt: await doctorRuntime() };
  for (const step of CHECK_STEPS) await step(run);
  return { findings, loaded: { events, state, lock } };
}

/** A pack's manifest for its ignore block; a pack.yaml that does not load is reported by the pack-schema check. */
export async function manifestOrNull(dir: string): Promise<PackManifest | null> {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  return loadPackYaml(dir).catch(() => null);
}

function lintPack(name: string, dir: string, actions: number, add: (c: Check, s: Severity, p: string | null, d: string) => void) {
  if (!existsSync(join(dir, "README.md"))) add("pack-schema", "warning", name, `pack '${name}' has no README.md`);
  if (actions > 50) add("pack-schema", "warning", name, `pack '${name}' declares ${actions} actions; split it into child packs`);
}

/** A lockfile id is a registered pack's, or a child's inside one (a top-level id may itself hold `/`: `libs/core`). */
export function ownedByRegistered(id: string, state: Map<string, unknown>): boolean {
  if (state.has(id)) return true;
  for (let cut = id.lastIndexOf("/"); cut > 0; cut = id.lastIndexOf("/", cut - 1)) if (state.has(id.slice(0, cut))) return true;
  return false;
}

/**
 * Hidden `.<name>.grex-clone-*` folders a killed clone left: in the workspace
 * root, beside every top-level pack (`libs/` for `libs/core`), and anywhere in
 * a pack a clone goes (children, submodules).
 */
export async function leftoverClones(ws: Workspace, state: Map<string, { path: string }>, lock: Map<string, LockEntry>): Promise<string[]> {
  const { deadClones, deadClonesInside } = await import("../core/git/clone.ts");
  const out: string[] = [];
  const beside = new Set([ws.root, ...[...state.values()].map((p) => dirname(join(ws.root, p.path)))]);
  for (const parent of beside) for (const name of deadClones(parent)) out.push(join(parent, name));
  // Registered packs, and the children the lockfile knows (their ids are their paths).
  const dirs = new Set([...[...state.values()].map((p) => join(ws.root, p.path)), ...[...lock.keys()].filter((id) => id.includes("/")).map((id) => join(ws.root, id))]);
  for (const d of dirs) out.push(...deadClonesInside(d));
  return [...new Set(out)];
}
