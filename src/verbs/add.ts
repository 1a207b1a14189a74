// `grex add <url> [path]`: clone a repository, register it, and install it.
import { shellQuote } from "../core/base/shell-words.ts";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { desc } from "./describe.ts";
import { GrexError, usageError } from "../core/base/errors.ts";
import { cloneFilterProblem, normaliseCloneFilter } from "../core/base/clone-filter.ts";
import { readManifest } from "../core/workspace/manifest.ts";
import { normaliseTags } from "../core/workspace/manifest-fold.ts";
import { BUILTIN_PACK_TYPES, isKnownPackType, packTypeChoices } from "../core/base/registry.ts";
import { defaultPathFromUrl, overlapReason, packPathOverlap, packPathProblem } from "../core/base/naming.ts";
import { dryRunParam, noControlChars, tagList } from "./common.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeEntry, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { StepSchema } from "./sync-shared.ts";
import { stepLines, type StepLike } from "./render-steps.ts";
import { defineVerb, MUTATION_PASS, unlessDryRun } from "./types.ts";

/** Default path: the last URL segment without `.git` (works for URLs, scp-style and local paths). */
export const defaultPathFor = defaultPathFromUrl;

const Result = v.object({
  id: v.string(),
  /** The shallow clone's depth (add --depth), or null for full history. */
  depth: v.nullable(v.number()),
  type: v.string(),
  path: v.string(),
  url: v.string(),
  ref: v.nullable(v.string()),
  sha: v.nullable(v.string()),
  installed: v.boolean(),
  dry_run: v.boolean(),
  /** Child packs (ids) the pack brought (or, in a dry run, would bring). */
  children: v.array(v.string()),
  /** The setup steps run (or, in a dry run, planned). */
  steps: v.array(StepSchema),
  /** An existing clone of the same URL (left by an interrupted add) was taken over instead of cloning. */
  adopted: v.boolean(),
  /** The pack's tags (add --tag), sorted. */
  tags: v.array(v.string()),
});

export const addVerb = defineVerb({
  name: "add",
  description:
    "Register and clone a pack: clones the git repository at url into the workspace (path defaults to the last URL segment), validates its pack.yaml and children, installs it (children and setup) unless install is false, and only then records it in grex.jsonl and .gitignore. All or nothing: on any failure the clone is removed and its setup undone. A dry run clones into a temporary place, validates and plans, then removes it.",
  params: v.strictObject({
    url: desc(
      v.pipe(v.string(), v.minLength(1, "is required"), noControlChars),
      "The git repository to clone: https://host/owner/repo(.git), git@host:owner/repo.git, ssh://…, file://… or a local path. Required.",
    ),
    path: desc(
      v.optional(v.pipe(v.string(), noControlChars)),
      "Where to clone it, relative to the workspace root, e.g. \"tools/mine\"; it becomes the pack id. Default: the URL's last segment without .git (https://…/dotfiles.git → dotfiles).",
    ),
    type: desc(
      v.optional(v.string()),
      "Pack type to use when the repository has no pack.yaml: meta (children only), declarative (actions) or scripted (hook scripts). Default: from pack.yaml, else meta.",
      BUILTIN_PACK_TYPES,
    ),
    ref: desc(
      v.optional(v.pipe(v.string(), v.minLength(1), noControlChars)),
      "Branch, tag or commit sha to pin, e.g. \"v1.2.0\". Default: the remote's HEAD branch, unpinned.",
    ),
    depth: desc(
      v.optional(v.pipe(v.number(), v.integer("must be a whole number of commits"), v.minValue(1, "must be at least 1 (leave it out for full history)"), v.maxValue(0x7fffffff, "must be at most 2147483647"))),
      "A shallow clone: only the latest depth commits of the pack's branch, as git clone --depth does; recorded in grex.jsonl, so every later clone of the pack is shallow too and syncs fetch only what is new. Default: full history. update --depth 0 brings the whole history back.",
    ),
    install: desc(v.optional(v.boolean(), true), "false: clone and register only, without running the pack's setup (children and actions). Default true."),
    recurse_submodules: desc(
      v.optional(v.boolean(), false),
      "true: also clone the repository's git submodules at the commits it records, and keep them there on every later sync (recorded as submodule.recurse in the pack's git config). Default false: submodules stay empty directories, as after a plain git clone.",
    ),
    filter: desc(
      v.optional(v.pipe(v.string(), v.minLength(1, "is required"), noControlChars)),
      "A partial clone, as git clone --filter makes it: \"blob:none\" (history without file contents; the checked-out files' contents are fetched in one batch, others when a later checkout needs them) or \"blob:limit=<n>[k|m|g]\" (leave out larger files). Recorded for the pack, so every later clone keeps it. Default: a full clone.",
    ),
    tag: tagList("Tags for the pack, to select it later with filter 'tag=<t>', e.g. [\"frontend\"] (letters, digits, '.', '_', '-'). Default []: none. Change them with update's tag/untag."),
    dry_run: dryRunParam,
    ...allowOutsideHomeEntry,
  }),
  result: Result,
  readOnly: false,
  effects: unlessDryRun(MUTATION_PASS),
  destructive: false,
  mcp: true,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: [
    "grex add https://github.com/you/dotfiles --filter blob:none",
    "grex add https://github.com/you/web.git apps/web --tag frontend --tag team-a",
    "grex add https://github.com/you/big-repo --depth 1",
  ],
  cli: {
    args: "<url> [path]",
    positionals: ["url", "path"],
    flags: [
      { flag: "--type <type>", description: "Pack type when the repo has no pack.yaml (meta, declarative, scripted)" },
      { flag: "--ref <ref>", description: "Pin a branch, tag or commit sha (default: the remote HEAD)" },
      { flag: "--depth <n>", description: "Shallow clone of the latest n commits (recorded; `update --depth 0` undoes it)", number: true },
      { flag: "--no-install", description: "Clone and register only; do not run the pack's setup" },
      { flag: "--tag <tag>", description: "Tag the pack, so that other verbs select it with --filter tag=<tag> (repeatable)", repeatable: true },
      { flag: "--filter <spec>", description: "Partial clone: blob:none or blob:limit=<n>[k|m|g] (file contents fetched when a checkout needs them)" },
      { flag: "--recurse-submodules", description: "Also clone the repository's git submodules (and keep them at the recorded commits on every sync)" },
      allowOutsideHomeFlag,
    ],
  },
  async run(ctx, p, signal, progress) {
    const ws = ctx.workspace();
    const { transportOf } = await import("../core/git/backend.ts");
    // A relative local path is stored absolute so the manifest works from anywhere.
    const url = transportOf(p.url) === "local" && !p.url.startsWith("file://") ? resolve(ctx.cwd, p.url) : p.url;
    const path = p.path ?? defaultPathFor(url);
    const problem = packPathProblem(path);
    if (problem !== null) {
      const way =
        p.path === undefined
          ? `the URL does not end in a usable name, so give the path: \`grex add ${shellQuote(p.url)} <path>\``
          : "use directory names of letters, digits, '.', '_' and '-' joined by '/', such as 'tools/mine'";
      throw usageError(`Pack path '${path}' is not a workspace-relative path (${problem}); ${way}.`, { field: "path" });
    }
    const filter = p.filter === undefined ? undefined : normaliseCloneFilter(p.filter);
    if (filter === null) throw usageError(`Cannot make a partial clone: ${cloneFilterProblem(p.filter as string)}.`, { field: "filter" });
    if (p.type !== undefined && !isKnownPackType(p.type)) {
      throw new GrexError("plugin", `Unknown pack type '${p.type}'; use ${packTypeChoices()}.`, { field: "type" });
    }
      const { state } = await readManifest(ws, { warn: ctx.warn });
      if (state.has(path)) {
        throw usageError(`A pack '${path}' is already registered (${state.get(path)?.url}); choose another path or grex rm it first.`, {
          field: "path",
        });
      }
      const overlap = packPathOverlap(path, [...state.values()].map((e) => e.path));
      if (overlap !== null) throw usageError(`Pack path '${path}' cannot be used: ${overlapReason(path, overlap)}; choose a path outside it.`, { field: "path" });
      const { plainParentsProblem } = await import("../core/fs/pack-parents.ts");
      const parents = plainParentsProblem(ws.root, path);
      if (parents !== null) throw usageError(`Pack path '${path}' cannot be used: ${parents}.`, { field: "path" });
      const dir = join(ws.root, path);
      const adopted = existsSync(dir) && (await adoptable(dir, url));
      if (existsSync(dir) && !adopted) {
        throw usageError(
          `${dir} already exists and is not a clean clone of ${url}; register an existing clone with \`grex import --scan\` or pick another path.`,
          { field: "path" },
        );
      }
      const tags = normaliseTags(p.tag);
      const spec = { ws, id: path, url, ref: p.ref ?? null, tags, type: p.type, install: p.install, allowOutsideHome: allowsOutsideHome(ctx, p), recurseSubmodules: p.recurse_submodules, depth: p.depth, ...(filter !== undefined ? { filter } : {}) };
      // Lazy: `ls` and `--help` never load the sync engine the add steps use.
      const { addAllOrNothing, planAdd } = await import("./add-steps.ts");
      const depth = p.depth ?? null;
      if (p.dry_run) return { ...(await planAdd(ctx, spec, signal, progress)), adopted, tags, depth };
      return { ...(await addAllOrNothing(ctx, { ...spec, dir, adopted }, signal, progress)), adopted, tags, depth };
  },
  render(r, _p, style) {
    // A plain repository (type meta, no pack.yaml needed) gets no type label: it would explain nothing.
    const type = r.type === "meta" ? "" : ` (${r.type})`;
    const lines = stepLines(r.steps as unknown as StepLike[], style);
    lines.push(
      r.dry_run
        ? `would add ${r.id}${type} from ${r.url} at ${r.sha?.slice(0, 12)}`
        : `added ${r.id}${type} at ${r.sha?.slice(0, 12)}${r.installed ? ", installed" : ", not installed (run grex sync to install)"}${r.adopted ? " (took over the existing clone)" : ""}`,
    );
    if (r.children.length > 0) lines.push(`  children: ${r.children.join(", ")}`);
    if (r.tags.length > 0) lines.push(`  tags: ${r.tags.join(", ")}`);
    if (r.depth !== null) lines.push(`  shallow: the latest ${r.depth} commit${r.depth === 1 ? "" : "s"} (grex update ${r.id} --depth 0 fetches the rest)`);
    return lines.join("\n");
  },
});

/** An existing directory is taken over when it is a clone of the same URL holding no local-only work. */
async function adoptable(dir: string, url: string): Promise<boolean> {
  const { isGitRepo, originUrlSync } = await import("../core/git/backend.ts");
  if (!isGitRepo(dir)) return false;
  const origin = originUrlSync(dir);
  const key = (u: string) => u.replace(/\/+$/, "").replace(/\.git$/, "");
  if (origin === null || key(origin) !== key(url)) return false;
  const { localWork } = await import("../core/git/local-work.ts");
  return (await localWork(dir)).length === 0;
}
