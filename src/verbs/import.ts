// `grex import`: register existing repositories (a REPOS.json index and/or
// untracked git dirs found by --scan). Registers only; `grex sync` clones.
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { integrityError, usageError } from "../core/base/errors.ts";
import { firstIssue } from "../core/base/issues.ts";
import { controlCharProblem, GIT_REFUSES, overlapReason, packPathOverlap, packPathProblem, TAG_RE } from "../core/base/naming.ts";
import { plainParentsProblem } from "../core/fs/pack-parents.ts";
import { withManifestLock } from "../core/locks/locks.ts";
import { normaliseTags } from "../core/workspace/manifest-fold.ts";
import { appendEventsLocked, makeEvent, readManifest, readManifestLocked, type ManifestEvent, type PackEntry } from "../core/workspace/manifest.ts";
import type { editIgnoreFile } from "../core/workspace/gitignore.ts";
import { BUILTIN_PACK_TYPES, isKnownPackType, packTypeChoices } from "../core/base/registry.ts";
import { PEER_FORMATS, type PeerFormat } from "../core/compat/peer-manifests.ts";
import { dryRunParam } from "./common.ts";
import { defineVerb, unlessDryRun } from "./types.ts";

// An empty url is allowed (the Rust grex's sample has one): such entries are skipped and reported.
const ReposJson = v.array(v.object({ url: v.string(), path: v.string() }));

interface Candidate {
  path: string;
  url: string;
  source: "repos-json" | "scan" | "peer";
  /** A pin another tool recorded (west/repo revision, vcstool version, mr's clone -b); null: the remote's default. */
  ref: string | null;
}

const Result = v.object({
  dry_run: v.boolean(),
  imported: v.array(v.object({ path: v.string(), url: v.string(), type: v.string() })),
  skipped: v.array(v.object({ path: v.string(), reason: v.string() })),
  failed: v.array(v.object({ path: v.string(), error: v.string() })),
  notes: v.array(v.string()),
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
  // A control character in a url is refused for the whole file, before anything is registered (exit 3).
  parsed.output.forEach((e, i) => {
    const bad = controlCharProblem("its url", e.url) ?? controlCharProblem("its path", e.path);
    if (bad !== null) throw integrityError(`${file}: entry ${i + 1} is refused: ${bad}; fix that entry, then run grex import again.`, { file, entry: i + 1 });
  });
  const out: Candidate[] = [];
  for (const e of parsed.output) {
    const path = e.path.replace(/\/+$/, "");
    if (e.url.trim() === "") skipped.push({ path, reason: "no url (a pack here is a git repository; give it a url to import it)" });
    else out.push({ path, url: e.url, source: "repos-json", ref: null });
  }
  return out;
}

/** Untracked git dirs one level deep that have an `origin` remote. */
async function scanWorkspace(
  root: string,
  known: Set<string>,
  skipped: { path: string; reason: string }[],
  failed: { path: string; error: string }[],
): Promise<Candidate[]> {
  const { isGitRepo, originUrlSync } = await import("../core/git/backend.ts");
  const found: Candidate[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".") || known.has(entry.name)) continue;
    const dir = join(root, entry.name);
    if (!isGitRepo(dir)) continue;
    const url = originUrlSync(dir);
    const bad = url === null ? null : controlCharProblem("its origin URL", url);
    if (url === null) skipped.push({ path: entry.name, reason: "no origin remote" });
    else if (bad !== null) failed.push({ path: entry.name, error: `${bad}; set a clean one with git remote set-url origin <url>` });
    else found.push({ path: entry.name, url, source: "scan", ref: null });
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}

export const importVerb = defineVerb({
  name: "import",
  description:
    "Register existing repositories as packs: from another tool's list (vcstool .repos, west.yml, a repo manifest, gita's repos.csv, myrepos' .mrconfig), a REPOS.json index ([{url,path}]) and/or by scanning the workspace for untracked git directories. Groups become tags and revisions pins. Registers only (run sync to clone); idempotent, deduplicated by path.",
  params: v.strictObject({
    from_repos_json: desc(
      v.optional(v.string()),
      "Path of a REPOS.json file (a JSON array of {\"url\", \"path\"} objects) inside the workspace, relative to its root, e.g. \"REPOS.json\". Give this, scan, or both.",
    ),
    from: desc(
      v.optional(v.string()),
      "Path of another tool's repository list: a vcstool .repos file, west.yml, a repo manifest (.xml, with local includes), gita's repos.csv (groups.csv beside it gives tags) or a myrepos .mrconfig. The format is told from the name or content; see format.",
    ),
    format: desc(
      v.optional(v.picklist(PEER_FORMATS)),
      "The format of from when its name and content do not tell: vcstool, west, repo, gita or mrconfig.",
      PEER_FORMATS,
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
  fileParams: ["from_repos_json", "from"],
  examples: [
    "grex import --scan",
    "grex import --from west.yml",
    "grex import --from-repos-json REPOS.json",
  ],
  cli: {
    args: "",
    positionals: [],
    flags: [
      { flag: "--from <file>", description: "Import another tool's list: .repos, west.yml, repo .xml, gita repos.csv, .mrconfig" },
      { flag: "--format <format>", description: "Format of --from when its name does not tell (vcstool|west|repo|gita|mrconfig)" },
      { flag: "--from-repos-json <file>", description: "Import the [{url,path}] entries of a REPOS.json file" },
      { flag: "--scan", description: "Register untracked git dirs one level deep (uses their origin URL)" },
      { flag: "--default-type <type>", description: "Type for packs without a pack.yaml (default: meta)" },
      { flag: "--force", description: "Re-point an already registered path to a different URL" },
      { flag: "--migrate-gitignore", description: "Move hand-kept .gitignore lines for imported dirs into managed blocks" },
    ],
  },
  async run(ctx, params, signal, progress) {
    if (params.format !== undefined && params.from === undefined) throw usageError("--format describes --from; pass --from <file> with it.", { field: "format" });
    if (params.from === undefined && params.from_repos_json === undefined && !params.scan) {
      throw usageError("Nothing to import: pass --from <file>, --from-repos-json <file> and/or --scan.", { field: "from" });
    }
    if (!isKnownPackType(params.default_type)) {
      throw usageError(`Unknown --default-type '${params.default_type}'; use ${packTypeChoices()}.`, {
        field: "default_type",
      });
    }
    const ws = ctx.workspace();
    const skipped: { path: string; reason: string }[] = [];
    const failed: { path: string; error: string }[] = [];
    const candidates: Candidate[] = [];
    const notes: string[] = [];
    const tagsOf = new Map<string, string[]>();
    if (params.from !== undefined) {
      const peer = await readPeerCandidates(ws.root, params.from, params.format);
      candidates.push(...peer.candidates);
      for (const [path, tags] of peer.tagsOf) tagsOf.set(path, tags);
      failed.push(...peer.failed);
      notes.push(...peer.notes);
      for (const n of notes) ctx.warn(n);
    }
    if (params.from_repos_json !== undefined) candidates.push(...(await readReposJson(resolve(ws.root, params.from_repos_json), skipped)));
    if (params.scan) {
      // A first look only to narrow the scan; what gets registered is decided below, under the lock.
      const { state } = await readManifest(ws, { warn: ctx.warn });
      const listed = new Set([...state.keys(), ...candidates.map((c) => c.path)]);
      candidates.push(...(await scanWorkspace(ws.root, listed, skipped, failed)));
    }

    // Per-candidate facts that do not depend on the manifest: checked before taking the lock.
    const valid: Array<Candidate & { type: string }> = [];
    const seen = new Map<string, string>();
    const { loadPackYaml } = await import("../core/pack/load.ts");
    let done = 0;
    for (const c of candidates) {
      progress(done++, candidates.length, c.path);
      const problem = packPathProblem(c.path);
      if (problem !== null) {
        failed.push({ path: c.path, error: `path is not a workspace-relative path (${problem})` });
        continue;
      }
      const parents = plainParentsProblem(ws.root, c.path);
      if (parents !== null) {
        failed.push({ path: c.path, error: parents });
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
    const decide = (events: readonly ManifestEvent[], state: Map<string, PackEntry>) => decideImports(valid, events, state, params.force, tagsOf, skipped, failed);
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
    return { dry_run: params.dry_run, imported, skipped, failed, notes };
  },
  failure(r, params) {
    if (r.failed.length === 0) return undefined;
    // A clone whose origin URL holds a control character: a workspace file git refuses (exit 3).
    const refused = r.failed.find((f) => f.error.includes(GIT_REFUSES));
    if (refused !== undefined) {
      return integrityError(`${refused.path} was not imported: ${refused.error.replace(/; set a clean one.*$/, "")}; set a clean one with git remote set-url origin <url>, then run grex import again.`);
    }
    // --force re-points registered paths; it is no way out for a bad entry.
    const forceable = r.failed.every((f) => f.error.includes("--force"));
    const source = params.from ?? params.from_repos_json ?? "the list";
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

/** `--from`: another tool's list as candidates, with the tags its groups give and what it says that grex does not carry over. */
async function readPeerCandidates(root: string, file: string, format: PeerFormat | undefined) {
  const { readPeerFile } = await import("./import-peers.ts");
  const peer = await readPeerFile(root, file, format);
  const candidates: Candidate[] = [];
  const tagsOf = new Map<string, string[]>();
  const notes = [...peer.notes];
  for (const e of peer.entries) {
    // As with REPOS.json: a file that carries a control character is refused whole (exit 3).
    const bad = controlCharProblem("its url", e.url) ?? controlCharProblem("its path", e.path) ?? (e.ref === null ? null : controlCharProblem("its revision", e.ref));
    if (bad !== null) throw integrityError(`${e.at}: the entry for ${JSON.stringify(e.path)} is refused: ${bad}; fix ${file} and run grex import again.`);
    candidates.push({ path: e.path, url: e.url, source: "peer", ref: e.ref });
    const untaggable = e.tags.filter((t) => !TAG_RE.test(t));
    if (untaggable.length > 0) notes.push(`${e.at}: the group${untaggable.length === 1 ? "" : "s"} ${untaggable.join(", ")} of ${e.path} cannot be a tag (letters, digits, '.', '_', '-') and ${untaggable.length === 1 ? "was" : "were"} left out.`);
    const tags = normaliseTags(e.tags.filter((t) => TAG_RE.test(t)));
    if (tags.length > 0) tagsOf.set(e.path, tags);
  }
  return { candidates, tagsOf, failed: peer.problems, notes };
}

/** What to register, given what the manifest holds (read under its lock): new paths, re-pointed ones (--force), and why the rest are not. */
function decideImports(
  valid: ReadonlyArray<Candidate & { type: string }>,
  events: readonly ManifestEvent[],
  state: Map<string, PackEntry>,
  force: boolean,
  tagsOf: ReadonlyMap<string, string[]>,
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
  // The path rule (naming.ts) against what is registered and what this run registers before it.
  const taken = [...state.values()].map((e) => e.path);
  for (const c of valid) {
    const current = state.get(c.path);
    const overlap = current ? null : packPathOverlap(c.path, taken);
    if (overlap !== null) {
      failed.push({ path: c.path, error: `${overlapReason(c.path, overlap)}; choose a path outside it` });
    } else if (current) {
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
      taken.push(c.path);
      const tags = tagsOf.get(c.path);
      toAppend.push(makeEvent("add", c.path, { url: c.url, path: c.path, type: c.type, ref: c.ref, ...(tags ? { tags } : {}) }));
    }
  }
  return { imported, toAppend };
}
