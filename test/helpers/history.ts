// Long histories made with `git fast-import`: 100,000 commits take a couple of
// seconds, so a test file builds its history once. Commits are described as
// data; ids come back through fast-import's exported marks.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { git, gitEnv } from "./git-fixtures.ts";

export interface FastCommit {
  /** The ref this commit lands on (`refs/heads/<branch>`). */
  branch: string;
  /** The first parent: a mark (":12"), a commit id, or a ref; none for a root commit of a new branch. */
  from?: string;
  /** Further parents (a merge). */
  merge?: string[];
  /** Committer date, seconds since the epoch. */
  date: number;
  /** A file to write in this commit (trees then differ, like real history). */
  file?: { path: string; content: string };
}

/** Import `commits` into the repository at `dir` (created if needed); returns each commit's id by its 1-based mark. */
export function fastImport(dir: string, commits: FastCommit[], firstMark = 1): string[] {
  const parts: string[] = [];
  commits.forEach((c, i) => {
    const msg = `c${firstMark + i}\n`;
    parts.push(`commit refs/heads/${c.branch}\nmark :${firstMark + i}\ncommitter T <t@example.invalid> ${c.date} +0000\ndata ${msg.length}\n${msg}`);
    if (c.from) parts.push(`from ${c.from}\n`);
    for (const m of c.merge ?? []) parts.push(`merge ${m}\n`);
    if (c.file) {
      const body = Buffer.from(c.file.content);
      parts.push(`M 100644 inline ${c.file.path}\ndata ${body.length}\n${c.file.content}\n`);
    }
    parts.push("\n");
  });
  const marks = join(dir, ".git", "grex-test-marks");
  const p = Bun.spawnSync(["git", "fast-import", "--quiet", `--export-marks=${marks}`], { cwd: dir, env: gitEnv(), stdin: Buffer.from(parts.join("")), stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git fast-import failed: ${p.stderr.toString()}`);
  const ids: string[] = [];
  for (const line of readFileSync(marks, "latin1").split("\n")) {
    const m = /^:(\d+) ([0-9a-f]{40})$/.exec(line);
    if (m) ids[Number(m[1])] = m[2] as string;
  }
  rmSync(marks, { force: true });
  return ids;
}

/** A repository whose `main` is a linear history of `n` commits (a file changes every 10th); returns the ids by mark (1..n). */
export function linearHistory(dir: string, n: number, start = 1_600_000_000): string[] {
  git(dir, "init", "-q", "-b", "main");
  const commits: FastCommit[] = [];
  for (let i = 1; i <= n; i++) {
    commits.push({ branch: "main", from: i > 1 ? `:${i - 1}` : undefined, date: start + i * 60, file: i % 10 === 1 ? { path: `f${i % 1000}.txt`, content: `${i}\n` } : undefined });
  }
  return fastImport(dir, commits);
}
