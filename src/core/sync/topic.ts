// The moves sync makes around the user's own branches (off-branch.ts says
// whose checkout is whose):
// - under a topic branch, the tracked branch's local ref is fast-forwarded to
//   origin's, as `git fetch origin main:main` would (never a non-fast-forward,
//   never the checked-out branch); HEAD, the topic and the work tree stay;
// - `sync --locked` puts a pack on its tracked branch at the locked commit when
//   that commit is on origin's branch and the local branch holds nothing origin
//   lacks ("behind" its remote when the remote moved on); detached otherwise.
import { countLeftRight } from "../git/refs/ahead-behind.ts";
import { readGitdirConfigValue, setTrackingSync } from "../git/refs/config.ts";
import { gitdirOf, RefFiles, writeRefSync } from "../git/refs/refs.ts";
import type { HeadInfo } from "../git/refs/head.ts";
import { checkedOutAt } from "../git/worktree/worktree-list.ts";

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export interface TopicMove {
  /** Commits the tracked branch's local ref moved by (0: it was level). */
  moved: number;
  /** Why the tracked branch was not moved, or null. */
  held: string | null;
  /** The tracked branch's local tip after the move (what the lockfile records), or null when it has none. */
  baseSha: string | null;
  /** The topic against the tracked branch. */
  ahead: number | null;
  behind: number | null;
}

/** Fast-forward `refs/heads/<base>` to `origin/<base>` (after a fetch) when it is not checked out and nothing would be lost. */
export function advanceTrackedRef(dir: string, head: HeadInfo, base: string | null): TopicMove {
  const gitdir = gitdirOf(dir);
  const none: TopicMove = { moved: 0, held: null, baseSha: null, ahead: null, behind: null };
  if (gitdir === null || base === null || head.branch === base) return none;
  const refs = new RefFiles(gitdir);
  const local = refs.resolve(`refs/heads/${base}`);
  const remote = refs.resolve(`refs/remotes/origin/${base}`);
  let moved = 0;
  let held: string | null = null;
  let tip = local;
  const elsewhere = checkedOutAt(gitdir, base)?.path ?? null;
  if (remote !== null && local !== remote) {
    const counts = local === null ? null : safeCount(gitdir, local, remote);
    if (local === null) {
      writeRefSync(gitdir, `refs/heads/${base}`, remote);
      setTrackingSync(gitdir, base, "origin");
      moved = safeCount(gitdir, head.sha, remote)?.behind ?? 0;
      tip = remote;
    } else if (counts !== null && counts.ahead === 0 && elsewhere !== null) {
      // git's `fetch origin main:main` refuses a branch checked out in any worktree; so does sync (a task workspace's source holds it).
      held = `${base} is checked out at ${elsewhere}; left as is`;
    } else if (counts !== null && counts.ahead === 0) {
      writeRefSync(gitdir, `refs/heads/${base}`, remote);
      moved = counts.behind;
      tip = remote;
    } else {
      held = counts === null ? `${base} could not be compared with origin/${base}` : `${base} has ${plural(counts.ahead, "commit")} origin/${base} lacks; left as is`;
    }
  }
  const rel = tip === null ? null : safeCount(gitdir, head.sha, tip);
  return { moved, held, baseSha: tip, ahead: rel?.ahead ?? null, behind: rel?.behind ?? null };
}

/** `on feature/login; main moved 4 commits; feature/login is 4 behind main` */
export function topicMessage(head: HeadInfo, base: string | null, m: TopicMove): string {
  const topic = head.branch ?? head.sha.slice(0, 7);
  if (base === null) return `on ${topic} (a topic branch; the pack is pinned to a tag or commit); left as is`;
  const parts = [`on ${topic}`, m.held ?? (m.moved > 0 ? `${base} moved ${plural(m.moved, "commit")}` : `${base} up to date`)];
  if (m.behind !== null && m.ahead !== null) {
    if (m.behind > 0) parts.push(`${topic} is ${m.behind} behind ${base}`);
    else if (m.ahead > 0) parts.push(`${topic} is ${m.ahead} ahead of ${base}`);
    else parts.push(`${topic} is level with ${base}`);
  }
  return parts.join("; ");
}

function safeCount(gitdir: string, left: string, right: string) {
  try {
    return countLeftRight(gitdir, left, right);
  } catch {
    return null;
  }
}

/** A topic branch's facts for status: its base, the counts against origin/<base>, its upstream and whether that holds HEAD. */
export interface TopicFacts {
  branch: string;
  base: string | null;
  ahead: number | null;
  behind: number | null;
  upstream: string | null;
  pushed: boolean;
}

export function topicFacts(gitdir: string, refs: RefFiles, head: HeadInfo & { branch: string }, base: string | null): TopicFacts {
  const origin = base === null ? null : refs.resolve(`refs/remotes/origin/${base}`);
  const rel = origin === null ? null : safeCount(gitdir, head.sha, origin);
  const remote = readGitdirConfigValue(gitdir, "branch", head.branch, "remote");
  const merge = readGitdirConfigValue(gitdir, "branch", head.branch, "merge");
  const upstreamName = remote !== null && merge?.startsWith("refs/heads/") ? `${remote}/${merge.slice("refs/heads/".length)}` : null;
  const upstreamSha = upstreamName === null ? null : refs.resolve(`refs/remotes/${upstreamName}`);
  return {
    branch: head.branch,
    base,
    ahead: rel?.ahead ?? null,
    behind: rel?.behind ?? null,
    upstream: upstreamName,
    pushed: upstreamSha !== null && upstreamSha === head.sha,
  };
}

/**
 * After `sync --locked` left `dir` detached at `sha`: put it on `base` at that
 * commit when the commit is on origin/<base> and the local branch (if any) is
 * contained in origin/<base> too. Returns where HEAD is now.
 */
export function attachLocked(dir: string, sha: string, base: string | null): HeadInfo {
  const gitdir = gitdirOf(dir);
  const detached = { sha, branch: null };
  if (gitdir === null || base === null) return detached;
  const refs = new RefFiles(gitdir);
  const remote = refs.resolve(`refs/remotes/origin/${base}`);
  if (remote === null) return detached;
  const onBranch = remote === sha || safeCount(gitdir, sha, remote)?.ahead === 0;
  if (!onBranch) return detached;
  const local = refs.resolve(`refs/heads/${base}`);
  if (local !== null && local !== sha && local !== remote && safeCount(gitdir, local, remote)?.ahead !== 0) return detached; // unpushed work on it
  if (local !== sha) writeRefSync(gitdir, `refs/heads/${base}`, sha);
  if (local === null) setTrackingSync(gitdir, base, "origin");
  writeRefSync(gitdir, "HEAD", `ref: refs/heads/${base}`);
  return { sha, branch: base };
}
