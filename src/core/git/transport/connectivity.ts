// Is everything a new tip needs here? Run before any ref moves to a fetched
// object: a fetch killed half-way (or a server that sent too little) can
// leave a commit whose tree or blobs are missing, and a ref must never point
// at such a commit — the next checkout would fail for good. The walk starts
// at the new tips and stops at commits our refs already name (they were
// checked when they moved) and at a shallow boundary.
import { packOpError } from "../../base/errors.ts";
import { displayUrl } from "./url.ts";
import { Collector, PER_OBJECT_GARBAGE } from "../objects/garbage.ts";
import { type GitObject, ObjectStore, parseCommit } from "../objects/object-store.ts";
import { changedEntries } from "../objects/tree-changes.ts";
import { ObjectPresence } from "../objects/objects.ts";
import type { PackLinks } from "../objects/pack-links.ts";
import { CANONICAL_MODES } from "../objects/path-verify.ts";
import { listRefsSync, resolveRefSync } from "../refs/refs.ts";
import { readShallow } from "../layout/layout.ts";
import { isPartialClone } from "./promisor.ts";

/** The commits our refs name now: complete by the rule above. */
export function knownTips(gitdir: string): Set<string> {
  const out = new Set<string>();
  const head = resolveRefSync(gitdir, "HEAD");
  if (head) out.add(head);
  for (const prefix of ["refs/heads/", "refs/remotes/", "refs/tags/"]) for (const oid of listRefsSync(gitdir, prefix).values()) out.add(oid);
  return out;
}


/** Objects read ahead of the walk are kept up to this many bytes. */
const AHEAD_BYTES = 32 * 1024 * 1024;

/** A missing object and what it is to the history, e.g. "the file 'a/b' of commit 1234abcd5678". */
export interface Gap {
  oid: string;
  role: string;
}

/**
 * The first object reachable from `tips` that is missing here, with its role,
 * or null when every commit, tree and blob they need is present. `stop`:
 * commits taken as complete (default: what our refs name).
 *
 * A commit's tree is compared with its first parent's (tree-changes.ts): an
 * entry the parent holds at the same path with the same id is left to the
 * parent, which is complete (`stop`) or walked too, so each commit costs what
 * it changed, not its whole tree; a root or shallow commit is walked whole.
 * `firstFetch` (nothing of ours yet): every commit and the presence of its
 * tree only.
 */
export function firstGap(gitdir: string, tips: Iterable<string>, stop: Set<string> = knownTips(gitdir), opts: { firstFetch?: boolean } = {}): Gap | null {
  const store = new ObjectStore(gitdir);
  const presence = new ObjectPresence(gitdir);
  const shallow = readShallow(gitdir);
  const promised = isPartialClone(gitdir);
  const seen = new Set<string>();
  const stack: string[] = [];
  // Where each queued object sits: its commit and, for a tree, its directory ("" for the root).
  const place = new Map<string, { commit: string; dir: string | null }>();
  // A queued tree's counterpart in the parent commit, when there is one.
  const baseOf = new Map<string, string>();
  const want = (oid: string, commit: string, dir: string | null, base?: string) => {
    if (seen.has(oid) || stop.has(oid)) return;
    seen.add(oid);
    place.set(oid, { commit, dir });
    if (base !== undefined) baseOf.set(oid, base);
    stack.push(oid);
  };
  // Objects read ahead (a parent commit, its tree as a base), kept until the walk reaches them,
  // which is next: the store's own cache is full early in a long history.
  // Bounded by bytes (a wide repository's trees are large); what falls out is read again if needed.
  const ahead = new Map<string, GitObject>();
  let aheadBytes = 0;
  const garbage = new Collector();
  const read = (oid: string, keep: boolean): GitObject | null => {
    const got = ahead.get(oid);
    if (got) {
      if (!keep) {
        ahead.delete(oid);
        aheadBytes -= got.data.length;
      }
      return got;
    }
    const o = store.read(oid);
    // Each read leaves more than its data behind (ids, parsed fields, inflate windows): a fixed share per object.
    if (o) garbage.add(o.data.length + PER_OBJECT_GARBAGE);
    if (o && keep) {
      if (aheadBytes + o.data.length > AHEAD_BYTES) {
        ahead.clear();
        aheadBytes = 0;
      }
      ahead.set(oid, o);
      aheadBytes += o.data.length;
    }
    return o;
  };
  // The parent's side is only compared against, never judged here: unreadable, it leaves nothing out.
  const rawTree = (oid: string | undefined): Buffer | null => {
    if (oid === undefined) return null;
    const o = read(oid, true);
    return o?.type === "tree" ? o.data : null;
  };
  const parentTreeOf = (oid: string): string | undefined => {
    const o = read(oid, true);
    return o?.type === "commit" ? (parseCommit(o.data)?.tree ?? undefined) : undefined;
  };
  const roleOf = (oid: string): string => roleOfPlace(oid, place.get(oid));
  const roleOfPlace = (oid: string, at: { commit: string; dir: string | null } | undefined): string => {
    if (!at || at.dir === null) return `commit ${oid.slice(0, 12)}`;
    const c = at.commit.slice(0, 12);
    return at.dir === "" ? `the tree of commit ${c}` : `the tree of directory '${at.dir}' in commit ${c}`;
  };
  try {
    for (const t of tips) want(t, t, null);
    while (stack.length > 0) {
      const oid = stack.pop() as string;
      const obj = read(oid, false);
      if (!obj) {
        if (!presence.has(oid)) return { oid, role: roleOf(oid) };
        continue; // present but not readable natively (an unusual pack): trusted, as git's reader would read it
      }
      // Its place is needed only while it is walked; a long history must not keep one per object.
      const here = place.get(oid);
      place.delete(oid);
      const base = baseOf.get(oid);
      baseOf.delete(oid);
      if (obj.type === "commit") {
        const c = parseCommit(obj.data);
        if (!c) return { oid, role: roleOfPlace(oid, here) };
        const isShallow = shallow.has(oid);
        const parentTree = isShallow || c.parents.length === 0 || opts.firstFetch ? undefined : parentTreeOf(c.parents[0] as string);
        if (!isShallow) for (const p of c.parents) want(p, p, null);
        if (opts.firstFetch) {
          // A first fetch: every commit of the history and its tree are here. What lies below a tree is read
          // when a checkout reaches it (the clone's own checkout reads all of its commit's), named if missing.
          if (!presence.has(c.tree)) return { oid: c.tree, role: `the tree of commit ${oid.slice(0, 12)}` };
          continue;
        }
        // Queued last, so walked next, while the parent's tree just read is still in the store's cache.
        // The same tree as the parent's: checked with the parent.
        if (parentTree !== c.tree) want(c.tree, oid, "", parentTree);
      } else if (obj.type === "tree") {
        const entries = changedEntries(obj.data, rawTree(base));
        if (!entries) return { oid, role: roleOfPlace(oid, here) };
        const at = here ?? { commit: oid, dir: "" };
        for (const e of entries) {
          // A submodule's commit lives in the submodule; an entry of a mode git cannot hold is never checked out (the checkout refuses its tree, naming it).
          if (e.mode === "160000" || !CANONICAL_MODES.has(e.mode)) continue;
          const path = at.dir ? `${at.dir}/${e.name}` : e.name;
          if (e.mode === "040000") want(e.oid, at.commit, path, e.baseTree);
          else if (!seen.has(e.oid)) {
            seen.add(e.oid);
            // Blobs: presence is enough; in a partial clone a missing one is promised by origin (git's rule for
            // objects a promisor pack refers to: every pack grex receives from a promisor remote is one).
            if (!promised && !presence.has(e.oid)) return { oid: e.oid, role: `the file '${path}' of commit ${at.commit.slice(0, 12)}` };
          }
        }
      } else if (obj.type === "tag") {
        const m = /^object ([0-9a-f]{40})$/m.exec(obj.data.toString("latin1", 0, Math.min(obj.data.length, 200)));
        if (!m) return { oid, role: `tag ${oid.slice(0, 12)}` };
        want(m[1] as string, m[1] as string, null);
      }
    }
    return null;
  } finally {
    store.close();
  }
}

/** The first missing object's id (see firstGap), or null when nothing is missing. */
export function firstMissing(gitdir: string, tips: Iterable<string>, stop?: Set<string>): string | null {
  return firstGap(gitdir, tips, stop)?.oid ?? null;
}

/**
 * firstGap's first-fetch check, from what the indexer recorded of the pack
 * just received (pack-links.ts) instead of reading it back: every commit the
 * tips reach and each one's tree. What the pack points at outside itself
 * (objects we had before, e.g. through alternates) is checked by firstGap.
 */
export function firstGapInPack(gitdir: string, links: PackLinks, tips: Iterable<string>): Gap | null {
  const shallow = readShallow(gitdir);
  const visited = new Uint8Array(links.size);
  const stack: number[] = [];
  const outside = new Set<string>();
  let presence: ObjectPresence | null = null;
  // Named in the pack, or present here (the tree of a commit we had): all a first fetch asks of a tree.
  const treePresent = (i: number) => links.findLink(i, 0) >= 0 || (presence ??= new ObjectPresence(gitdir)).has(links.linkName(i, 0));
  const visit = (i: number) => {
    if (visited[i]) return;
    visited[i] = 1;
    stack.push(i);
  };
  const follow = (i: number, k: number) => {
    const j = links.findLink(i, k);
    if (j >= 0) visit(j);
    else outside.add(links.linkName(i, k));
  };
  for (const t of tips) {
    const i = links.find(t);
    if (i >= 0) visit(i);
    else outside.add(t);
  }
  while (stack.length > 0) {
    const i = stack.pop() as number;
    const kind = links.kindOf(i);
    if (kind === null) continue; // a tree or blob (a tag's object): present is all a first fetch asks of it here
    if (kind === "bad commit" || kind === "bad tag") return { oid: links.nameOf(i), role: `${kind.slice(4)} ${links.nameOf(i).slice(0, 12)}` };
    if (kind === "tag") follow(i, 0);
    else {
      if (!treePresent(i)) return { oid: links.linkName(i, 0), role: `the tree of commit ${links.nameOf(i).slice(0, 12)}` };
      if (shallow.size === 0 || !shallow.has(links.nameOf(i))) for (let k = 1; k < links.countOf(i); k++) follow(i, k);
    }
  }
  return outside.size === 0 ? null : firstGap(gitdir, outside, knownTips(gitdir), { firstFetch: true });
}

/**
 * Throw (one sentence, exit 4) unless everything `tips` need is here; called
 * right before refs move to them. `links`: what the indexer recorded of the
 * pack this fetch received, if it kept one.
 */
export function assertConnected(gitdir: string, url: string, tips: string[], links?: PackLinks): void {
  if (tips.length === 0) return;
  // A first fetch (a clone: no ref of ours yet) would otherwise read every tree of the whole history, touching
  // most of a large pack (a 312 MB pack: 1.1 GB peak, 15 s); it checks the history's commits and their trees'
  // presence, and the clone's checkout reads the whole tree it writes (a failed clone leaves nothing).
  const known = knownTips(gitdir);
  const firstFetch = known.size === 0;
  const gap = firstFetch && links?.sealed ? firstGapInPack(gitdir, links, tips) : firstGap(gitdir, tips, known, { firstFetch });
  if (gap !== null) throw incompleteFetch(gap, url);
}

/** What the server left out, named by its role (one sentence, exit 4); no ref moved. */
export function incompleteFetch(gap: Gap, url: string): Error {
  return packOpError(`${gap.role} is missing from ${displayUrl(url)}, which sent an incomplete history; no ref was moved — check the upstream (git fsck there), then try again.`, {
    url: displayUrl(url),
    object: gap.oid,
  });
}
