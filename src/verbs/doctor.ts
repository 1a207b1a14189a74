// `grex doctor`: check the workspace's files and packs, report findings, and
// (with --fix, CLI only) heal what is safe to heal.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { GrexError, toGrexError } from "../core/errors.ts";
import { isGitRepo, originUrlSync } from "../core/git/backend.ts";
import { ignoreLinesFor, parseBlocks, repairBlocks, updateIgnoreFile } from "../core/gitignore.ts";
import { inspectLocks, removeStaleLocks } from "../core/locks.ts";
import { readLockfile, writeLockfile, type LockEntry } from "../core/lockfile.ts";
import { compactManifest, readManifest, type ManifestEvent, type PackEntry } from "../core/manifest.ts";
import { atomicWriteFile } from "../core/fsutil.ts";
import type { Workspace } from "../core/workspace.ts";
import { STATE_BLOCK_ID } from "./init.ts";
import { defineVerb } from "./types.ts";

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
});

interface Loaded {
  events: ManifestEvent[];
  state: Map<string, PackEntry>;
  lock: Map<string, LockEntry>;
}

/** Run every check; findings only (no writes). */
async function diagnose(ws: Workspace, lint: boolean, warn: (m: string) => void): Promise<{ findings: Finding[]; loaded: Loaded | null }> {
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
      const want = ignoreLinesFor(pack.path);
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

  // stale-locks.
  for (const l of inspectLocks(ws)) {
    if (l.stale) add("stale-locks", "warning", null, `${l.path} was left by pid ${l.pid ?? "?"}, which is gone`, true);
  }

  // incomplete-actions.
  const { incompleteActions } = await import("../core/sync/engine.ts");
  for (const w of incompleteActions(events)) add("incomplete-actions", "warning", null, w);

  // orphans: lock entries without a live pack; git dirs nobody registered.
  for (const id of lock.keys()) {
    const top = id.split("/")[0] as string;
    if (!state.has(top)) add("orphans", "warning", id, `lockfile entry '${id}' has no registered pack`, true);
  }
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
      const paths = Array.isArray(list) ? list.map((e) => (e && typeof e === "object" && "path" in e ? String(e.path) : "")) : [];
      const missing = paths.filter((p) => p !== "" && !state.has(p.replace(/\/+$/, "")));
      if (missing.length > 0) {
        add("legacy-coexistence", "warning", null, `REPOS.json lists ${missing.length} repo(s) not in grex.jsonl (${missing.slice(0, 3).join(", ")}); run grex import --from-repos-json REPOS.json`);
      }
    } catch {
      add("legacy-coexistence", "warning", null, "REPOS.json is not valid JSON");
    }
  }
  if (existsSync(join(ws.root, ".scripts"))) {
    add("legacy-coexistence", "warning", null, ".scripts/ is still present; move its setup into pack actions and remove it");
  }
  return { findings, loaded: { events, state, lock } };
}

function lintPack(name: string, dir: string, actions: number, add: (c: Check, s: Severity, p: string | null, d: string) => void) {
  if (!existsSync(join(dir, "README.md"))) add("pack-schema", "warning", name, `pack '${name}' has no README.md`);
  if (actions > 50) add("pack-schema", "warning", name, `pack '${name}' declares ${actions} actions; split it into child packs`);
}

/** Heal what is safe: ignore blocks, stale locks, orphan lock entries. */
async function fix(ws: Workspace, findings: Finding[], loaded: Loaded): Promise<string[]> {
  const fixed: string[] = [];
  const fixable = new Set(findings.filter((f) => f.auto_fixable).map((f) => f.check));
  if (fixable.has("gitignore-sync")) {
    const gitignore = join(ws.root, ".gitignore");
    if (existsSync(gitignore)) {
      const text = readFileSync(gitignore, "utf8");
      const repaired = repairBlocks(text);
      if (repaired !== text) atomicWriteFile(gitignore, repaired);
    }
    for (const id of parseBlocks(existsSync(gitignore) ? readFileSync(gitignore, "utf8") : "").blocks.keys()) {
      if (id !== STATE_BLOCK_ID && !loaded.state.has(id)) updateIgnoreFile(gitignore, id, null);
    }
    updateIgnoreFile(gitignore, STATE_BLOCK_ID, ["/.grex/.state/"]);
    for (const pack of loaded.state.values()) updateIgnoreFile(gitignore, pack.id, ignoreLinesFor(pack.path));
    fixed.push("gitignore-sync");
  }
  if (fixable.has("stale-locks")) {
    removeStaleLocks(ws);
    fixed.push("stale-locks");
  }
  if (fixable.has("orphans")) {
    const keep = [...loaded.lock.values()].filter((e) => loaded.state.has(e.id.split("/")[0] as string));
    if (keep.length !== loaded.lock.size) {
      await writeLockfile(ws, keep);
      fixed.push("orphans");
    }
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
    fix: v.optional(v.boolean(), false),
    compact: v.optional(v.boolean(), false),
    lint_config: v.optional(v.boolean(), false),
  }),
  result: Result,
  readOnly: true,
  destructive: false,
  mcp: true,
  cliOnly: ["fix", "compact"],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--fix", description: "Heal .gitignore blocks, stale locks and orphan lock entries, then re-check" },
      { flag: "--compact", description: "Compact grex.jsonl and grex.lock.jsonl (fold-equivalent)" },
      { flag: "--lint-config", description: "Also lint pack.yaml style" },
    ],
  },
  async run(ctx, p) {
    const ws = ctx.workspace();
    let { findings, loaded } = await diagnose(ws, p.lint_config, ctx.warn);
    const fixed: string[] = [];
    if (p.fix && loaded) {
      fixed.push(...(await fix(ws, findings, loaded)));
      ({ findings, loaded } = await diagnose(ws, p.lint_config, ctx.warn));
    }
    let compacted = false;
    if (p.compact && loaded && !findings.some((f) => f.severity === "error" && f.check.endsWith("-schema"))) {
      await compactManifest(ws);
      await writeLockfile(ws, readLockfile(ws, { warn: ctx.warn }).values());
      compacted = true;
    }
    // Every check appears: the ones with nothing to say as `ok`.
    for (const check of DOCTOR_CHECKS) {
      if (!findings.some((f) => f.check === check)) findings.push({ check, severity: "ok", pack: null, detail: "ok", auto_fixable: false });
    }
    findings.sort((a, b) => DOCTOR_CHECKS.indexOf(a.check) - DOCTOR_CHECKS.indexOf(b.check));
    const sev = worst(findings);
    const integrity = findings.some((f) => f.severity === "error" && (f.check === "manifest-schema" || f.check === "lockfile-schema"));
    return { exit_code: integrity ? 3 : sev === "ok" ? 0 : 7, worst_severity: sev, findings, fixed, compacted };
  },
  failure(r) {
    if (r.exit_code === 0) return undefined;
    const first = r.findings.find((f) => f.severity !== "ok");
    const msg = `grex doctor found ${r.findings.filter((f) => f.severity !== "ok").length} problem(s) (first: ${first?.check}: ${first?.detail}); grex doctor --fix heals the fixable ones.`;
    return new GrexError(r.exit_code === 3 ? "integrity" : "drift", msg);
  },
  render(r, _p, style) {
    const icon = (s: Severity) => (style.plain ? s.padEnd(7) : s === "ok" ? "✓" : s === "warning" ? "!" : "✗");
    const lines = r.findings.map((f) => `${icon(f.severity)} ${f.check}${f.pack ? ` [${f.pack}]` : ""}${f.severity === "ok" ? "" : `: ${f.detail}`}${f.auto_fixable ? " (fixable)" : ""}`);
    if (r.fixed.length) lines.push(`fixed: ${r.fixed.join(", ")}`);
    if (r.compacted) lines.push("compacted grex.jsonl and grex.lock.jsonl");
    return lines.join("\n");
  },
});
