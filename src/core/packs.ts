// The workspace's packs as one pre-ordered list: top-level packs from the
// manifest, each followed by its children as recorded in the lockfile. This is
// what `ls`, `status`, `run` and `exec` iterate; it never loads pack.yaml files.
import { join, sep } from "node:path";
import type { LockEntry } from "./lockfile.ts";
import { readLockfile } from "./lockfile.ts";
import type { ManifestEvent, PackEntry } from "./manifest.ts";
import { readManifest } from "./manifest.ts";
import type { Workspace } from "./workspace.ts";

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
}

export interface WorkspaceView {
  ws: Workspace;
  manifest: Map<string, PackEntry>;
  lock: Map<string, LockEntry>;
  packs: PackNode[];
  /** The manifest's events, parsed on first call. */
  events(): readonly ManifestEvent[];
}

/**
 * `join(root, rel)` for a resolved root and a validated pack path (name
 * segments, no `.`/`..`, no empty ones), which is a plain concatenation on
 * POSIX; a cold `join` per pack was most of a 1,000-pack view.
 */
function packDir(root: string, rel: string): string {
  if (sep !== "/") return join(root, rel);
  return root.endsWith("/") ? root + rel : `${root}/${rel}`;
}

export async function loadWorkspaceView(ws: Workspace, warn: (m: string) => void): Promise<WorkspaceView> {
  const folded = await readManifest(ws, { warn });
  const { state } = folded;
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
  const visitChildren = (parentId: string, depth: number) => {
    for (const child of childrenOf.get(parentId) ?? []) {
      packs.push({
        id: child.id,
        path: child.id,
        dir: packDir(ws.root, child.id),
        type: child.type,
        url: child.url ?? "",
        ref: child.ref ?? null,
        depth,
        parent: parentId,
        lock: child,
      });
      visitChildren(child.id, depth + 1);
    }
  };
  for (const pack of state.values()) {
    packs.push({
      id: pack.id,
      path: pack.path,
      dir: packDir(ws.root, pack.path),
      type: pack.type,
      url: pack.url,
      ref: pack.ref,
      depth: 0,
      parent: null,
      lock: lock.get(pack.id),
    });
    if (childrenOf.size > 0) visitChildren(pack.id, 1);
  }
  return { ws, manifest: state, lock, packs, events: () => folded.events };
}
