// The workspace's packs as one pre-ordered list: top-level packs from the
// manifest, each followed by its children as recorded in the lockfile. This is
// what `ls`, `status`, `run` and `exec` iterate; it never loads pack.yaml files.
import { join, sep } from "node:path";
import type { LockEntry } from "./lockfile.ts";
import { readLockfile } from "./lockfile.ts";
import type { ManifestEvent, PackEntry } from "./manifest.ts";
import { readManifest } from "./manifest.ts";
import type { Workspace } from "../base/workspace.ts";

export interface PackNode {
  id: string;
  /** Workspace-relative path, `/`-separated (equals the id). */
  path: string;
  dir: string;
  type: string;
  url: string;
  ref: string | null;
  depth: number;
  parent: string | null;
  lock: LockEntry | undefined;
  /** The tags of its top-level pack (`add --tag`; children carry their top-level pack's), sorted; [] for none. */
  tags: readonly string[];
}

export interface WorkspaceView {
  ws: Workspace;
  manifest: Map<string, PackEntry>;
  lock: Map<string, LockEntry>;
  packs: PackNode[];
  /** The manifest's events, parsed on first call. */
  events(): readonly ManifestEvent[];
  /** Packs whose last install was cut short (an action bracket never closed). */
  interrupted: ReadonlySet<string>;
}

const NO_TAGS: readonly string[] = Object.freeze([]);

/**
 * What `join(root, rel)` puts before a validated pack path (name segments, no
 * `.`/`..`, no empty ones) under a resolved root: on POSIX a plain prefix, so
 * the per-pack loops below concatenate instead of calling `join` (a cold call
 * per pack was most of a 1,000-pack view); undefined where `join` must run.
 */
function dirPrefix(root: string): string | undefined {
  if (sep !== "/") return undefined;
  return root.endsWith("/") ? root : `${root}/`;
}

/**
 * The top-level packs, each followed by its children (`visit`). A function of
 * its own: this loop runs once per pack and gets compiled by the JIT on a
 * large workspace, which costs less for a small function than for the caller.
 */
function pushTopLevel(
  packs: PackNode[],
  tops: Iterable<PackEntry>,
  root: string,
  prefix: string | undefined,
  lock: Map<string, LockEntry>,
  visit: ((parentId: string, depth: number, tags: readonly string[]) => void) | undefined,
): void {
  const noLock = lock.size === 0;
  for (const pack of tops) {
    packs.push({
      id: pack.id,
      path: pack.path,
      dir: prefix === undefined ? join(root, pack.path) : prefix + pack.path,
      type: pack.type,
      url: pack.url,
      ref: pack.ref,
      depth: 0,
      parent: null,
      lock: noLock ? undefined : lock.get(pack.id),
      tags: pack.tags ?? NO_TAGS,
    });
    if (visit !== undefined) visit(pack.id, 1, pack.tags ?? NO_TAGS);
  }
}

export async function loadWorkspaceView(ws: Workspace, warn: (m: string) => void): Promise<WorkspaceView> {
  const folded = await readManifest(ws, { warn });
  const lock = readLockfile(ws, { warn });
  const childrenOf = new Map<string, LockEntry[]>();
  for (const entry of lock.values()) {
    const cut = entry.id.lastIndexOf("/");
    if (cut < 0) continue;
    const parent = entry.id.slice(0, cut);
    const list = childrenOf.get(parent);
    if (list) list.push(entry);
    else childrenOf.set(parent, [entry]);
  }
  const packs: PackNode[] = [];
  const prefix = dirPrefix(ws.root);
  const visitChildren = (parentId: string, depth: number, tags: readonly string[]) => {
    for (const child of childrenOf.get(parentId) ?? []) {
      packs.push({
        id: child.id,
        path: child.id,
        dir: prefix === undefined ? join(ws.root, child.id) : prefix + child.id,
        type: child.type,
        url: child.url ?? "",
        ref: child.ref ?? null,
        depth,
        parent: parentId,
        lock: child,
        tags,
      });
      visitChildren(child.id, depth + 1, tags);
    }
  };
  pushTopLevel(packs, folded.ordered ?? folded.state.values(), ws.root, prefix, lock, childrenOf.size > 0 ? visitChildren : undefined);
  return {
    ws,
    get manifest() {
      return folded.state; // built on first use when the packs came from the snapshot
    },
    lock,
    packs,
    events: () => folded.events,
    interrupted: folded.interrupted,
  };
}
