// Shallow clones: which refs a shallow repository fetches, and (for the local
// transport, where grex is the server) where history is cut at depth n.
import type { ObjectStore } from "../objects/object-store.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { listRefsSync, readSymref } from "../refs/refs.ts";
import { REMOTE, type RemoteRefs } from "./remote-refs.ts";

/** How a fetch treats history: `depth` n cuts it n commits below the wanted tips; INFINITE_DEPTH lifts the boundary. */
export interface FetchDepth {
  /** Deepen to this many commits from the tips (clone --depth n), or INFINITE_DEPTH to unshallow; absent: a plain fetch. */
  depth?: number;
  /** The ref the pack follows (its branch, or a tag), null for the remote's HEAD branch. */
  ref?: string | null;
}

/**
 * A shallow repository tracks one branch, as `git clone --depth` implies
 * `--single-branch`: the pack's ref when it is a branch (or its tag when it
 * is a tag), else the branches it already tracks, else the remote's HEAD
 * branch. Tags other than its own ref are not fetched (no history to hang them on).
 */
export function narrowRefs(gitdir: string, remote: RemoteRefs, ref: string | null | undefined): RemoteRefs {
  const branches = new Map<string, string>();
  const tags = new Map<string, string>();
  const take = (name: string) => {
    const oid = remote.branches.get(name);
    if (oid !== undefined) branches.set(name, oid);
  };
  if (ref && remote.branches.has(ref)) take(ref);
  else if (ref && remote.tags.has(ref)) tags.set(ref, remote.tags.get(ref) as string);
  else {
    const prefix = `refs/remotes/${REMOTE}/`;
    for (const name of listRefsSync(gitdir, prefix).keys()) if (name !== `${prefix}HEAD`) take(name.slice(prefix.length));
    if (branches.size === 0 && remote.defaultBranch !== null) take(remote.defaultBranch);
  }
  const head = readSymref(gitdir, `refs/remotes/${REMOTE}/HEAD`);
  const tracked = head?.startsWith(`refs/remotes/${REMOTE}/`) ? head.slice(`refs/remotes/${REMOTE}/`.length) : null;
  const defaultBranch = remote.defaultBranch !== null && branches.has(remote.defaultBranch) ? remote.defaultBranch : tracked !== null && branches.has(tracked) ? tracked : (branches.keys().next().value ?? null);
  return { branches, tags, defaultBranch };
}

/**
 * The tags a narrowed fetch follows, as git's fetch of a single branch does
 * (its default tag following): each tag of the remote's advertisement not
 * fetched by name, that we lack, whose object is here once the fetch's
 * objects are (a lightweight tag on a commit in the history fetched; an
 * annotated one whose tag object came along: upload-pack's include-tag, or
 * the local transport's copy). Tags on history below the boundary stay out.
 */
export function followedTags(gitdir: string, all: RemoteRefs, narrowed: RemoteRefs): Array<[string, string]> {
  const ours = listRefsSync(gitdir, "refs/tags/");
  const presence = new ObjectPresence(gitdir);
  const out: Array<[string, string]> = [];
  for (const [name, oid] of all.tags) {
    if (narrowed.tags.has(name) || ours.has(`refs/tags/${name}`)) continue;
    if (presence.has(oid)) out.push([`refs/tags/${name}`, oid]);
  }
  return out;
}

/** The object an annotated tag's body names (its `object` line), or null. */
export function taggedObject(data: Buffer): string | null {
  const m = /^object ([0-9a-f]{40})$/m.exec(data.toString("latin1", 0, Math.min(data.length, 200)));
  return m ? (m[1] as string) : null;
}

/** The commit a tip names (through annotated tags), or null. */
function peel(store: ObjectStore, oid: string): string | null {
  for (let i = 0; i < 16; i++) {
    const o = store.read(oid);
    if (!o) return null;
    if (o.type === "commit") return oid;
    if (o.type !== "tag") return null;
    const next = taggedObject(o.data);
    if (next === null) return null;
    oid = next;
  }
  return null;
}

/**
 * Where `git upload-pack` cuts history for `deepen <depth>` (shallow.c
 * get_shallows_or_depth): a tip is at depth 1, a parent one deeper than its
 * nearest child; the commits at depth `depth` (and any commit the source
 * itself has no parents for, `srcShallow`) end the history sent. Returns
 * that boundary, and the commits above it (`inside`: sent whole, their parents too).
 */
export function shallowBoundary(store: ObjectStore, tips: Iterable<string>, depth: number, srcShallow: ReadonlySet<string>): { boundary: Set<string>; inside: Set<string> } {
  const at = new Map<string, number>();
  let level: string[] = [];
  for (const t of tips) {
    const c = peel(store, t);
    if (c !== null && !at.has(c)) {
      at.set(c, 1);
      level.push(c);
    }
  }
  const boundary = new Set<string>();
  const inside = new Set<string>();
  for (let d = 1; level.length > 0; d++) {
    const next: string[] = [];
    for (const oid of level) {
      if (d >= depth || srcShallow.has(oid)) {
        boundary.add(oid);
        continue;
      }
      inside.add(oid);
      for (const p of store.readCommit(oid)?.parents ?? []) {
        if (at.has(p)) continue;
        at.set(p, d + 1);
        next.push(p);
      }
    }
    level = next;
  }
  return { boundary, inside };
}
