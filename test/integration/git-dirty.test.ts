// isDirty must agree with `git status` whoever wrote the index: our fresh
// checkout (clone), isomorphic-git (checkout during an update) or git itself.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { readStatusCache, SETTLED_MS } from "../../src/core/git/worktree/status-cache.ts";
import { isDirtyFast } from "../../src/core/git/worktree/worktree.ts";
import { commit, git, makeRepo, tempDir } from "../helpers/git-fixtures.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
let upstream: string;

beforeAll(() => {
  tmp = tempDir("grex-git-dirty-");
  upstream = join(tmp.path, "up");
  makeRepo(upstream, {
    ".gitignore": "*.log\n!keep.log\nbuild/\nlogs/*\n!logs/important\n",
    "README.md": "readme\n",
    "bin/run.sh": "#!/bin/sh\necho hi\n",
    "src/a.txt": "aaaa\n",
    "src/deep/b.txt": "bbbb\n",
    "sub/.gitignore": "*.tmp\n",
    "sub/c.txt": "cccc\n",
  });
  chmodSync(join(upstream, "bin", "run.sh"), 0o755);
  symlinkSync("src/a.txt", join(upstream, "link"));
  commit(upstream, {}, "exec bit and symlink");
});
afterAll(() => tmp.cleanup());

/** Each scenario changes a clean clone; git decides whether that counts as dirty. */
const scenarios: Record<string, (d: string) => void> = {
  "nothing changed": () => {},
  "same-size edit right away": (d) => writeFileSync(join(d, "src", "a.txt"), "AAAA\n"),
  "edit then revert": (d) => {
    writeFileSync(join(d, "src", "a.txt"), "changed a lot\n");
    writeFileSync(join(d, "src", "a.txt"), "aaaa\n");
  },
  "exec bit flipped": (d) => chmodSync(join(d, "src", "a.txt"), 0o755),
  "tracked file deleted": (d) => rmSync(join(d, "src", "deep", "b.txt")),
  "file replaced by a directory": (d) => {
    rmSync(join(d, "README.md"));
    mkdirSync(join(d, "README.md"));
    writeFileSync(join(d, "README.md", "x"), "x");
  },
  "symlink retargeted": (d) => {
    unlinkSync(join(d, "link"));
    symlinkSync("README.md", join(d, "link"));
  },
  "untracked file at the root": (d) => writeFileSync(join(d, "new.txt"), "n"),
  "untracked file in a new directory": (d) => {
    mkdirSync(join(d, "newdir", "inner"), { recursive: true });
    writeFileSync(join(d, "newdir", "inner", "f"), "n");
  },
  "untracked empty directory": (d) => mkdirSync(join(d, "emptydir", "inner"), { recursive: true }),
  "ignored file": (d) => writeFileSync(join(d, "src", "debug.log"), "x"),
  "un-ignored file": (d) => writeFileSync(join(d, "keep.log"), "x"),
  "ignored directory": (d) => {
    mkdirSync(join(d, "src", "build", "x"), { recursive: true });
    writeFileSync(join(d, "src", "build", "x", "out.o"), "x");
  },
  "nested .gitignore": (d) => writeFileSync(join(d, "sub", "scratch.tmp"), "x"),
  "ignored by .git/info/exclude": (d) => {
    mkdirSync(join(d, ".git", "info"), { recursive: true });
    writeFileSync(join(d, ".git", "info", "exclude"), "secret.txt\n");
    writeFileSync(join(d, "secret.txt"), "x");
  },
  "re-included inside an ignored-contents dir": (d) => {
    mkdirSync(join(d, "logs"));
    writeFileSync(join(d, "logs", "noise"), "x");
    writeFileSync(join(d, "logs", "important"), "x");
  },
  "only ignored contents in logs/": (d) => {
    mkdirSync(join(d, "logs"));
    writeFileSync(join(d, "logs", "noise"), "x");
  },
  "untracked nested repository": (d) => {
    mkdirSync(join(d, "child"));
    git(join(d, "child"), "init", "--quiet");
  },
  "something that only looks like a nested repository": (d) => {
    mkdirSync(join(d, "child", ".git"), { recursive: true });
    writeFileSync(join(d, "child", ".git", "HEAD"), "ref: refs/heads/main\n");
  },
  "ignored nested repository": (d) => {
    mkdirSync(join(d, "src", "build"), { recursive: true });
    git(join(d, "src", "build"), "init", "--quiet");
  },
  "new file staged": (d) => {
    writeFileSync(join(d, "staged.txt"), "s");
    git(d, "add", "staged.txt");
  },
  "modification staged, work tree reverted": (d) => {
    writeFileSync(join(d, "src", "a.txt"), "staged change\n");
    git(d, "add", "src/a.txt");
    writeFileSync(join(d, "src", "a.txt"), "aaaa\n");
  },
  "removed from the index only": (d) => git(d, "rm", "--cached", "--quiet", "sub/c.txt"),
  "local commit, then clean": (d) => commit(d, { "src/a.txt": "committed\n" }, "local"),
};

type Origin = "grex clone" | "git clone" | "grex update";

async function freshCopy(origin: Origin, name: string): Promise<string> {
  const d = join(tmp.path, name);
  if (origin === "git clone") {
    git(tmp.path, "clone", "--quiet", upstream, name);
    return d;
  }
  if (origin === "grex clone") {
    await backendFor(upstream).clone(upstream, d, { ref: null, signal: never() });
    return d;
  }
  // Clone an older commit, then let the update (isomorphic-git checkout) write the index.
  await backendFor(upstream).clone(upstream, d, { ref: git(upstream, "rev-parse", "HEAD~1"), signal: never() });
  await backendFor(upstream).update(d, upstream, { ref: null, signal: never() });
  return d;
}

let n = 0;
for (const origin of ["grex clone", "git clone", "grex update"] as const) {
  describe(origin, () => {
    for (const [name, change] of Object.entries(scenarios)) {
      test(name, async () => {
        const d = await freshCopy(origin, `c${n++}`);
        expect(await isDirtyFast(d, join(d, ".git"))).toBe(false); // the fast path answers, no fallback
        expect(await backendFor(upstream).isDirty(d)).toBe(false);
        change(d);
        const ours = await backendFor(upstream).isDirty(d);
        // --no-optional-locks: git must not refresh the index before we are done comparing.
        const theirs = git(d, "--no-optional-locks", "status", "--porcelain") !== "";
        expect(ours).toBe(theirs);
      });
    }
  });
}

// The same scenarios with the status cache primed on a settled work tree (so
// every directory is remembered): the cache may only spare work, never hide a change.
describe("grex clone, status cache primed", () => {
  const copies = new Map<string, string>();
  beforeAll(async () => {
    for (const name of Object.keys(scenarios)) copies.set(name, await freshCopy("grex clone", `c${n++}`));
    await Bun.sleep(SETTLED_MS + 200); // older than the settle window: the priming check may remember every directory
  }, 60_000);
  for (const [name, change] of Object.entries(scenarios)) {
    test(name, async () => {
      const d = copies.get(name) as string;
      const statusCache = `${d}.status-cache.json`;
      expect(await isDirtyFast(d, join(d, ".git"), { statusCache })).toBe(false);
      expect(Object.keys(readStatusCache(statusCache)?.dirs ?? {}).sort()).toEqual(["", "bin", "src", "src/deep", "sub"]);
      change(d);
      const ours = await backendFor(upstream).isDirty(d, { statusCache });
      const theirs = git(d, "--no-optional-locks", "status", "--porcelain") !== "";
      expect(ours).toBe(theirs);
    });
  }
});

// Gitlinks of uninitialised submodules (git.git's `sha1collisiondetection`):
// the empty directory git leaves is part of the work tree, so deleting or
// replacing it is a change (` D path`, ` T path`), while a file put inside it
// is not (git does not look into a directory that is not a repository).
describe("uninitialised submodules", () => {
  let sup: string;
  beforeAll(() => {
    const lib = join(tmp.path, "sm-lib");
    makeRepo(lib, { "lib.txt": "lib\n" });
    sup = join(tmp.path, "sm-sup");
    makeRepo(sup, { "README.md": "sup\n" });
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../sm-lib", "sha1collisiondetection");
    git(sup, "commit", "-q", "-m", "one submodule");
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../sm-lib", "vendor/lib");
    git(sup, "commit", "-q", "-m", "a nested one");
  });
  const linkScenarios: Record<string, (d: string) => void> = {
    "nothing changed": () => {},
    "the empty directory deleted": (d) => rmSync(join(d, "sha1collisiondetection"), { recursive: true }),
    "a nested one's directory deleted": (d) => rmSync(join(d, "vendor", "lib"), { recursive: true }),
    "its parent directory deleted": (d) => rmSync(join(d, "vendor"), { recursive: true }),
    "replaced by a file": (d) => {
      rmSync(join(d, "sha1collisiondetection"), { recursive: true });
      writeFileSync(join(d, "sha1collisiondetection"), "x");
    },
    "a file put inside it": (d) => writeFileSync(join(d, "sha1collisiondetection", "f.c"), "x"),
  };
  for (const origin of ["grex clone", "git clone", "grex update"] as const) {
    for (const [name, change] of Object.entries(linkScenarios)) {
      test(`${origin}: ${name}`, async () => {
        const d = join(tmp.path, `s${n++}`);
        if (origin === "git clone") git(tmp.path, "clone", "--quiet", sup, d);
        else if (origin === "grex clone") await backendFor(sup).clone(sup, d, { ref: null, signal: never() });
        else {
          await backendFor(sup).clone(sup, d, { ref: git(sup, "rev-parse", "HEAD~1"), signal: never() });
          await backendFor(sup).update(d, sup, { ref: null, signal: never() });
        }
        expect(await isDirtyFast(d, join(d, ".git"))).toBe(false);
        change(d);
        const theirs = git(d, "--no-optional-locks", "status", "--porcelain") !== "";
        expect(await isDirtyFast(d, join(d, ".git"))).toBe(theirs);
        expect(await backendFor(sup).isDirty(d)).toBe(theirs);
      });
    }
  }
});
