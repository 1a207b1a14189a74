// `git init` + `git remote add origin <url>` without loading isomorphic-git:
// the few files a clone needs, laid out as git lays them out.
import * as fs from "node:fs";
import { join } from "node:path";
import { configValue } from "./refs/config.ts";
import { REMOTE } from "./transport/remote-refs.ts";
import { configPath, gitPath, newLayout, objectsDir, refPath } from "./layout/layout.ts";

export function initWithOrigin(dir: string, url: string): string {
  const repo = newLayout(dir);
  // Only what git needs to recognise a repository; other directories appear when first written to.
  fs.mkdirSync(objectsDir(repo), { recursive: true });
  fs.mkdirSync(gitPath(repo, "refs"));
  fs.writeFileSync(refPath(repo, "HEAD"), "ref: refs/heads/main\n");
  fs.writeFileSync(
    configPath(repo),
    [
      "[core]",
      "\trepositoryformatversion = 0",
      "\tfilemode = true",
      "\tbare = false",
      "\tlogallrefupdates = true",
      `[remote "${REMOTE}"]`,
      `\turl = ${configValue(url)}`,
      `\tfetch = +refs/heads/*:refs/remotes/${REMOTE}/*`,
      "",
    ].join("\n"),
  );
  return repo.gitdir;
}
