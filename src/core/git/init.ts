// `git init` + `git remote add origin <url>` without loading isomorphic-git:
// the few files a clone needs, laid out as git lays them out.
import * as fs from "node:fs";
import { join } from "node:path";
import { configValue } from "./refs/config.ts";
import { REMOTE } from "./transport/remote-refs.ts";

export function initWithOrigin(dir: string, url: string): string {
  const gitdir = join(dir, ".git");
  // Only what git needs to recognise a repository; other directories appear when first written to.
  fs.mkdirSync(join(gitdir, "objects"), { recursive: true });
  fs.mkdirSync(join(gitdir, "refs"));
  fs.writeFileSync(join(gitdir, "HEAD"), "ref: refs/heads/main\n");
  fs.writeFileSync(
    join(gitdir, "config"),
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
  return gitdir;
}
