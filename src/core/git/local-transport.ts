// A local transport for isomorphic-git: read the source repository's refs,
// find the objects the destination lacks by walking from the wanted tips
// (stopping at objects it already has), pack them with packObjects, index the
// pack in the destination, then write the remote-tracking refs and tags.
import * as fs from "node:fs";
import { join } from "node:path";
import git from "isomorphic-git";
import { packOpError, throwIfAborted } from "../errors.ts";

const REMOTE = "origin";

function gitdirOf(path: string): string {
  if (fs.existsSync(join(path, ".git", "HEAD"))) return join(path, ".git");
  if (fs.existsSync(join(path, "HEAD")) && fs.existsSync(join(path, "objects"))) return path; // bare
  throw packOpError(`${path} is not a git repository; check the pack URL.`);
}

interface SourceRefs {
  branches: Map<string, string>;
  tags: Map<string, string>;
  defaultBranch: string | null;
}

async function readSourceRefs(gitdir: string): Promise<SourceRefs> {
  const branches = new Map<string, string>();
  for (const b of await git.listBranches({ fs, gitdir })) {
    branches.set(b, await git.resolveRef({ fs, gitdir, ref: `refs/heads/${b}` }));
  }
  const tags = new Map<string, string>();
  for (const t of await git.listTags({ fs, gitdir })) {
    tags.set(t, await git.resolveRef({ fs, gitdir, ref: `refs/tags/${t}`, depth: 2 }));
  }
  let defaultBranch: string | null = null;
  const head = fs.readFileSync(join(gitdir, "HEAD"), "utf8").trim();
  if (head.startsWith("ref: refs/heads/")) defaultBranch = head.slice("ref: refs/heads/".length);
  if (defaultBranch !== null && !branches.has(defaultBranch)) defaultBranch = branches.keys().next().value ?? null;
  return { branches, tags, defaultBranch };
}

/** Objects reachable from `tips` that `destGitdir` does not have yet. */
async function missingObjects(srcGitdir: string, destGitdir: string, tips: string[], signal: AbortSignal): Promise<string[]> {
  const destEmpty = !fs.existsSync(join(destGitdir, "objects")) || isEmptyObjectStore(join(destGitdir, "objects"));
  const cache = {};
  const destHas = async (oid: string): Promise<boolean> => {
    if (destEmpty) return false;
    try {
      await git.readObject({ fs, gitdir: destGitdir, oid, format: "deflated", cache });
      return true;
    } catch {
      return false;
    }
  };
  const out = new Set<string>();
  const seen = new Set<string>();
  const stack = [...tips];
  let n = 0;
  while (stack.length > 0) {
    const oid = stack.pop() as string;
    if (seen.has(oid)) continue;
    seen.add(oid);
    if (++n % 256 === 0) throwIfAborted(signal);
    if (await destHas(oid)) continue; // the destination already has it and everything below it
    const obj = await git.readObject({ fs, gitdir: srcGitdir, oid, format: "parsed", cache });
    out.add(oid);
    if (obj.type === "commit") {
      const c = obj.object as { tree: string; parent: string[] };
      stack.push(c.tree, ...c.parent);
    } else if (obj.type === "tree") {
      for (const e of obj.object as Array<{ type: string; oid: string }>) {
        if (e.type === "tree") stack.push(e.oid);
        else if (e.type === "blob" && !seen.has(e.oid)) {
          seen.add(e.oid);
          if (!(await destHas(e.oid))) out.add(e.oid);
        }
        // "commit" entries are submodule links: not our objects.
      }
    } else if (obj.type === "tag") {
      stack.push((obj.object as { object: string }).object);
    }
  }
  return [...out];
}

function isEmptyObjectStore(objects: string): boolean {
  for (const name of fs.readdirSync(objects)) {
    if (name === "info") continue;
    if (name === "pack") {
      if (fs.readdirSync(join(objects, "pack")).some((f) => f.endsWith(".pack"))) return false;
      continue;
    }
    return false;
  }
  return true;
}

/** Fetch everything from the repository at `srcPath` into `destDir`; returns the source's default branch. */
export async function fetchLocal(srcPath: string, destDir: string, signal: AbortSignal): Promise<string | null> {
  const srcGitdir = gitdirOf(srcPath);
  const destGitdir = join(destDir, ".git");
  const refs = await readSourceRefs(srcGitdir);

  // No-op fast path: every remote-tracking ref and tag already matches.
  const wanted: Array<[string, string]> = [
    ...[...refs.branches].map(([b, oid]): [string, string] => [`refs/remotes/${REMOTE}/${b}`, oid]),
    ...[...refs.tags].map(([t, oid]): [string, string] => [`refs/tags/${t}`, oid]),
  ];
  const stale: Array<[string, string]> = [];
  for (const [ref, oid] of wanted) {
    let cur: string | null = null;
    try {
      cur = await git.resolveRef({ fs, gitdir: destGitdir, ref, depth: 1 });
    } catch {
      cur = null;
    }
    if (cur !== oid) stale.push([ref, oid]);
  }
  if (stale.length > 0) {
    const oids = await missingObjects(srcGitdir, destGitdir, [...new Set(stale.map(([, oid]) => oid))], signal);
    throwIfAborted(signal);
    if (oids.length > 0) {
      const { filename, packfile } = await git.packObjects({ fs, gitdir: srcGitdir, oids, write: false });
      if (!packfile) throw packOpError(`Could not pack objects from ${srcPath}; check that the repository is readable.`);
      const packDir = join(destGitdir, "objects", "pack");
      fs.mkdirSync(packDir, { recursive: true });
      fs.writeFileSync(join(packDir, filename), packfile);
      await git.indexPack({ fs, dir: destDir, gitdir: destGitdir, filepath: join(".git", "objects", "pack", filename) });
    }
    for (const [ref, oid] of stale) await git.writeRef({ fs, gitdir: destGitdir, ref, value: oid, force: true });
  }
  // Branches deleted at the source disappear from the remote-tracking refs (like fetch --prune).
  for (const b of await git.listBranches({ fs, gitdir: destGitdir, remote: REMOTE })) {
    if (b !== "HEAD" && !refs.branches.has(b)) await git.deleteRef({ fs, gitdir: destGitdir, ref: `refs/remotes/${REMOTE}/${b}` });
  }
  if (refs.defaultBranch) {
    await git.writeRef({
      fs,
      gitdir: destGitdir,
      ref: `refs/remotes/${REMOTE}/HEAD`,
      value: `refs/remotes/${REMOTE}/${refs.defaultBranch}`,
      symbolic: true,
      force: true,
    });
  }
  return refs.defaultBranch;
}
