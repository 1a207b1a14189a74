// What a pack may touch: the one confinement rule. Every target an action
// writes, moves or deletes (symlink dst, mkdir/rmdir path, backups) and every
// exec cwd is decided here, on the real path (symlinks of existing ancestors
// resolved), never on what the pack wrote:
//   allowed   inside HOME, but not HOME itself or its ancestors;
//   never     the workspace root, a registered pack's directory, anything
//             inside another pack, anything else inside the workspace (its
//             own area, unless the workspace holds HOME), a path written
//             inside the pack that the pack's own symlinks lead out of both
//             the pack and HOME, a `.git` directory or anything in it,
//             grex's own files (grex.jsonl, grex.lock.jsonl, .grex/), the
//             filesystem root, and any ancestor of these;
//   outside HOME  refused unless the user passed --allow-outside-home on the
//             command line for this run (never a pack, never MCP).
// A directory about to be deleted or moved aside is also refused when it holds
// a `.git` anywhere inside (found by walking it without following links).
import { lstatSync, readdirSync, readlinkSync } from "node:fs";
import { dirname, isAbsolute, join, parse, relative, resolve, sep } from "node:path";
import { GrexError } from "../base/errors.ts";
import { homeOf } from "../base/vars.ts";

/** Stable names of the rule's refusals (step details `refused`, error data `rule`). */
export type ConfineRule =
  | "git-dir"
  | "grex-files"
  | "pack-dir"
  | "other-pack"
  | "workspace-root"
  | "workspace"
  | "pack-link"
  | "filesystem-root"
  | "home"
  | "holds-protected"
  | "holds-git"
  | "outside-home"
  | "task-workspace";

export interface ConfineScope {
  /** HOME as the run sees it. */
  home: string;
  /** The workspace root, or null when the caller has no workspace (unit tests). */
  workspaceRoot: string | null;
  /** Every registered pack's directory, top-level and children. */
  packDirs: readonly string[];
  /** The user opted in on the command line for this run. */
  allowOutsideHome: boolean;
  /**
   * A task workspace's root (`init --from`) when setup that writes outside it
   * (into HOME, shared by every workspace on the machine) is to be skipped:
   * such a target is refused with rule `task-workspace`, which the executor
   * reports as a skipped step. Null or absent: no such limit.
   */
  stayIn?: string | null;
}

export interface Refusal {
  rule: ConfineRule;
  /** The real path that was judged. */
  real: string;
  /** A clause: why, and what to do. */
  reason: string;
}

const MAX_LINK_HOPS = 40;
// Case-insensitive file systems (macOS, Windows) spell one path several ways.
const fold = process.platform === "linux" ? (s: string) => s : (s: string) => s.toLowerCase();

function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/**
 * The path the kernel would reach for `p`: each existing component that is a
 * symlink replaced by its target (recursively), `..` applied to the real
 * parent. The last component is followed only when `followLast`; what does
 * not exist yet is appended as written.
 */
export function physicalPath(p: string, followLast = false): string {
  const abs = resolve(p);
  const root = parse(abs).root;
  const queue = abs.slice(root.length).split(/[\\/]+/).filter(Boolean);
  let cur = root;
  let hops = 0;
  while (queue.length > 0) {
    const part = queue.shift() as string;
    if (part === ".") continue;
    if (part === "..") {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, part);
    if (queue.length === 0 && !followLast) return next;
    if (lstatOrNull(next)?.isSymbolicLink()) {
      if (++hops > MAX_LINK_HOPS) return next; // a loop: nothing can be created through it anyway
      const link = readlinkSync(next);
      if (isAbsolute(link)) cur = parse(resolve(link)).root;
      queue.unshift(...link.split(/[\\/]+/).filter(Boolean));
      continue;
    }
    cur = next;
  }
  return cur;
}

/** `p` is `root` or inside it (both already real). */
export function within(root: string, p: string): boolean {
  const rel = relative(fold(root), fold(p));
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
}

const hasGitPart = (p: string) => p.split(/[\\/]+/).some((part) => part.toLowerCase() === ".git");

interface Protected {
  path: string;
  what: string;
}

export class Confinement {
  readonly allowOutsideHome: boolean;
  readonly home: string;
  /** See ConfineScope.stayIn (resolved), or null. */
  readonly stayIn: string | null;
  private readonly root: string | null;
  private readonly packs: string[];
  private readonly grexFiles: Protected[];
  /** Everything whose ancestors are protected too. */
  private readonly anchors: Protected[];

  constructor(scope: ConfineScope) {
    this.allowOutsideHome = scope.allowOutsideHome;
    this.home = physicalPath(scope.home, true);
    this.stayIn = scope.stayIn ? physicalPath(scope.stayIn, true) : null;
    this.root = scope.workspaceRoot === null ? null : physicalPath(scope.workspaceRoot, true);
    this.packs = [...new Set(scope.packDirs.map((d) => physicalPath(d, true)))];
    const ws = this.root;
    this.grexFiles = [
      ...(ws ? ["grex.jsonl", "grex.lock.jsonl", ".grex"].map((n) => ({ path: join(ws, n), what: `grex's own ${n}` })) : []),
      ...this.packs.map((d) => ({ path: join(d, ".grex"), what: "a pack's .grex contract directory" })),
    ];
    this.anchors = [
      { path: this.home, what: `HOME (${this.home})` },
      ...(ws ? [{ path: ws, what: `the workspace ${ws}` }] : []),
      ...this.packs.map((d) => ({ path: d, what: `the pack directory ${d}` })),
      ...this.grexFiles,
    ];
  }

  /** The registered pack whose directory is the deepest one holding `real`, or null. */
  private packHolding(real: string): string | null {
    let best: string | null = null;
    for (const d of this.packs) if (within(d, real) && (best === null || d.length > best.length)) best = d;
    return best;
  }

  /**
   * Why pack `ownDir` may not write, move or delete `target` (an absolute
   * path as the action will use it), or null when it may. `cwd` judges an
   * exec working directory instead: nothing is written there, so HOME itself
   * and the pack's own directory are fine.
   */
  refusal(target: string, ownDir: string, opts: { cwd?: boolean } = {}): Refusal | null {
    const real = physicalPath(target, opts.cwd === true);
    const own = physicalPath(ownDir, true);
    const no = (rule: ConfineRule, why: string, hint = "a pack may never touch it; fix the path"): Refusal => ({
      rule,
      real,
      reason: `${why}; ${hint}`,
    });
    if (opts.cwd && within(own, real) && !hasGitPart(relative(own, real))) return null;
    if (this.stayIn !== null && !within(this.stayIn, real)) {
      return no("task-workspace", `it lies outside the task workspace ${this.stayIn}`, "setup that writes into HOME is skipped in a task workspace unless asked for (grex init --from … --setup-home)");
    }
    if (hasGitPart(real)) return no("git-dir", "it is a .git directory or inside one");
    if (dirname(real) === real) return no("filesystem-root", "it is the filesystem root");
    const grex = this.grexFiles.find((g) => within(g.path, real));
    if (grex) return no("grex-files", `it is ${grex.what}${fold(grex.path) === fold(real) ? "" : " or inside it"}`);
    const holder = this.packHolding(real);
    if (holder !== null && fold(holder) === fold(real)) return no("pack-dir", "it is a registered pack's directory");
    if (holder !== null && fold(holder) !== fold(own)) return no("other-pack", `it is inside another pack (${holder})`);
    if (this.root !== null && fold(this.root) === fold(real)) return no("workspace-root", "it is the workspace root");
    // The workspace's own area (its root's loose files and directories) belongs to no pack; when the
    // workspace holds HOME, what lies in HOME is judged as HOME.
    if (this.root !== null && holder === null && within(this.root, real) && !within(own, real) && !within(this.root, this.home)) {
      return no("workspace", `it is inside the workspace but in no pack (the workspace ${this.root})`);
    }
    // A path written inside the pack that the pack's own links lead out of it: the pack chose where it goes.
    const written = resolve(target);
    if ((within(resolve(ownDir), written) || within(own, written)) && !within(own, real) && !within(this.home, real)) {
      return no("pack-link", "it is written inside the pack, but a symlink in the pack leads it out of the pack and HOME");
    }
    const isHome = fold(this.home) === fold(real);
    if (isHome && opts.cwd) return null;
    if (isHome) return no("home", "it is HOME itself");
    const held = this.anchors.find((a) => within(real, a.path));
    if (held) return no("holds-protected", `it holds ${held.what}`);
    if (!within(this.home, real) && !this.allowOutsideHome) {
      return no(
        "outside-home",
        `it is outside HOME (${this.home})`,
        "pass --allow-outside-home on the command line to allow paths outside HOME for one run",
      );
    }
    return null;
  }

  /** As refusal(), for an existing directory about to be deleted or moved aside: also nothing inside may be a `.git`. */
  treeRefusal(target: string, ownDir: string): Refusal | null {
    const first = this.refusal(target, ownDir);
    if (first) return first;
    const st = lstatOrNull(target);
    if (!st?.isDirectory()) return null;
    const git = findGit(target);
    if (git === null) return null;
    return {
      rule: "holds-git",
      real: physicalPath(target),
      reason: `it holds a git repository (${git}); move that repository out first, or fix the path`,
    };
  }
}

/** The first `.git` entry under `dir` (links are not followed: deleting a link leaves its target alone). */
function findGit(dir: string): string | null {
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop() as string;
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.name.toLowerCase() === ".git") return p;
      if (e.isDirectory()) stack.push(p);
    }
  }
  return null;
}

/** A confinement refusal as an error (exit 4), carrying the action, the path and the rule. */
export function confinementError(refusal: Refusal, where: string, raw: string): GrexError {
  const shown = raw === refusal.real ? raw : `'${raw}', real path ${refusal.real}`;
  return new GrexError("pack_op", `refusing ${where} (${shown}): ${refusal.reason}.`, {
    action: where,
    path: refusal.real,
    refused: refusal.rule,
  });
}

/** The rule for actions run inside a workspace: every registered pack (ids are workspace-relative paths) is known. */
export function workspaceConfinement(
  root: string,
  packIds: Iterable<string>,
  env: Record<string, string | undefined>,
  allowOutsideHome: boolean,
  stayIn: string | null = null,
): Confinement {
  const packDirs = [...new Set(packIds)].map((id) => join(root, id));
  return new Confinement({ home: homeOf(env), workspaceRoot: root, packDirs, allowOutsideHome, stayIn });
}
