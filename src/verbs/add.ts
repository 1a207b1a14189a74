// `grex add <url> [path]`: clone a repository, register it, and install it.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { GrexError, packOpError, usageError } from "../core/errors.ts";
import { backendFor, transportOf } from "../core/git/backend.ts";
import { ignoreLinesFor, updateIgnoreFile } from "../core/gitignore.ts";
import { tryAcquireWorkspaceLock, withBackendLock, withPackLock } from "../core/locks.ts";
import { appendEvents, makeEvent, readManifest } from "../core/manifest.ts";
import { isKnownPackType } from "../core/registry.ts";
import { PACK_ID_RE, dryRunParam } from "./common.ts";
import { defineVerb } from "./types.ts";

/** Default path: the last URL segment without `.git` (works for URLs, scp-style and local paths). */
export function defaultPathFor(url: string): string {
  const trimmed = url.replace(/[/\\]+$/, "");
  const last = trimmed.split(/[/\\:]/).pop() ?? "";
  return last.replace(/\.git$/, "");
}

const Result = v.object({
  id: v.string(),
  type: v.string(),
  path: v.string(),
  url: v.string(),
  ref: v.nullable(v.string()),
  sha: v.nullable(v.string()),
  installed: v.boolean(),
  dry_run: v.boolean(),
});

export const addVerb = defineVerb({
  name: "add",
  description:
    "Register and clone a pack: clones the git repository at url into the workspace (path defaults to the last URL segment), records it in grex.jsonl, ignores it in .gitignore, then installs it (children and setup) unless install is false.",
  params: v.strictObject({
    url: v.pipe(v.string(), v.minLength(1, "is required")),
    path: v.optional(v.string()),
    type: v.optional(v.string()),
    ref: v.optional(v.pipe(v.string(), v.minLength(1))),
    install: v.optional(v.boolean(), true),
    dry_run: dryRunParam,
  }),
  result: Result,
  readOnly: false,
  destructive: false,
  mcp: true,
  cli: {
    args: "<url> [path]",
    positionals: ["url", "path"],
    flags: [
      { flag: "--type <type>", description: "Pack type when the repo has no pack.yaml (meta, declarative, scripted)" },
      { flag: "--ref <ref>", description: "Pin a branch, tag or commit sha (default: the remote HEAD)" },
      { flag: "--no-install", description: "Clone and register only; do not run the pack's setup" },
    ],
  },
  async run(ctx, p, signal, progress) {
    const ws = ctx.workspace();
    // A relative local path is stored absolute so the manifest works from anywhere.
    const url = transportOf(p.url) === "local" && !p.url.startsWith("file://") ? resolve(ctx.cwd, p.url) : p.url;
    const path = p.path ?? defaultPathFor(url);
    if (!PACK_ID_RE.test(path) || path === "." || path === "..") {
      throw usageError(
        `Pack path '${path}' must be a bare directory name (letters, digits, '.', '_', '-'); pass a path argument.`,
        { field: "path" },
      );
    }
    if (p.type !== undefined && !isKnownPackType(p.type)) {
      throw new GrexError("plugin", `Unknown pack type '${p.type}'; use meta, declarative or scripted.`, { field: "type" });
    }
    const lock = p.dry_run ? null : tryAcquireWorkspaceLock(ws, "add");
    try {
      const { state } = await readManifest(ws, { warn: ctx.warn });
      if (state.has(path)) {
        throw usageError(`A pack '${path}' is already registered (${state.get(path)?.url}); choose another path or grex rm it first.`, {
          field: "path",
        });
      }
      const dir = join(ws.root, path);
      if (existsSync(dir)) {
        throw usageError(`${dir} already exists; register an existing clone with \`grex import --scan\` or pick another path.`, {
          field: "path",
        });
      }
      if (p.dry_run) {
        return { id: path, type: p.type ?? "meta", path, url: url, ref: p.ref ?? null, sha: null, installed: false, dry_run: true };
      }
      progress(0, 1, `cloning ${url}`);
      const backend = backendFor(url);
      const head = await ctx.scheduler.withPermit(signal, () =>
        withPackLock(ws, dir, signal, () =>
          withBackendLock(ws, dir, signal, () => backend.clone(url, dir, { ref: p.ref ?? null, signal })),
        ),
      );
      const { loadPackYaml } = await import("../core/pack/load.ts");
      const manifest = await loadPackYaml(dir);
      const type = manifest?.type ?? p.type ?? "meta";
      await appendEvents(ws, [makeEvent("add", path, { url: url, path, type, ref: p.ref ?? null })], signal);
      updateIgnoreFile(join(ws.root, ".gitignore"), path, ignoreLinesFor(path));
      let installed = false;
      if (p.install) {
        const { runSync } = await import("../core/sync/engine.ts"); // lazy: `ls` and `--help` never load the engine
        const report = await runSync(
          ctx,
          { mode: "sync", ids: [path], only: [], filter: undefined, ref: null, force: false, failFast: false, recursive: true, dryRun: false, lockHeld: true },
          signal,
          progress,
        );
        const failed = report.packs.find((r) => r.result === "failed");
        if (failed) {
          throw packOpError(
            `Pack '${path}' was cloned and registered, but installing ${failed.id} failed: ${failed.message.replace(/\.$/, "")}; fix it and run grex sync ${path}.`,
          );
        }
        installed = true;
      }
      return { id: path, type, path, url: url, ref: p.ref ?? null, sha: head.sha, installed, dry_run: false };
    } finally {
      lock?.release();
    }
  },
  render(r) {
    if (r.dry_run) return `would add ${r.id} from ${r.url}`;
    return `added ${r.id} [${r.type}] at ${r.sha?.slice(0, 12)}${r.installed ? ", installed" : ""}`;
  },
});
