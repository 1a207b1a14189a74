// Ahead/behind of HEAD against its remote-tracking ref (origin/<branch>), the
// way `git status` counts them. The refs are read from files; commits are only
// walked when the two differ, so an up-to-date pack costs two small reads.
//
// The walk is git's paint-down: both tips go into a queue ordered by
// generation (from a commit-graph file, when the repository has one) and then
// committer date, newest first; each commit passes its sides (left = ours,
// right = theirs) to its parents; the walk stops when every queued commit
// carries both sides, since nothing below them can be on one side only. The
// cost is the commits that differ plus the few around the merge base, however
// long the history. Commits come from the commit-graph or, natively, from the
// object store (only the header is parsed).
import { type CommitInfo, CommitGraph } from "../objects/commit-graph.ts";
import { ObjectStore } from "../objects/object-store.ts";
import type { RefFiles } from "./refs.ts";
import { readShallow } from "../layout/layout.ts";

export interface Tracking {
  ahead: number;
  behind: number;
  /**
   * A shallow clone's boundary commit the walk reached from one side only: the
   * merge base lies below the fetched history, so the counts stop at the
   * boundary and are not exact (their signs are: such a side has commits of its own).
   */
  cut?: string;
}

const LEFT = 1;
const RIGHT = 2;
const BOTH = 3;
const NONE = Number.POSITIVE_INFINITY;

/** Parents and committer date from a raw commit's header; null if it is not one. */
export function parseCommitHeader(data: Buffer): CommitInfo | null {
  if (data.toString("latin1", 0, 5) !== "tree ") return null;
  const parents: string[] = [];
  let at = data.indexOf(0x0a, 5) + 1;
  if (at <= 0) return null;
  while (data.toString("latin1", at, at + 7) === "parent ") {
    parents.push(data.toString("latin1", at + 7, at + 47));
    at += 48;
  }
  let date = 0;
  const headerEnd = data.indexOf("\n\n", at);
  const c = data.indexOf("\ncommitter ", at - 1);
  if (c >= 0 && (headerEnd < 0 || c < headerEnd)) {
    const eol = data.indexOf(0x0a, c + 1);
    const line = data.toString("utf8", c + 11, eol < 0 ? data.length : eol);
    // "Name <email> 1700000000 +0100": the date is the token after the last '>'.
    const m = /> *(\d+)/.exec(line.slice(line.lastIndexOf(">")));
    if (m?.[1]) date = Number(m[1]);
  }
  return { parents, generation: NONE, date };
}


/** A max-heap of commits by (generation, date). */
class Queue {
  private readonly items: Array<{ oid: string; info: CommitInfo }> = [];
  get size(): number {
    return this.items.length;
  }
  private above(a: CommitInfo, b: CommitInfo): boolean {
    return a.generation !== b.generation ? a.generation > b.generation : a.date > b.date;
  }
  push(oid: string, info: CommitInfo): void {
    const q = this.items;
    q.push({ oid, info });
    let i = q.length - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!this.above(info, (q[up] as { info: CommitInfo }).info)) break;
      [q[i], q[up]] = [q[up] as { oid: string; info: CommitInfo }, q[i] as { oid: string; info: CommitInfo }];
      i = up;
    }
  }
  peek(): { oid: string; info: CommitInfo } | undefined {
    return this.items[0];
  }
  pop(): { oid: string; info: CommitInfo } | undefined {
    const q = this.items;
    const top = q[0];
    const last = q.pop();
    if (q.length > 0 && last) {
      q[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let best = i;
        if (l < q.length && this.above((q[l] as { info: CommitInfo }).info, (q[best] as { info: CommitInfo }).info)) best = l;
        if (r < q.length && this.above((q[r] as { info: CommitInfo }).info, (q[best] as { info: CommitInfo }).info)) best = r;
        if (best === i) break;
        [q[i], q[best]] = [q[best] as { oid: string; info: CommitInfo }, q[i] as { oid: string; info: CommitInfo }];
        i = best;
      }
    }
    return top;
  }
}

/**
 * Commits reachable from `left` and not `right` (ahead), and the reverse
 * (behind); null when a commit is missing. `stats.walked` counts the commits
 * taken from the queue (what the cost is proportional to).
 */
export function countLeftRight(gitdir: string, left: string, right: string, stats?: { walked: number }): Tracking | null {
  if (left === right) return { ahead: 0, behind: 0 };
  const graph = CommitGraph.open(gitdir);
  const store = new ObjectStore(gitdir);
  try {
    const infos = new Map<string, CommitInfo>();
    const shallow = readShallow(gitdir);
    const info = (oid: string): CommitInfo | null => {
      const known = infos.get(oid);
      if (known) return known;
      let i = graph?.lookup(oid) ?? null;
      if (!i) {
        const o = store.read(oid);
        i = o?.type === "commit" ? parseCommitHeader(o.data) : null;
        // A shallow clone's boundary commits end the history, as git treats them.
        if (i && shallow.has(oid)) i.parents = [];
      }
      if (i) infos.set(oid, i);
      return i;
    };
    const flags = new Map<string, number>();
    const queued = new Set<string>();
    const queue = new Queue();
    let active = 0; // queued commits not yet carrying both sides
    // The oldest date among commits seen on one side only: see the end of the walk.
    let oldestOneSided = Number.POSITIVE_INFINITY;
    const paint = (oid: string, side: number): boolean => {
      const before = flags.get(oid) ?? 0;
      const after = before | side;
      if (after === before) return true;
      flags.set(oid, after);
      if (queued.has(oid)) {
        if (after === BOTH) active--;
        return true;
      }
      const i = info(oid);
      if (!i) return false;
      // A commit walked before and reached again with a new side (clock skew put it too early) walks again.
      queued.add(oid);
      queue.push(oid, i);
      if (after !== BOTH) active++;
      return true;
    };
    // An annotated tag counts as the commit it names (as `git rev-list` peels it).
    const peel = (oid: string): string => {
      let at = oid;
      for (let depth = 0; depth < 8; depth++) {
        if (graph?.lookup(at)) return at;
        const o = store.read(at);
        if (o?.type !== "tag") return at;
        const m = /^object ([0-9a-f]{40})$/m.exec(o.data.toString("latin1", 0, Math.min(o.data.length, 200)));
        if (!m) return at;
        at = m[1] as string;
      }
      return at;
    };
    if (!paint(peel(left), LEFT) || !paint(peel(right), RIGHT)) return null;
    for (;;) {
      const top = queue.peek();
      if (!top) break;
      if (active === 0) {
        // Every queued commit is on both sides. With generations that is final.
        // Ordered by date alone (commits outside a commit-graph), a skewed
        // clock can put an ancestor before its descendant: keep walking while
        // the queue could still reach a one-sided commit's date.
        if (top.info.generation !== NONE || top.info.date < oldestOneSided) break;
      }
      queue.pop();
      queued.delete(top.oid);
      if (stats) stats.walked++;
      const f = flags.get(top.oid) as number;
      if (f !== BOTH) {
        active--;
        if (top.info.date < oldestOneSided) oldestOneSided = top.info.date;
      }
      for (const p of top.info.parents) if (!paint(p, f)) return null;
    }
    let ahead = 0;
    let behind = 0;
    let cut: string | undefined;
    for (const [oid, f] of flags) {
      if (f === LEFT) ahead++;
      else if (f === RIGHT) behind++;
      if (f !== BOTH && cut === undefined && shallow.has(oid)) cut = oid;
    }
    return cut === undefined ? { ahead, behind } : { ahead, behind, cut };
  } finally {
    store.close();
  }
}

/** Counts against origin/<branch>, or null when there is no such ref (or its commits are not here). `refs` reads the work tree `dir`'s repository. */
export async function aheadBehind(refs: RefFiles, _dir: string, branch: string | null, headSha: string): Promise<Tracking | null> {
  if (branch === null) return null;
  const upstream = refs.resolve(`refs/remotes/origin/${branch}`);
  if (!upstream) return null;
  if (upstream === headSha) return { ahead: 0, behind: 0 };
  try {
    // A commit missing (shallow or damaged history): no counts rather than wrong ones.
    return countLeftRight(refs.gitdir, headSha, upstream);
  } catch {
    return null;
  }
}
