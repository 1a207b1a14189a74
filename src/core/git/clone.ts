// All-or-nothing clones: build the repository next to its target under a
// hidden name and rename it into place only once it is complete. A failed or
// cancelled clone leaves nothing behind, not even parent directories it made.
import { indexPath } from "./layout/layout.ts";
import { endUnpublished, startUnpublished, syncUnpublished } from "./layout/unpublished.ts";
import * as fs from "node:fs";
import { basename, dirname, join } from "node:path";
import { packOpError, throwIfAborted } from "../base/errors.ts";
import { parseIndex } from "./objects/index-file.ts";
import { gitdirOf } from "./refs/refs.ts";
import type { HeadInfo } from "./refs/head.ts";

export async function cloneAtomically(dir: string, signal: AbortSignal, fill: (tmp: string) => Promise<HeadInfo>): Promise<HeadInfo> {
  throwIfAborted(signal);
  if (fs.existsSync(dir) && !isEmptyDir(dir)) throw packOpError(`${dir} already exists and is not empty; remove it or choose another path.`);
  const parent = dirname(dir);
  const made = fs.mkdirSync(parent, { recursive: true }); // first directory created, if any
  removeDeadClones(parent, basename(dir));
  const tmp = join(parent, `.${basename(dir)}.grex-clone-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  startUnpublished(tmp);
  try {
    const head = await fill(tmp);
    throwIfAborted(signal);
    await syncUnpublished(tmp); // what was written unsynced is durable before the clone gets its name
    throwIfAborted(signal);
    try {
      fs.renameSync(tmp, dir); // replaces an empty directory too
    } catch (err) {
      const code = (err as { code?: string }).code ?? "rename failed";
      throw packOpError(`could not move the finished clone into ${dir} (${code}); something was created there meanwhile — remove it, then run the command again.`, { dir });
    }
    return head;
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (made !== undefined) removeEmptyUpTo(parent, made);
    throw err;
  } finally {
    endUnpublished(tmp);
  }
}

/**
 * A clone killed mid-way (SIGKILL, power loss) leaves its hidden temp dir
 * behind; remove those of `name` (of any pack, without one) whose process is gone, so they do not pile up
 * as untracked clutter next to the pack. A live owner's dir is left alone.
 */
export function removeDeadClones(parent: string, name?: string): void {
  for (const entry of deadClones(parent, name)) fs.rmSync(join(parent, entry), { recursive: true, force: true });
}

/** Leftover clone folders in `parent` (of `name`, or of any pack) whose process is gone: their names. */
export function deadClones(parent: string, name?: string): string[] {
  let entries: string[];
  try {
    entries = fs.readdirSync(parent);
  } catch {
    return [];
  }
  return entries.filter((entry) => {
    const m = /^\.(.+)\.grex-clone-(\d+)-[0-9a-z]+$/.exec(entry);
    if (!m || (name !== undefined && m[1] !== name)) return false;
    const pid = Number(m[2]);
    return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !processAlive(pid);
  });
}

/**
 * Leftover clone folders inside the repository at `dir` (absolute paths):
 * in its top directory (a child pack's clone) and beside each of its
 * submodules, recursively into populated ones (a submodule's clone killed
 * mid-way). Found from the index's gitlinks (read only when the repository
 * has a `.gitmodules`), so the work tree is not walked.
 */
export function deadClonesInside(dir: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const look = (parent: string) => {
    if (seen.has(parent)) return;
    seen.add(parent);
    for (const name of deadClones(parent)) out.push(join(parent, name));
  };
  const walk = (repo: string, depth: number) => {
    look(repo);
    // grex clones only submodules .gitmodules declares: without one, no gitlink needs the index read.
    if (depth > 8 || !fs.existsSync(join(repo, ".gitmodules"))) return;
    const gitdir = gitdirOf(repo);
    if (!gitdir) return;
    let entries: ReturnType<typeof parseIndex> = null;
    try {
      entries = parseIndex(fs.readFileSync(indexPath(gitdir)));
    } catch {
      return; // no index, or one we cannot read: nothing more to look at
    }
    for (const e of entries ?? []) {
      if (e.mode !== 0o160000) continue;
      const sub = join(repo, e.path);
      look(dirname(sub));
      if (fs.existsSync(join(sub, ".git"))) walk(sub, depth + 1);
    }
  };
  walk(dir, 0);
  return out;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM"; // exists, owned by someone else
  }
}

function isEmptyDir(path: string): boolean {
  try {
    return fs.readdirSync(path).length === 0;
  } catch {
    return false;
  }
}

/** rmdir `from` and its parents up to and including `top`, stopping at the first non-empty one. */
function removeEmptyUpTo(from: string, top: string): void {
  let cur = from;
  for (;;) {
    try {
      fs.rmdirSync(cur);
    } catch {
      return;
    }
    if (cur === top || dirname(cur) === cur) return;
    cur = dirname(cur);
  }
}
