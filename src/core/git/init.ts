// `git init` + `git remote add origin <url>` without loading isomorphic-git:
// the few files a clone needs, laid out as git lays them out.
import * as fs from "node:fs";
import { writeNewRepoConfig } from "./refs/config.ts";
import { REMOTE } from "./transport/remote-refs.ts";
import { promisorConfig } from "./transport/promisor.ts";
import { gitPath, newLayout, objectsDir, refPath } from "./layout/layout.ts";

/** `filter`: a partial clone's filter (`blob:none`, …): origin becomes its promisor remote (promisor.ts). */
export function initWithOrigin(dir: string, url: string, filter?: string): string {
  const repo = newLayout(dir);
  // Only what git needs to recognise a repository; other directories appear when first written to.
  fs.mkdirSync(objectsDir(repo), { recursive: true });
  fs.mkdirSync(gitPath(repo, "refs"));
  fs.writeFileSync(refPath(repo, "HEAD"), "ref: refs/heads/main\n");
  const core = (key: string, value: string) => ({ section: "core", sub: null, key, value });
  const remote = (key: string, value: string) => ({ section: "remote", sub: REMOTE, key, value });
  writeNewRepoConfig(repo.gitdir, [
    // A partial clone needs format 1, as git's partial_clone_register upgrades it.
    core("repositoryformatversion", filter === undefined ? "0" : "1"),
    core("filemode", "true"),
    core("bare", "false"),
    core("logallrefupdates", "true"),
    remote("url", url),
    remote("fetch", `+refs/heads/*:refs/remotes/${REMOTE}/*`),
    ...(filter === undefined ? [] : promisorConfig(filter)),
  ]);
  return repo.gitdir;
}
