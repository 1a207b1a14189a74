// Deterministic fixture repositories made with the system git: fixed author,
// committer and dates, and an isolated HOME/config, so object ids are the same
// on every machine and no user configuration leaks in.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const FIXED_DATE = "2020-01-01T00:00:00Z";
const emptyHome = makeEmptyHome();

/**
 * An empty HOME for git, shared by every test file of the run. It lives in the
 * run directory of test/setup.ts, whose global afterAll removes it: nothing
 * here can (a module's afterAll would belong to the first file importing it,
 * and `process.on("exit")` never fires under bun test).
 */
function makeEmptyHome(): string {
  const run = process.env.GREX_TEST_RUN_DIR;
  if (!run) throw new Error("test/helpers/git-fixtures.ts needs the test/setup.ts preload (run it with `bun test`).");
  return mkdtempSync(join(run, "git-fixture-home-"));
}

/** Environment for every git command a test runs. */
export function gitEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GIT_")) env[k] = v;
  return {
    ...env,
    HOME: emptyHome,
    XDG_CONFIG_HOME: join(emptyHome, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Fixture Author",
    GIT_AUTHOR_EMAIL: "author@example.invalid",
    GIT_AUTHOR_DATE: FIXED_DATE,
    GIT_COMMITTER_NAME: "Fixture Committer",
    GIT_COMMITTER_EMAIL: "committer@example.invalid",
    GIT_COMMITTER_DATE: FIXED_DATE,
    GIT_TERMINAL_PROMPT: "0",
  };
}

/** Run git in `cwd`; returns trimmed stdout, throws with stderr on failure. */
export function git(cwd: string, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], { cwd, env: gitEnv(), stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${p.stderr.toString().trim()}`);
  return p.stdout.toString().trim();
}

/**
 * Like `git`, without blocking the event loop: needed whenever the command
 * talks to a server running in this same process (the loopback HTTP server).
 */
export async function gitAsync(cwd: string, ...args: string[]): Promise<string> {
  const p = Bun.spawn(["git", ...args], { cwd, env: gitEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${err.trim()}`);
  return out.trim();
}

/** Write files (null deletes) relative to `dir`. */
function writeFiles(dir: string, files: Record<string, string | null>): void {
  for (const [rel, content] of Object.entries(files)) {
    const path = join(dir, rel);
    if (content === null) rmSync(path, { force: true });
    else {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
  }
}

/**
 * Create a repository at `dir` with one commit holding `files` on `branch`
 * (default "main"). With `bare`, the repository is bare (made by pushing from a
 * scratch work tree). Returns the commit sha.
 */
export function makeRepo(dir: string, files: Record<string, string>, opts: { branch?: string; bare?: boolean } = {}): string {
  const branch = opts.branch ?? "main";
  if (opts.bare) {
    const work = mkdtempSync(join(tmpdir(), "grex-fixture-work-"));
    try {
      const sha = makeRepo(work, files, { branch });
      mkdirSync(dir, { recursive: true });
      git(dir, "init", "--quiet", "--bare", "-b", branch);
      git(work, "push", "--quiet", dir, `refs/heads/${branch}:refs/heads/${branch}`);
      return sha;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "--quiet", "-b", branch);
  return commit(dir, files, "initial");
}

/** Commit `files` (null deletes a file) in the work tree `dir`; returns the new sha. */
export function commit(dir: string, files: Record<string, string | null>, message: string): string {
  writeFiles(dir, files);
  git(dir, "add", "-A");
  git(dir, "commit", "--quiet", "--allow-empty", "-m", message);
  return headSha(dir);
}

/** Tag HEAD (annotated when a message is given); returns the tagged commit's sha. */
export function tag(dir: string, name: string, message?: string): string {
  if (message === undefined) git(dir, "tag", name);
  else git(dir, "tag", "-a", name, "-m", message);
  return git(dir, "rev-parse", `${name}^{commit}`);
}

export function headSha(dir: string): string {
  return git(dir, "rev-parse", "HEAD");
}

/** Current branch name, or null when HEAD is detached. */
export function currentBranch(dir: string): string | null {
  const p = Bun.spawnSync(["git", "symbolic-ref", "--quiet", "--short", "HEAD"], { cwd: dir, env: gitEnv(), stdout: "pipe" });
  return p.exitCode === 0 ? p.stdout.toString().trim() : null;
}

/** A bare copy of `src` at `dest`, ready to serve over smart HTTP (`git http-backend` needs no update-server-info). */
export function bareCopy(src: string, dest: string): void {
  git(dirname(dest), "clone", "--quiet", "--bare", "--no-local", src, dest);
}

/** Push every branch and tag of `src` into `dest` (a bare copy), forcing, so it mirrors `src`. */
export function pushAll(src: string, dest: string): void {
  git(src, "push", "--quiet", "--force", dest, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*");
}

/** Number of objects in a repository, loose and packed (`git count-objects -v`). */
export function countObjects(dir: string): number {
  const out = git(dir, "count-objects", "-v");
  const field = (k: string) => Number(/^(\S+): (\d+)$/m.exec(out.split("\n").find((l) => l.startsWith(`${k}:`)) ?? "")?.[2] ?? 0);
  return field("count") + field("in-pack");
}

/** A fresh temp directory and a function that removes it. */
export function tempDir(prefix = "grex-git-"): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Every file of the work tree below `dir` as "path contents", sorted; `.git` entries left out (a submodule's too). */
export function workTreeFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const d of readdirSync(join(dir, rel), { withFileTypes: true })) {
      if (d.name === ".git") continue;
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(p);
      else out.push(`${p} ${readFileSync(join(dir, p), "utf8")}`);
    }
  };
  walk("");
  return out.sort();
}
