// A hostile upstream, tried as an attacker would: trees crafted byte for byte
// (duplicate names, links on the way, names that are .git on Windows or
// macOS, impossible modes), served by path, file:// and smart HTTP, met by a
// fresh `add` and by `add` then `sync`. Each refused tree is exit 4 with one
// sentence naming the pack, the commit and the path, and nothing outside the
// pack's work tree changes: HOME, the workspace, the pack's .git.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { commitTree, dir, emptyRepo, file, link, type RawEntry, rawTree } from "../helpers/crafted-tree.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { git, snapshot, TestWorkspace } from "../helpers/workspace.ts";

// Upstream repositories live in one place (served over HTTP); each test gets its own workspace and HOME.
const upstream = new TestWorkspace("grex-hostile-up-");
let server: GitHttpServer;
beforeAll(async () => {
  server = await startGitHttpServer(upstream.upstream);
});
afterAll(async () => {
  await server.stop();
  upstream.cleanup();
});

async function inWorkspace(body: (t: TestWorkspace) => Promise<void>): Promise<void> {
  const t = new TestWorkspace("grex-hostile-");
  try {
    expect((await t.grex("init")).code).toBe(0);
    writeFileSync(join(t.home, ".profile"), "precious\n");
    await body(t);
  } finally {
    t.cleanup();
  }
}

type Transport = "path" | "file" | "http";
const TRANSPORTS: Transport[] = ["path", "file", "http"];
const urlOf = (tr: Transport, name: string) => (tr === "path" ? join(upstream.upstream, name) : tr === "file" ? `file://${join(upstream.upstream, name)}` : `${server.url}/${name}`);

/** What an attack commits: the entries of its hostile tree (besides a README). */
interface Attack {
  name: string;
  /** The path the refusal must name. */
  path: string;
  entries: (repo: string) => RawEntry[];
  /** A first, harmless-looking commit the hostile one follows (for add-then-sync). */
  before?: (repo: string) => RawEntry[];
}

const hook = (repo: string) => file(repo, "post-checkout", "#!/bin/sh\necho pwned > \"$HOME/pwned\"\n", "100755");
const dotGitLike = (name: string): Attack => ({
  name: `name ${JSON.stringify(name)}`,
  path: name,
  entries: (r) => [dir(r, name, [dir(r, "hooks", [hook(r)])])],
});

const ATTACKS: Attack[] = [
  {
    name: "a link to HOME and a directory of the same name",
    path: "h",
    before: (r) => [link(r, "h", "../../home")],
    entries: (r) => [link(r, "h", "../../home"), dir(r, "h", [dir(r, ".config", [file(r, "x", "planted\n")])])],
  },
  {
    name: "a link to .git and a directory of the same name",
    path: "g",
    before: (r) => [link(r, "g", ".git")],
    entries: (r) => [link(r, "g", ".git"), dir(r, "g", [dir(r, "hooks", [hook(r)])])],
  },
  {
    name: "a link whose name another directory shares on a case-insensitive file system",
    path: "h/.config/x",
    entries: (r) => [link(r, "H", "../../home"), dir(r, "h", [dir(r, ".config", [file(r, "x", "planted\n")])])],
  },
  {
    name: "a link and a file whose names differ only in case",
    path: "x",
    entries: (r) => [link(r, "X", "../../home/.profile"), file(r, "x", "overwritten\n")],
  },
  {
    name: "a mode git cannot hold",
    path: "odd",
    entries: (r) => [file(r, "odd", "#!/bin/sh\n", "1000000000000000755")],
  },
  ...["git~1", "GIT~1", ".git.", ".git ", ".git::$INDEX_ALLOCATION", ".g\u200cit", ".GIT"].map(dotGitLike),
];

let serial = 0;

/** A new empty upstream under its own name, the pack id a test adds it as, and a README blob in it. */
function freshUpstream(): { name: string; repo: string; pack: string; readme: RawEntry } {
  const name = `up${++serial}.git`;
  const repo = emptyRepo(join(upstream.upstream, name));
  return { name, repo, pack: `p${serial}`, readme: file(repo, "README", "hello\n") };
}
function hostileRepo(a: Attack, withBefore: boolean): { name: string; repo: string; hostile: () => string } {
  const name = `up${++serial}.git`;
  const repo = emptyRepo(join(upstream.upstream, name));
  const readme = file(repo, "README", "hello\n");
  if (withBefore) commitTree(repo, rawTree(repo, [readme, ...(a.before?.(repo) ?? [])]), "harmless");
  return { name, repo, hostile: () => commitTree(repo, rawTree(repo, [readme, ...a.entries(repo)]), "hostile") };
}

/** Everything that must not change: HOME, the workspace outside .grex/.state, and the pack's .git except what a fetch adds. */
function outside(t: TestWorkspace, pack: string): Record<string, string> {
  const ws = Object.entries(snapshot(t.ws)).filter(([p]) => p !== ".grex" && !p.startsWith(".grex/.state") && !p.startsWith(`${pack}/.git/objects`) && !p.startsWith(`${pack}/.git/refs/remotes`) && !p.startsWith(`${pack}/.git/refs/tags`));
  return { ...Object.fromEntries(ws.map(([p, v]) => [`ws/${p}`, v])), ...Object.fromEntries(Object.entries(snapshot(t.home)).map(([p, v]) => [`home/${p}`, v])) };
}

function expectRefusal(r: { code: number; stderr: string; stdout: string }, a: Attack, pack: string, commit: string): void {
  const text = r.stderr + r.stdout;
  expect(r.code).toBe(4);
  expect(text).toContain(commit.slice(0, 7));
  expect(text).toContain(pack);
  expect(text).toContain(JSON.stringify(a.path));
  expect(text).not.toMatch(/EEXIST|Could not find|internal error|\n\s+at /);
}

describe("hostile trees", () => {
  for (const tr of TRANSPORTS) {
    // Every attack over the plain path; the rest over file:// and HTTP too (the shared checkout code).
    const attacks = tr === "path" ? ATTACKS : ATTACKS.filter((a, i) => i < 5 || a.name.includes("git~1") || a.name.includes("\u200c"));
    for (const a of attacks) {
      test(`${tr}: fresh add of ${a.name} is refused and changes nothing`, async () => {
        await inWorkspace(async (t) => {
          const up = hostileRepo(a, false);
          const commit = up.hostile();
          const pack = `p${serial}`;
          const before = outside(t, pack);
          const r = await t.grex("add", urlOf(tr, up.name), pack);
          expectRefusal(r, a, pack, commit);
          expect(existsSync(join(t.ws, pack))).toBe(false);
          expect(readdirSync(t.ws).filter((n) => n.includes("grex-clone"))).toEqual([]);
          expect(outside(t, pack)).toEqual(before);
        });
      });

      test(`${tr}: sync onto ${a.name} is refused and changes nothing`, async () => {
        await inWorkspace(async (t) => {
          const up = hostileRepo(a, true);
          const pack = `p${serial}`;
          const added = await t.grex("add", urlOf(tr, up.name), pack);
          expect(added.stderr).toBe("");
          expect(added.code).toBe(0);
          const commit = up.hostile();
          const headBefore = git(join(t.ws, pack), "rev-parse", "HEAD");
          const before = outside(t, pack);
          const r = await t.grex("sync");
          expectRefusal(r, a, pack, commit);
          expect(outside(t, pack)).toEqual(before);
          expect(git(join(t.ws, pack), "rev-parse", "HEAD")).toBe(headBefore);
          expect(git(join(t.ws, pack), "status", "--porcelain")).toBe("");
          git(join(t.ws, pack), "fsck", "--connectivity-only", "--no-progress"); // the fetched hostile tree itself fails a full fsck
          // rm --force removes it, whatever it holds.
          expect((await t.grex("rm", pack, "--force")).code).toBe(0);
          expect(existsSync(join(t.ws, pack))).toBe(false);
        });
      });
    }
  }

  test("git refuses the NTFS names too (the reference)", () => {
    const a = dotGitLike("git~1");
    const up = hostileRepo(a, false);
    up.hostile();
    const target = join(upstream.root, "git-clone-ref");
    const r = Bun.spawnSync(["git", "clone", "-q", up.repo, target], { stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: upstream.home } });
    expect(r.stderr.toString()).toContain("invalid path");
  });
});

describe("links the previous commit left", () => {
  for (const tr of TRANSPORTS) {
    test(`${tr}: a link replaced by a directory, a file equal to one outside, then dropped: nothing outside is touched`, async () => {
      await inWorkspace(async (t) => {
        const { name, repo, pack, readme } = freshUpstream();
        commitTree(repo, rawTree(repo, [readme, link(repo, "h", "../../home")]), "link");
        expect((await t.grex("add", urlOf(tr, name), pack)).code).toBe(0);
        const home = snapshot(t.home);
        // The link becomes a directory holding a file with the bytes of one in HOME; then that file changes; then it goes.
        commitTree(repo, rawTree(repo, [readme, dir(repo, "h", [file(repo, ".profile", "precious\n")])]), "dir");
        const s1 = await t.grex("sync");
        expect(s1.stderr).toBe("");
        expect(s1.code).toBe(0);
        expect(readFileSync(join(t.ws, pack, "h", ".profile"), "utf8")).toBe("precious\n");
        commitTree(repo, rawTree(repo, [readme, dir(repo, "h", [file(repo, ".profile", "changed\n")])]), "change");
        expect((await t.grex("sync")).code).toBe(0);
        commitTree(repo, rawTree(repo, [readme]), "drop");
        expect((await t.grex("sync")).code).toBe(0);
        expect(snapshot(t.home)).toEqual(home);
        expect(existsSync(join(t.ws, pack, "h"))).toBe(false);
        expect(git(join(t.ws, pack), "status", "--porcelain")).toBe("");
        git(join(t.ws, pack), "fsck", "--no-progress");
  });
    });
  }

  test("a link a user made on the way is never written through", async () => {
    await inWorkspace(async (t) => {
      const { name, repo, pack, readme } = freshUpstream();
      commitTree(repo, rawTree(repo, [readme]), "one");
      expect((await t.grex("add", join(upstream.upstream, name), pack)).code).toBe(0);
      // An ignored link (so the pack is clean) where the next commit wants a directory.
      mkdirSync(join(t.home, "target"), { recursive: true });
      mkdirSync(join(t.ws, pack, ".git", "info"), { recursive: true });
      writeFileSync(join(t.ws, pack, ".git", "info", "exclude"), "d\n");
      Bun.spawnSync(["ln", "-s", join(t.home, "target"), join(t.ws, pack, "d")]);
      const commit = commitTree(repo, rawTree(repo, [readme, dir(repo, "d", [file(repo, "x", "new\n")])]), "two");
      const before = snapshot(t.home);
      const r = await t.grex("sync");
      expect(r.code).toBe(4);
      expect(r.stderr + r.stdout).toContain(pack);
      expect(r.stderr + r.stdout).not.toMatch(/EEXIST|internal error|\n\s+at /);
      expect(snapshot(t.home)).toEqual(before);
      expect(git(join(t.ws, pack), "rev-parse", "HEAD")).not.toBe(commit);
      expect((await t.grex("rm", pack, "--force")).code).toBe(0);
    });
  });
});

describe("a checkout interrupted or refused half-way heals on the next plain sync", () => {
  test.each(TRANSPORTS)("%s: an empty untracked directory where the next commit puts a link: the move finishes", async (tr) => {
    await inWorkspace(async (t) => {
      const { name, repo, pack, readme } = freshUpstream();
      commitTree(repo, rawTree(repo, [readme, file(repo, "pack.yaml", "name: r\ntype: meta\n")]), "one");
      expect((await t.grex("add", urlOf(tr, name), pack)).code).toBe(0);
      mkdirSync(join(t.ws, pack, "d", "x"), { recursive: true }); // what a pack's mkdir leaves: untracked, empty
      const two = commitTree(repo, rawTree(repo, [readme, link(repo, "d", "README"), file(repo, "pack.yaml", "name: r\ntype: meta\n# two\n")]), "two");
      const r = await t.grex("sync");
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(git(join(t.ws, pack), "rev-parse", "HEAD")).toBe(two);
      expect(git(join(t.ws, pack), "status", "--porcelain")).toBe("");
      expect(readdirSync(join(t.ws, pack)).filter((n) => n.includes("grex-checkout"))).toEqual([]);
    });
  });

  test("an untracked file in that directory: refused before anything changes; once moved away, the next sync finishes", async () => {
    await inWorkspace(async (t) => {
      const { name, repo, pack, readme } = freshUpstream();
      commitTree(repo, rawTree(repo, [readme, file(repo, "pack.yaml", "name: r\ntype: meta\n")]), "one");
      expect((await t.grex("add", join(upstream.upstream, name), pack)).code).toBe(0);
      mkdirSync(join(t.ws, pack, ".git", "info"), { recursive: true });
      writeFileSync(join(t.ws, pack, ".git", "info", "exclude"), "d/\n"); // ignored, so the pack is not dirty
      mkdirSync(join(t.ws, pack, "d"), { recursive: true });
      writeFileSync(join(t.ws, pack, "d", "x"), "made by a setup step\n");
      const two = commitTree(repo, rawTree(repo, [readme, link(repo, "d", "README"), file(repo, "pack.yaml", "name: r\ntype: meta\n# two\n")]), "two");
      const before = snapshot(join(t.ws, pack));
      const r = await t.grex("sync");
      expect(r.code).toBe(4);
      expect(r.stderr + r.stdout).not.toMatch(/EISDIR|EEXIST|--manifest|\n\s+at /);
      const after = snapshot(join(t.ws, pack));
      for (const k of Object.keys(before)) if (!k.startsWith(".git/objects") && !k.startsWith(".git/refs/remotes")) expect(after[k]).toEqual(before[k]);
      expect(existsSync(join(t.ws, pack, ".git", "grex-checkout.json"))).toBe(false);
      Bun.spawnSync(["rm", "-r", join(t.ws, pack, "d")]);
      const again = await t.grex("sync");
      expect(again.code).toBe(0);
      expect(git(join(t.ws, pack), "rev-parse", "HEAD")).toBe(two);
      expect(git(join(t.ws, pack), "status", "--porcelain")).toBe("");
    });
  });

  test("a move journaled toward a tree grex now refuses is rolled back to HEAD's tree, with the refusal", async () => {
    await inWorkspace(async (t) => {
      const { name, repo, pack, readme } = freshUpstream();
      const one = commitTree(repo, rawTree(repo, [readme, link(repo, "h", "../../home")]), "one");
      const wt = join(t.ws, pack);
      expect((await t.grex("add", join(upstream.upstream, name), pack)).code).toBe(0);
      const two = commitTree(repo, rawTree(repo, [file(repo, "README", "changed\n"), link(repo, "h", "../../home"), dir(repo, "h", [file(repo, "x", "planted\n")])]), "two");
      // What an older grex left when killed mid-move: objects fetched, README rewritten, a temp file, the journal.
      git(wt, "fetch", "-q", "origin");
      writeFileSync(join(wt, "README"), "changed\n");
      writeFileSync(join(wt, ".README.grex-checkout-tmp"), "half");
      writeFileSync(join(wt, ".git", "grex-checkout.json"), JSON.stringify({ from: one, to: two, branch: "main" }));
      const home = snapshot(t.home);
      const r = await t.grex("sync");
      expect(r.code).toBe(4);
      expect(r.stderr + r.stdout).toContain(two.slice(0, 7));
      expect(snapshot(t.home)).toEqual(home);
      expect(existsSync(join(wt, ".git", "grex-checkout.json"))).toBe(false);
      expect(readFileSync(join(wt, "README"), "utf8")).toBe("hello\n");
      expect(existsSync(join(wt, ".README.grex-checkout-tmp"))).toBe(false);
      expect(git(wt, "rev-parse", "HEAD")).toBe(one);
      expect(git(wt, "status", "--porcelain")).toBe("");
    });
  });

  test("an index holding a mode git cannot hold (left by an older grex): status, sync and rm --force still work", async () => {
    await inWorkspace(async (t) => {
      const up = t.repo("r", { README: "x\n", "a/b": "y\n" });
      expect((await t.grex("add", up, "r")).code).toBe(0);
      const idx = join(t.ws, "r", ".git", "index");
      const b = readFileSync(idx);
      b.writeUInt32BE(Number.parseInt("1000000000000000755", 8) >>> 0, 12 + 24); // the first entry's mode, as an older grex wrote it
      new Bun.CryptoHasher("sha1").update(b.subarray(0, b.length - 20)).digest().copy(b, b.length - 20);
      writeFileSync(idx, b);
      for (const argv of [["status"], ["sync"], ["sync", "--force"]]) {
        const r = await t.grex(...argv);
        expect(r.stderr + r.stdout).not.toMatch(/internal error|\n\s+at /);
        expect(r.code).toBe(0);
      }
      expect((await t.grex("rm", "r", "--force")).code).toBe(0);
      expect(existsSync(join(t.ws, "r"))).toBe(false);
    });
  });
});

// The ssh backend: the git program transfers, grex checks out (checkout.ts, checkout-diff.ts). It is driven
// here with file:// URLs, which the git program handles as it does ssh apart from the connection.
describe("the system-git (ssh) backend shares the checkout", () => {
  const never = () => new AbortController().signal;
  for (const a of ATTACKS.filter((x, i) => i < 5 || x.name.includes("git~1") || x.name.includes("\u200c"))) {
    test(`clone and update onto ${a.name} are refused and change nothing`, async () => {
      await inWorkspace(async (t) => {
        const { systemGitBackend } = await import("../../src/core/git/backend.ts");
        const fresh = hostileRepo(a, false);
        const freshCommit = fresh.hostile();
        const target = join(t.ws, "fresh");
        const home = snapshot(t.home);
        const err = await systemGitBackend.clone(`file://${fresh.repo}`, target, { ref: null, signal: never() }).then(() => null, (e: unknown) => e);
        expect(err).toBeInstanceOf(GrexError);
        expect((err as GrexError).exitCode).toBe(4);
        expect((err as GrexError).message).toContain(freshCommit.slice(0, 7));
        expect((err as GrexError).message).toContain(JSON.stringify(a.path));
        expect(existsSync(target)).toBe(false);
        expect(readdirSync(t.ws).filter((n) => n.includes("grex-clone"))).toEqual([]);

        const up = hostileRepo(a, true);
        const dir = join(t.ws, "upd");
        await systemGitBackend.clone(`file://${up.repo}`, dir, { ref: null, signal: never() });
        const commit = up.hostile();
        const before = snapshot(dir);
        const err2 = await systemGitBackend.update(dir, `file://${up.repo}`, { ref: null, signal: never() }).then(() => null, (e: unknown) => e);
        expect((err2 as GrexError).exitCode).toBe(4);
        expect((err2 as GrexError).message).toContain(commit.slice(0, 7));
        const after = snapshot(dir);
        for (const k of Object.keys(before)) if (!k.startsWith(".git/objects") && !k.startsWith(".git/refs/remotes") && !k.startsWith(".git/logs")) expect(after[k]).toEqual(before[k]);
        expect(snapshot(t.home)).toEqual(home);
      });
    });
  }
});

describe("a ref an older grex moved over an incomplete fetch", () => {
  for (const tr of TRANSPORTS) {
    test(`${tr}: one plain sync fetches what is missing and finishes`, async () => {
      await inWorkspace(async (t) => {
        const name = `up${++serial}.git`;
        const repo = emptyRepo(join(upstream.upstream, name));
        commitTree(repo, rawTree(repo, [file(repo, "README", "hello\n")]), "one");
        const pack = `p${serial}`;
        const wt = join(t.ws, pack);
        expect((await t.grex("add", urlOf(tr, name), pack)).code).toBe(0);
        const tree = rawTree(repo, [file(repo, "README", "two\n"), file(repo, "new.txt", "new\n")]);
        const two = commitTree(repo, tree, "two");
        // The state a killed fetch of an older grex left: the commit here, its tree not, origin/main moved anyway.
        git(wt, "fetch", "-q", repo, "+refs/heads/main:refs/remotes/origin/main"); // by path: this process also serves HTTP
        const loose = join(wt, ".git", "objects", tree.slice(0, 2), tree.slice(2));
        expect(existsSync(loose)).toBe(true);
        Bun.spawnSync(["rm", "-f", loose]);
        expect(git(wt, "rev-parse", "refs/remotes/origin/main")).toBe(two);
        const r = await t.grex("sync");
        expect(r.stderr + r.stdout).not.toMatch(/Could not find|internal error/);
        expect(r.code).toBe(0);
        expect(git(wt, "rev-parse", "HEAD")).toBe(two);
        expect(git(wt, "status", "--porcelain")).toBe("");
        git(wt, "fsck", "--no-progress", "--strict");
      });
    });
  }
});

describe("submodules (gitlinks)", () => {
  test("a commit that drops a submodule removes its empty directory and keeps a populated one's files", async () => {
    await inWorkspace(async (t) => {
      const { name, repo, pack, readme } = freshUpstream();
      const sub = { mode: "160000", oid: "1".repeat(40) };
      commitTree(repo, rawTree(repo, [readme, { ...sub, name: "empty" }, { ...sub, name: "full" }]), "one");
      const wt = join(t.ws, pack);
      expect((await t.grex("add", join(upstream.upstream, name), pack)).code).toBe(0);
      expect(existsSync(join(wt, "empty"))).toBe(true);
      const two = commitTree(repo, rawTree(repo, [readme]), "two");
      writeFileSync(join(wt, "full", "kept.txt"), "someone's clone\n");
      mkdirSync(join(wt, ".git", "info"), { recursive: true });
      writeFileSync(join(wt, ".git", "info", "exclude"), "full/\n");
      const r = await t.grex("sync");
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(git(wt, "rev-parse", "HEAD")).toBe(two);
      expect(existsSync(join(wt, "empty"))).toBe(false);
      expect(readFileSync(join(wt, "full", "kept.txt"), "utf8")).toBe("someone's clone\n");
    });
  });
});

