// Ahead/behind on a 100,000-commit history, compared with
// `git rev-list --left-right --count A...B` for every shape a status can meet,
// with no commit-graph, a graph covering only part of the history, and a
// split graph chain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { aheadBehind, countLeftRight } from "../../src/core/git/refs/ahead-behind.ts";
import { RefFiles } from "../../src/core/git/refs/refs.ts";
import { git, tempDir } from "../helpers/git-fixtures.ts";
import { type FastCommit, fastImport, linearHistory } from "../helpers/history.ts";

const N = 100_000;
let tmp: { path: string; cleanup: () => void };
let repo: string;
let gitdir: string;
/** Shape name → [left, right]. */
const shapes = new Map<string, [string, string]>();

beforeAll(() => {
  tmp = tempDir("grex-ahead-behind-");
  repo = join(tmp.path, "r");
  git(tmp.path, "init", "-q", repo);
  rmSync(join(repo, ".git"), { recursive: true });
  const main = linearHistory(repo, N);
  const tip = main[N] as string;
  // A graph of the long history only: what follows stays outside it, as after a fetch.
  git(repo, "commit-graph", "write", "--reachable");
  const t = 1_600_000_000 + N * 60;
  const extra: FastCommit[] = [];
  let mark = N + 1;
  const chain = (branch: string, from: string, count: number, date: (i: number) => number, file = true): string => {
    for (let i = 0; i < count; i++) {
      extra.push({ branch, from: i === 0 ? from || undefined : `:${mark - 1}`, date: date(i), file: file ? { path: `${branch}.txt`, content: `${i}\n` } : undefined });
      mark++;
    }
    return `:${mark - 1}`;
  };
  const local = chain("local", tip, 1, () => t + 100);
  const forced = chain("forced", main[N - 50] as string, 30, (i) => t + 200 + i);
  const side = chain("side", main[N - 10_000] as string, 300, (i) => 1_600_000_000 + (N - 10_000) * 60 + i * 120);
  extra.push({ branch: "merged", from: tip, merge: [side], date: t + 400 });
  const merged = `:${mark++}`;
  const mergedAhead = chain("merged2", merged, 2, (i) => t + 500 + i);
  const upstreamMore = chain("more", tip, 10, (i) => t + 600 + i);
  const o1 = chain("o1", main[N - 5] as string, 3, (i) => t + 700 + i);
  const o2 = chain("o2", main[N - 7] as string, 4, (i) => t + 710 + i);
  extra.push({ branch: "octopus", from: tip, merge: [o1, o2], date: t + 800 });
  const octopus = `:${mark++}`;
  // Clock skew: commits dated years before their parents.
  const skewed = chain("skewed", main[N - 20] as string, 40, (i) => 1_000_000_000 + i * (i % 3 === 0 ? -1000 : 1000));
  const deep = chain("deep", main[N / 2] as string, 100, (i) => t + 900 + i);
  const lonely = chain("lonely", "", 5, (i) => t + 1000 + i);
  const ids = fastImport(repo, extra, N + 1);
  const id = (m: string): string => (m.startsWith(":") ? (ids[Number(m.slice(1))] as string) : m);
  shapes.set("equal", [tip, tip]);
  shapes.set("one local commit", [id(local), tip]);
  shapes.set("behind only", [tip, id(upstreamMore)]);
  shapes.set("force-pushed upstream", [tip, id(forced)]);
  shapes.set("local merge against new upstream commits", [id(mergedAhead), id(upstreamMore)]);
  shapes.set("upstream merged a side branch", [id(side), id(mergedAhead)]);
  shapes.set("octopus merge", [id(octopus), id(forced)]);
  shapes.set("clock skew", [id(skewed), id(forced)]);
  shapes.set("skew against a merge", [id(mergedAhead), id(skewed)]);
  shapes.set("diverged 50,000 commits back", [tip, id(deep)]);
  shapes.set("unrelated histories", [id(lonely), id(o1)]);
  gitdir = join(repo, ".git");
}, 120_000);
afterAll(() => tmp.cleanup());

const expected = (l: string, r: string): { ahead: number; behind: number } => {
  const [a, b] = git(repo, "rev-list", "--left-right", "--count", `${l}...${r}`).split(/\s+/).map(Number);
  return { ahead: a as number, behind: b as number };
};

const graphStates: Record<string, () => void> = {
  "a commit-graph holding part of the history": () => expect(existsSync(join(gitdir, "objects", "info", "commit-graph"))).toBe(true),
  "no commit-graph": () => rmSync(join(gitdir, "objects", "info", "commit-graph"), { force: true }),
  "a split commit-graph chain": () => {
    git(repo, "commit-graph", "write", "--reachable", "--split", "--size-multiple=1000");
    git(repo, "commit", "-q", "--allow-empty", "-m", "one more on main");
    git(repo, "commit-graph", "write", "--reachable", "--split=no-merge");
    expect(readdirSync(join(gitdir, "objects", "info", "commit-graphs")).filter((f) => f.endsWith(".graph")).length).toBeGreaterThan(1);
  },
};

for (const [state, setup] of Object.entries(graphStates)) {
  describe(state, () => {
    beforeAll(setup);
    test("every shape counts what git counts", () => {
      for (const [name, [l, r]] of shapes) {
        expect({ name, ...(countLeftRight(gitdir, l, r) ?? { ahead: -1, behind: -1 }) }).toEqual({ name, ...expected(l, r) });
      }
    });
  });
}

test("the walk visits the commits that differ and a few more, not the history", () => {
  const cases: Array<[string, number]> = [
    ["one local commit", 5],
    ["force-pushed upstream", 100],
    ["behind only", 20],
    ["diverged 50,000 commits back", 50_200],
  ];
  for (const [name, most] of cases) {
    const [l, r] = shapes.get(name) as [string, string];
    const stats = { walked: 0 };
    const counts = countLeftRight(gitdir, l, r, stats);
    expect(counts).not.toBeNull();
    expect({ name, walked: stats.walked <= most }).toEqual({ name, walked: true });
    expect(stats.walked).toBeGreaterThanOrEqual((counts?.ahead ?? 0) + (counts?.behind ?? 0));
  }
});

test("status's entry point reads origin/<branch> and HEAD", async () => {
  const [l, r] = shapes.get("force-pushed upstream") as [string, string];
  git(repo, "update-ref", "refs/remotes/origin/topic", l);
  expect(await aheadBehind(new RefFiles(gitdir), repo, "topic", r)).toEqual({ ahead: 30, behind: 50 });
  expect(await aheadBehind(new RefFiles(gitdir), repo, "no-such-branch", r)).toBeNull();
  expect(await aheadBehind(new RefFiles(gitdir), repo, null, r)).toBeNull();
});

test("a missing commit gives no counts rather than wrong ones", () => {
  expect(countLeftRight(gitdir, "0".repeat(40), shapes.get("equal")?.[0] as string)).toBeNull();
});
