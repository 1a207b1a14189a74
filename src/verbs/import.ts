// `grex import`: register existing repositories (a REPOS.json index and/or
// untracked git dirs found by --scan). Registers only; `grex sync` clones.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { usageError } from "../core/base/errors.ts";
import { firstIssue } from "../core/base/issues.ts";
import { isBareName } from "../core/base/naming.ts";
import { withManifestLock } from "../core/locks/locks.ts";
import { appendEventsLocked, makeEvent, readManifest, readManifestLocked, type ManifestEvent, type PackEntry } from "../core/workspace/manifest.ts";
import type { editIgnoreFile } from "../core/workspace/gitignore.ts";
import { BUILTIN_PACK_TYPES, isKnownPackType, packTypeChoices } from "../core/base/registry.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb, unlessDryRun } from "./types.ts";

// An empty url is allowed (the Rust grex's sample has one): such entries are skipped and reported.
const ReposJson = v.array(v.object({ url: v.string(), path: v.string() }));

interface Candidate {
  path: string;
  url: string;
  source: "repos-json" | "scan";
}

const Result = v.object({
  dry_run: v.boolean(),
  imported: v.array(v.object({ path: v.string(), url: v.string(), type: v.string() })),
  skipped: v.array(v.object({ path: v.string(), reason: v.string() })),
  failed: v.array(v.object({ path: v.string(), error: v.string() })),
});

/** REPOS.json is an index of URLs: 4 MiB holds tens of thousands of entries. */
const MAX_REPOS_JSON_BYTES = 4 * 1024 * 1024;

async function readReposJson(file: string, skipped: { path: string; reason: string }[]): Promise<Candidate[]> {
  const { ABSENT, readRegularFile } = await import("../core/fs/read-file.ts");
  const bytes = readRegularFile(file, {
    inside: null,
    maxBytes: MAX_REPOS_JSON_BYTES,
    error: (message) => usageError(message, { field: "from_repos_json" }),
    tooBig: "is over the 4 MiB limit for REPOS.json; split it into several files",
  });
  if (bytes === ABSENT) throw usageError(`Cannot read REPOS.json at ${file}; check the --from-repos-json path.`);
  const text = bytes.toString("utf8");
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw usageError(`${file} is not valid JSON; it must be a list of {"url","path"} objects.`);
  }
  const parsed = v.safeParse(ReposJson, data);
  if (!parsed.success) {
    const { field } = firstIssue(parsed.issues);
    // Name the place and the expectation only: the message never echoes the file's content.
    const expected = parsed.issues[0].expected ?? "a valid value";
    throw usageError(`${file} does not match [{"url","path"}] at ${field || "top level"}: expected ${expected}; fix that entry.`);
  }
  const out: Candidate[] = [];
  for (const e of parsed.output) {
    const path = e.path.replace(/\/+$/, "");
    if (e.url.trim() === "") skipped.push({ path, reason: "no url (a pack here is a git repository; give it a url to import it)" });
    else out.push({ path, url: e.url, source: "repos-json" });
  }
  return out;
}

/** Untracked git dirs one level deep that have an `origin` remote. */
async function scanWorkspace(root: string, known: Set<string>, skipped: { path: string; reason: string }[]): Promise<Candidate[]> {
  const { isGitRepo, originUrlSync } = await import("../core/git/backend.ts");
  const found: Candidate[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || known.has(entry.name)) continue;
    const dir = join(root, entry.name);
    if (!isGitRepo(dir)) continue;
    const url = originUrlSync(dir);
    if (url === null) skipped.push({ path: entry.name, reason: "no origin remote" });
    else found.push({ path: entry.name, url, source: "scan" });
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}

export const importVerb = defineVerb({
  name: "import",
  description:
    "Register existing repositories as packs: from a REPOS.json index ([{url,path}]) and/or by scanning the workspace for untracked git directories. Registers only (run sync to clone); idempotent, deduplicated by path.",
  params: v.strictObject({
    from_repos_json: desc(
      v.optional(v.string()),
      "Path of a REPOS.json file (a JSON array of {\"url\", \"path\"} objects) inside the workspace, relative to its root, e.g. \"REPOS.json\". Give this, scan, or both.",
    ),
    scan: desc(
      v.optional(v.boolean(), false),
      "true: also register git directories one level below the workspace root that are not packs yet (their origin URL becomes the pack url). Default false.",
    ),
    default_type: desc(v.optional(v.string(), "meta"), "Pack type for repositories without a pack.yaml. Default meta.", BUILTIN_PACK_TYPES),
    force: desc(v.optional(v.boolean(), false), "true: re-point a path that is already registered to the URL found now. Default false: such paths are skipped."),
    migrate_gitignore: desc(
      v.optional(v.boolean(), false),
      "true: move hand-written .gitignore lines for the imported directories into grex's managed blocks. Default false.",
    ),
    dry_run: dryRunParam,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun({ workspace: "none", packs: "none", writes: true }),
  destructive: false,
  mcp: true,
  fileParams: ["from_repos_json"],
  examples: [
    "grex import --scan",
    "grex import --from-repos-json REPOS.json",
    "grex import --scan --default-type declarative",
  ],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--from-repos-json <file>", description: "Import the [{url,path}] entries of a REPOS.json file" },
      { flag: "--scan", description: "Register untracked git dirs one level deep (uses their origin URL)" },
      { flag: "--default-type <type>", description: "Type for packs without a pack.yaml (default: meta)" },
      { flag: "--force", description: "Re-point an already registered path to a different URL" },
      { flag: "--migrate-gitignore", description: "Move hand-kept .gitignore lines for imported dirs into managed blocks" },
    ],
  },
  async run(ctx, params, signal, progress) {
    if (params.from_repos_json === undefined && !params.scan) {
      throw usageError("Nothing to import: pass --from-repos-json <file> and/or --scan.", { field: "from_repos_json" });
    }
    if (!isKnownPackType(params.default_type)) {
      throw usageError(`Unknown --default-type '${params.default_type}'; use ${packTypeChoices()}.`, {
        field: "default_type",
      });
    }
    const ws = ctx.workspace();
    const skipped: { path: string; reason: string }[] = [];
    const candidates: Candidate[] = [];
    if (params.from_repos_json !== undefined) candidates.push(...(await readReposJson(resolve(ws.root, params.from_repos_json), skipped)));
    if (params.scan) {
      // A first look only to narrow the scan; what gets registered is decided below, under the lock.
      const { state } = await readManifest(ws, { warn: ctx.warn });
      const listed = new Set([...state.keys(), ...candidates.map((c) => c.path)]);
      candidates.push(...(await scanWorkspace(ws.root, listed, skipped)));
    }

    // Per-candidate facts that do not depend on the manifest: checked before taking the lock.
    const failed: { path: string; error: string }[] = [];
    const valid: Array<Candidate & { type: string }> = [];
    const seen = new Map<string, string>();
    const { loadPackYaml } = await import("../core/pack/load.ts");
    let done = 0;
    for (const c of candidates) {
      progress(done++, candidates.length, c.path);
      if (!isBareName(c.path)) {
        failed.push({ path: c.path, error: "path must be a bare directory name (letters, digits, '.', '_', '-'; no '/' or '..')" });
        continue;
      }
      const prevInRun = seen.get(c.path);
      if (prevInRun !== undefined) {
        if (prevInRun === c.url) skipped.push({ path: c.path, reason: "listed twice" });
        else failed.push({ path: c.path, error: `listed twice with different urls (${prevInRun}, ${c.url})` });
        continue;
      }
      seen.set(c.path, c.url);
      let type = params.default_type;
      const dir = join(ws.root, c.path);
      if (existsSync(dir)) {
        try {
          type = (await loadPackYaml(dir))?.type ?? type;
        } catch (err) {
          failed.push({ path: c.path, error: err instanceof Error ? err.message : String(err) });
          continue;
        }
      }
      valid.push({ ...c, type });
    }
    progress(candidates.length, candidates.length);

    // What the manifest holds decides the rest: read it under the manifest lock
    // and append in the same hold, so concurrent imports cannot both register a path.
    const decide = (events: readonly ManifestEvent[], state: Map<string, PackEntry>) => decideImports(valid, events, state, params.force, skipped, failed);
    const read = { warn: ctx.warn, keepEvents: true };
    const { imported } = params.dry_run
      ? await readManifest(ws, read).then((m) => decide(m.events, m.state))
      : await withManifestLock(ws, signal, () => {
          const m = readManifestLocked(ws, read);
          const d = decide(m.events, m.state);
          appendEventsLocked(ws, d.toAppend, { warn: ctx.warn });
          return d;
        });
    if (!params.dry_run) {
      const { editIgnoreFile, updateIgnoreFile, ignoreLinesFor } = await import("../core/workspace/gitignore.ts");
      const gitignore = join(ws.root, ".gitignore");
      for (const item of imported) {
        if (params.migrate_gitignore) removeHandKeptLine(gitignore, item.path, editIgnoreFile);
        updateIgnoreFile(gitignore, item.path, ignoreLinesFor(item.path));
      }
    }
    return { dry_run: params.dry_run, imported, skipped, failed };
  },
  failure(r, params) {
    if (r.failed.length === 0) return undefined;
    // --force re-points registered paths; it is no way out for a bad entry.
    const forceable = r.failed.every((f) => f.error.includes("--force"));
    const source = params.from_repos_json ?? "the list";
    const way = forceable ? "pass --force to re-point them" : `correct ${r.failed.length === 1 ? "that entry" : "those entries"} in ${source} and run grex import again`;
    return usageError(
      `${r.failed.length} of ${r.failed.length + r.imported.length + r.skipped.length} entries could not be imported (first: ${r.failed[0]?.path}: ${r.failed[0]?.error}); ${way}.`,
    );
  },
  render(r) {
    const out: string[] = [];
    for (const i of r.imported) out.push(`${r.dry_run ? "would import" : "imported"} ${i.path}  [${i.type}]  ${i.url}`);
    for (const s of r.skipped) out.push(`skipped ${s.path}: ${s.reason}`);
    for (const f of r.failed) out.push(`failed ${f.path}: ${f.error}`);
    return out.length ? out.join("\n") : "Nothing to import.";
  },
});

/** `--migrate-gitignore`: drop a hand-kept ignore line for `path` (outside managed blocks); a block replaces it. */
function removeHandKeptLine(gitignore: string, path: string, edit: typeof editIgnoreFile): void {
  if (!existsSync(gitignore)) return;
  const forms = new Set([path, `/${path}`, `${path}/`, `/${path}/`]);
  edit(gitignore, "its migrated lines", (text) => {
    let inBlock = false;
    return text
      .split(/(?<=\n)/)
      .filter((line) => {
        const t = line.trim();
        if (t.startsWith("# >>> grex:")) inBlock = true;
        else if (t.startsWith("# <<< grex:")) inBlock = false;
        else if (!inBlock && forms.has(t)) return false;
        return true;
      })
      .join("");
  });
}

/** What to register, given what the manifest holds (read under its lock): new paths, re-pointed ones (--force), and why the rest are not. */
function decideImports(
  valid: ReadonlyArray<Candidate & { type: string }>,
  events: readonly ManifestEvent[],
  state: Map<string, PackEntry>,
  force: boolean,
  skipped: { path: string; reason: string }[],
  failed: { path: string; error: string }[],
): { imported: { path: string; url: string; type: string }[]; toAppend: ManifestEvent[] } {
  const removed = new Set<string>();
  for (const e of events) {
    if (e.op === "rm") removed.add(e.id);
    else if (e.op === "add") removed.delete(e.id);
  }
  const imported: { path: string; url: string; type: string }[] = [];
  const toAppend: ManifestEvent[] = [];
  for (const c of valid) {
    const current = state.get(c.path);
    if (current) {
      if (current.url === c.url) skipped.push({ path: c.path, reason: "already registered" });
      else if (force) {
        imported.push({ path: c.path, url: c.url, type: current.type });
        toAppend.push(makeEvent("update", c.path, { url: c.url }));
      } else {
        failed.push({ path: c.path, error: `already registered with url ${current.url}; pass --force to re-point it to ${c.url}` });
      }
    } else if (removed.has(c.path) && !force) {
      skipped.push({ path: c.path, reason: "removed earlier (grex rm); pass --force to register it again" });
    } else {
      imported.push({ path: c.path, url: c.url, type: c.type });
      toAppend.push(makeEvent("add", c.path, { url: c.url, path: c.path, type: c.type, ref: null }));
    }
  }
  return { imported, toAppend };
}
