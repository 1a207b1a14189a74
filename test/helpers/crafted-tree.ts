// Crafted git objects for attack tests: trees written byte for byte through
// `git hash-object --literally` (so duplicate names, odd modes and names git
// itself refuses to check out can be made), committed with `git commit-tree`
// onto a branch of an ordinary upstream repository.
import { GIT_ENV } from "./workspace.ts";

function gitIn(cwd: string, args: string[], input?: Uint8Array | string): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: { ...process.env, ...GIT_ENV }, stdin: input === undefined ? "ignore" : Buffer.from(input), stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** One raw tree entry: any mode string, any name bytes. */
export interface RawEntry {
  mode: string;
  name: string;
  oid: string;
}

export function blob(repo: string, content: string | Uint8Array): string {
  return gitIn(repo, ["hash-object", "-w", "--stdin"], content);
}

/** A tree object holding exactly `entries`, in the given order (git's sorting and checks are bypassed). */
export function rawTree(repo: string, entries: RawEntry[]): string {
  const parts: Buffer[] = [];
  for (const e of entries) parts.push(Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex"));
  return gitIn(repo, ["hash-object", "-w", "--literally", "-t", "tree", "--stdin"], Buffer.concat(parts));
}

/** Shorthands for entries. */
export const file = (repo: string, name: string, content: string, mode = "100644"): RawEntry => ({ mode, name, oid: blob(repo, content) });
export const link = (repo: string, name: string, target: string): RawEntry => ({ mode: "120000", name, oid: blob(repo, target) });
export const dir = (repo: string, name: string, entries: RawEntry[]): RawEntry => ({ mode: "40000", name, oid: rawTree(repo, entries) });

/** Commit `tree` on top of the branch's tip (or as a root) and move the branch there. */
export function commitTree(repo: string, tree: string, message: string, branch = "main"): string {
  let parent: string | null = null;
  try {
    parent = gitIn(repo, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`]);
  } catch {
    parent = null;
  }
  const args = ["commit-tree", tree, "-m", message];
  if (parent) args.push("-p", parent);
  const oid = gitIn(repo, args);
  gitIn(repo, ["update-ref", `refs/heads/${branch}`, oid]);
  return oid;
}

/** A fresh bare upstream repository (no commits yet) with HEAD on `main`. */
export function emptyRepo(path: string): string {
  gitIn("/", ["init", "-q", "--bare", "-b", "main", path]);
  gitIn(path, ["config", "gc.auto", "0"]);
  return path;
}
