// What git does to a file's bytes between the object store and the work tree
// (gitattributes(5) "Checking-out and checking-in"), for one repository:
//
//   checkout (smudge): blob → end-of-line conversion (eol.ts) → the
//                      `filter.<driver>.smudge` command, if configured;
//   status (clean):    file → `filter.<driver>.clean` → end-of-line
//                      conversion back → hash, compared with the index.
//
// A driver with `filter.<driver>.process` is spoken to through git's
// long-running protocol instead (filter-process.ts): one process per driver
// for the life of a Conversion (a checkout, or one dirty-check loop), which
// its user ends with `close()`.
//
// Attributes come from attributes.ts: at checkout the `.gitattributes` files
// of the tree being checked out, for status those of the work tree (the
// index's copy when the work tree has none), as git reads them. A `filter`
// attribute naming a driver the user has not configured (no
// `filter.<driver>.*` in any git config) leaves the content as stored, as
// git does; `unconfiguredFilters` says which drivers a repository is missing.
//
// Whose commands run: a filter driver is taken from the user's own git config
// (system, XDG, ~/.gitconfig) only. A `filter.<driver>` section that exists
// only in the repository's `.git/config` is never run: that file is written
// by grex from what a pack's upstream said (a URL, a submodule), and a
// command there is not one the user chose. Such a driver counts as
// unconfigured (`missing_filters`). Inside a dry run's scope
// (base/no-commands.ts) no driver runs at all.
import * as fs from "node:fs";
import { join } from "node:path";
import { packOpError } from "../../base/errors.ts";
import { configuredCommandsAllowed } from "../../base/no-commands.ts";
import { type AttrState, Attributes } from "./attributes.ts";
import { LayeredConfig, configBool, envBool, expandConfigPath, xdgConfigPath } from "../refs/config.ts";
import { type EolSettings, crlfAction, eolSettings, hasCrlfText, toGit, toWorktree } from "./eol.ts";
import { parseIndex } from "../objects/index-file.ts";
import { IndexView } from "../objects/index-view.ts";
import { ObjectStore } from "../objects/object-store.ts";
import { gitPath } from "../layout/layout.ts";
import { readIndexBytes } from "../objects/index-manager.ts";
import { FilterProcess } from "./filter-process.ts";

const readText = (path: string): string | null => {
  try {
    return fs.readFileSync(path, "utf8");
  } catch {
    return null;
  }
};

/** The attribute files outside the tree: system, then core.attributesFile (default under XDG). */
function outerSources(cfg: LayeredConfig, env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  if (!envBool(env.GIT_ATTR_NOSYSTEM, false)) {
    const sys = readText("/etc/gitattributes");
    if (sys !== null) out.push(sys);
  }
  const configured = cfg.get("core", null, "attributesfile");
  const file = configured === null ? xdgConfigPath("attributes", env) : expandConfigPath(configured, env);
  const global = file === null ? null : readText(file);
  if (global !== null) out.push(global);
  return out;
}

/** git's sq_quote: the path for `%f`, safe inside a shell command. */
const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''").replace(/!/g, "'\\!'")}'`;

export class Conversion {
  /** Where filter drivers come from: the user's own config files, never the repository's. */
  private readonly drivers: LayeredConfig;
  /** False inside a no-commands scope (a dry run): no driver runs. */
  private readonly commands = configuredCommandsAllowed();
  /** The long-running `filter.<driver>.process` of each driver, started on first use (filter-process.ts). */
  private readonly procs = new Map<string, FilterProcess>();
  private readonly failedRequired = new Map<string, Error>();

  private constructor(
    private readonly dir: string,
    cfg: LayeredConfig,
    private readonly attrs: Attributes,
    private readonly eol: EolSettings,
    /** No attribute anywhere and core.autocrlf false: every file is written as stored (the usual checkout). */
    private readonly identity = false,
  ) {
    this.drivers = cfg.userOnly();
  }

  /**
   * For checking out a tree: `attributeFiles` holds the tree's `.gitattributes`
   * blobs as path → content (regular files only; git does not follow a
   * symlinked one).
   */
  static forTree(dir: string, gitdir: string, attributeFiles: Map<string, string>, env: NodeJS.ProcessEnv = process.env): Conversion {
    const cfg = LayeredConfig.load(gitdir, env);
    const attrs = new Attributes({
      outer: outerSources(cfg, env),
      info: readText(gitPath(gitdir, "info/attributes")),
      treeFile: (d) => attributeFiles.get(d === "" ? ".gitattributes" : `${d}/.gitattributes`) ?? null,
    });
    const eol = eolSettings(cfg);
    return new Conversion(dir, cfg, attrs, eol, attributeFiles.size === 0 && attrs.outerEmpty && eol.autocrlf === "false");
  }

  /** For comparing the work tree with the index: the work tree's attribute files, else the index's (null `gitdir`: no repository, only the user's files). */
  static forWorktree(dir: string, gitdir: string | null, env: NodeJS.ProcessEnv = process.env): Conversion {
    const cfg = LayeredConfig.load(gitdir, env);
    let indexed: Map<string, string> | null = null;
    const fromIndex = (rel: string): string | null => {
      if (gitdir === null) return null;
      if (indexed === null) {
        indexed = new Map();
        // Viewed, not parsed: a path string per entry of a large index would be made only to find a handful.
        const buf = readIndexBytes(gitdir);
        const view = buf && IndexView.of(buf);
        const name = Buffer.from(".gitattributes");
        if (view) for (let i = 0; i < view.count; i++) if (view.hasBaseName(i, name)) indexed.set(view.path(i), view.oid(i));
      }
      const oid = indexed.get(rel);
      if (oid === undefined) return null;
      const store = new ObjectStore(gitdir);
      try {
        const o = store.read(oid);
        return o?.type === "blob" ? o.data.toString("utf8") : null;
      } finally {
        store.close();
      }
    };
    const attrs = new Attributes({
      outer: outerSources(cfg, env),
      info: gitdir === null ? null : readText(gitPath(gitdir, "info/attributes")),
      treeFile: (d) => {
        const rel = d === "" ? ".gitattributes" : `${d}/.gitattributes`;
        try {
          if (fs.lstatSync(join(dir, rel)).isFile()) return fs.readFileSync(join(dir, rel), "utf8");
        } catch {
          // none in the work tree
        }
        return fromIndex(rel);
      },
    });
    return new Conversion(dir, cfg, attrs, eolSettings(cfg));
  }

  attributesOf(path: string): Map<string, AttrState> {
    return this.attrs.get(path);
  }

  /** The configured driver named by the path's `filter` attribute, or null. */
  private driver(a: Map<string, AttrState>): { name: string; required: boolean } | null {
    const name = a.get("filter");
    if (!this.commands || typeof name !== "string" || !this.drivers.hasSubsection("filter", name)) return null;
    return { name, required: configBool(this.drivers.get("filter", name, "required")) === true };
  }

  /** The driver's long-running process when it has `filter.<driver>.process` (git prefers it to smudge/clean), else null. */
  private processOf(drv: { name: string; required: boolean }): FilterProcess | null {
    const cmd = this.drivers.get("filter", drv.name, "process");
    if (cmd === null || cmd === "") return null;
    // A required driver that failed fails every later file of this checkout at once (no restart per file).
    const failed = this.failedRequired.get(drv.name);
    if (failed) throw failed;
    let proc = this.procs.get(drv.name);
    if (proc === undefined) this.procs.set(drv.name, (proc = new FilterProcess(cmd, this.dir)));
    return proc;
  }

  /** What a file becomes when the process did not convert it: as stored (as git), or the required driver's error. */
  private unconverted(path: string, data: Uint8Array, drv: { name: string; required: boolean }, kind: "smudge" | "clean", proc: FilterProcess): Uint8Array {
    if (!drv.required) return data;
    const first = this.failedRequired.get(drv.name);
    if (first) throw first; // a request queued before the first failure
    proc.retire(); // what is still queued is not sent
    const err = packOpError(`${join(this.dir, path)}: the ${kind} filter '${drv.name}' (filter.${drv.name}.process) failed (${proc.lastError}); fix the filter, then sync again.`);
    this.failedRequired.set(drv.name, err);
    throw err;
  }

  private runFilter(path: string, data: Uint8Array, drv: { name: string; required: boolean }, kind: "smudge" | "clean"): Uint8Array {
    const proc = this.processOf(drv);
    if (proc !== null) return proc.run(kind, path, data) ?? this.unconverted(path, data, drv, kind, proc);
    const cmd = this.drivers.get("filter", drv.name, kind);
    if (cmd === null || cmd === "") {
      if (drv.required) throw packOpError(`${join(this.dir, path)}: the required ${kind} filter '${drv.name}' has no command configured (filter.${drv.name}.${kind}); configure it, then sync again.`);
      return data;
    }
    const line = cmd.replace(/%(.)/g, (m, c: string) => (c === "f" ? shellQuote(path) : c === "%" ? "%" : m));
    const p = Bun.spawnSync(["sh", "-c", line], { cwd: this.dir, stdin: data, stdout: "pipe", stderr: "pipe" });
    if (p.exitCode === 0) return p.stdout;
    if (drv.required) {
      const why = p.stderr.toString().trim().split("\n").pop() ?? "";
      throw packOpError(`${join(this.dir, path)}: the ${kind} filter '${drv.name}' failed (exit ${p.exitCode}${why ? `: ${why}` : ""}); fix the filter, then sync again.`);
    }
    return data; // git too keeps the content when an optional filter fails
  }

  /**
   * Checkout: the bytes git writes for blob `data` at `path`. A long-running
   * filter process's requests queue up while other files are read and
   * written; a per-file `smudge` command runs synchronously.
   */
  async smudge(path: string, data: Uint8Array): Promise<Uint8Array> {
    return this.smudgeSync(path, data) ?? this.smudgeByProcess(path, data);
  }

  /**
   * `smudge` without waiting: the bytes to write, or null when the path's
   * driver is a long-running process (its answer is awaited: `smudge`).
   */
  smudgeSync(path: string, data: Uint8Array): Uint8Array | null {
    if (this.identity) return data;
    const a = this.attrs.get(path);
    const out = toWorktree(data, crlfAction(a, this.eol), this.eol);
    const drv = this.driver(a);
    if (drv === null) return out;
    if (this.drivers.get("filter", drv.name, "process")) return null;
    return this.runFilter(path, out, drv, "smudge");
  }

  private async smudgeByProcess(path: string, data: Uint8Array): Promise<Uint8Array> {
    const a = this.attrs.get(path);
    const out = toWorktree(data, crlfAction(a, this.eol), this.eol);
    const drv = this.driver(a);
    if (drv === null) return out;
    const proc = this.processOf(drv);
    if (proc === null) return this.runFilter(path, out, drv, "smudge");
    return (await proc.runAsync("smudge", path, out)) ?? this.unconverted(path, out, drv, "smudge", proc);
  }

  /** Status: the bytes git hashes for work-tree content `data` at `path`; `indexBlob` reads the index's version. */
  clean(path: string, data: Uint8Array, indexBlob: () => Uint8Array | null): Uint8Array {
    const a = this.attrs.get(path);
    const drv = this.driver(a);
    const filtered = drv ? this.runFilter(path, data, drv, "clean") : data;
    return toGit(filtered, crlfAction(a, this.eol), () => {
      const b = indexBlob();
      return b !== null && hasCrlfText(b);
    });
  }

  /** Stop the long-running filter processes this conversion started (call when its checkout or check is done). */
  close(): void {
    for (const p of this.procs.values()) p.stop();
    this.procs.clear();
  }

  /** Filter drivers the paths' attributes name that the user's git config does not define. */
  unconfigured(paths: Iterable<string>): string[] {
    const missing = new Set<string>();
    for (const p of paths) {
      const f = this.attrs.get(p).get("filter");
      if (typeof f === "string" && !this.drivers.hasSubsection("filter", f)) missing.add(f);
    }
    return [...missing].sort();
  }
}

// The dirty check hashes files in one synchronous loop: one Conversion per
// work tree serves that loop and is dropped when it yields (a microtask), so
// an edited .gitattributes or config is read afresh by the next check.
const live = new Map<string, { conv: Conversion; store: ObjectStore | null; gitdir: string | null }>();

function liveFor(dir: string, gitdir: string | null) {
  let l = live.get(dir);
  if (!l) {
    const made = { conv: Conversion.forWorktree(dir, gitdir), store: null as ObjectStore | null, gitdir };
    l = made;
    live.set(dir, made);
    queueMicrotask(() => {
      made.conv.close();
      made.store?.close();
      live.delete(dir);
    });
  }
  return l;
}

/**
 * The object id git computes for the work-tree file at `rel` (after the clean
 * conversion its attributes ask for); `indexOid` is the index entry's blob
 * ("" when there is none to consult).
 */
export function hashWorktreeFile(dir: string, gitdir: string | null, rel: string, abs: string, st: fs.Stats, indexOid: string): string {
  const raw = st.isSymbolicLink() ? Buffer.from(fs.readlinkSync(abs), "utf8") : fs.readFileSync(abs);
  let content: Uint8Array = raw;
  if (!st.isSymbolicLink()) {
    const l = liveFor(dir, gitdir);
    content = l.conv.clean(rel, raw, () => {
      if (indexOid === "" || l.gitdir === null) return null; // no index entry to ask (an interrupted move's paths)
      const o = (l.store ??= new ObjectStore(l.gitdir)).read(indexOid);
      return o?.type === "blob" ? o.data : null;
    });
  }
  // One hasher for every file (digest resets it): a hasher each left native memory the collector does not see until it finalises them.
  fileHasher ??= new Bun.CryptoHasher("sha1");
  return fileHasher.update(`blob ${content.length}\0`).update(content).digest("hex");
}

let fileHasher: Bun.CryptoHasher | null = null;

/** The `.gitattributes` files among a tree's regular files (path → oid), for Conversion.forTree. */
export function attributePaths(files: Iterable<[path: string, mode: number, oid: string]>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [p, mode, oid] of files) if ((mode === 0o100644 || mode === 0o100755) && (p === ".gitattributes" || p.endsWith("/.gitattributes"))) out.set(p, oid);
  return out;
}

/**
 * Filter drivers the tracked files of `dir` need and the user's own git config does not define
 * (empty when none). Looked into only when the top-level `.gitattributes` or
 * the info file mentions a filter: a report must stay cheap for the usual
 * repository that has none.
 */
export function unconfiguredFilters(dir: string, gitdir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  // Two reads, usually of missing files; the config files only when a filter is named.
  const texts = [readText(join(dir, ".gitattributes")), readText(gitPath(gitdir, "info/attributes"))];
  if (!texts.some((t) => t !== null && t.includes("filter"))) return [];
  const buf = readIndexBytes(gitdir);
  const entries = (buf && parseIndex(buf)) || [];
  return Conversion.forWorktree(dir, gitdir, env).unconfigured(entries.filter((e) => e.mode !== 0o160000).map((e) => e.path));
}

