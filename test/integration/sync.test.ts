// The sync engine end to end through the real CLI (in process), over both
// in-process transports: local paths and the loopback smart-HTTP server.
// Upstream repositories are real, nested three levels deep through
// .grex/pack.yaml children; every assertion reads real files and git state.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { commit, currentBranch, git, headSha, tag, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { buildPackTree, makeUpstream, packYaml, type TreeHost, type Transport } from "../helpers/pack-tree.ts";
import { snapshot, TestWorkspace } from "../helpers/workspace.ts";

let server: GitHttpServer;
let serveRoot: { path: string; cleanup: () => void };
let hosts = 0;

beforeAll(async () => {
  serveRoot = tempDir("grex-sync-serve-");
  server = await startGitHttpServer(serveRoot.path);
});

afterAll(async () => {
  await server.stop();
  serveRoot.cleanup();
});

let t: TestWorkspace | undefined;
afterEach(() => {
  t?.cleanup();
  t = undefined;
});

async function freshWorkspace(): Promise<TestWorkspace> {
  t = new TestWorkspace("grex-sync-");
  expect((await t.grex("init")).code).toBe(0);
  return t;
}

/** Where a test's upstream repositories live; HTTP ones get their own sub-path of the shared server. */
function hostFor(transport: Transport, w: TestWorkspace): TreeHost {
  if (transport === "local") return { transport, workDir: w.upstream };
  const sub = `t${hosts++}`;
  return { transport, workDir: w.upstream, serveDir: join(serveRoot.path, sub), serverUrl: `${server.url}/${sub}` };
}

interface PackJson {
  id: string;
  result: string;
  sha_before: string | null;
  sha_after: string | null;
  message: string;
}
interface StatusRow {
  id: string;
  depth: number;
  dirty: boolean;
  drift: string;
}
interface LsRow {
  id: string;
  depth: number;
  parent: string | null;
  sha: string | null;
  ref: string | null;
}

const packsOf = <T>(json: Record<string, unknown>) => json.packs as T[];
const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map((r) => [r.id, r]));

function manifestEvents(ws: string): Array<{ op: string; id: string }> {
  const text = readFileSync(join(ws, "grex.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { op: string; id: string });
}

function lockEntries(ws: string): Map<string, { sha: string; branch: string | null }> {
  const text = readFileSync(join(ws, "grex.lock.jsonl"), "utf8");
  const out = new Map<string, { sha: string; branch: string | null }>();
  for (const l of text.split("\n")) if (l.trim()) {
    const e = JSON.parse(l) as { id: string; sha: string; branch: string | null };
    out.set(e.id, e);
  }
  return out;
}

/** Work-tree files only (no .git), for "nothing changed" checks. */
function workTree(dir: string): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot(dir)).filter(([k]) => k !== ".git" && !k.startsWith(".git/")));
}

/** Workspace entries besides grex's own files: packs and anything a failed clone left behind. */
function strayEntries(ws: string): string[] {
  const own = new Set([".gitignore", ".gitattributes", "grex.jsonl", "grex.lock.jsonl", ".grex"]);
  return readdirSync(ws).filter((n) => !own.has(n)).sort();
}

for (const transport of ["local", "http"] as const) {
  describe(`sync over ${transport} transport`, () => {
    test("add → ls → sync a 3-level tree → upstream moves → fast-forward → status clean → dirty pack skipped → rm", async () => {
      const w = await freshWorkspace();
      const host = hostFor(transport, w);
      // stack ─┬─ mid ── deep ── leaf      (depths 0..3)
      //        └─ side
      const tree = buildPackTree(host, {
        name: "stack",
        children: [
          { name: "mid", children: [{ name: "deep", children: [{ name: "leaf", files: { "leaf.txt": "leaf v1\n" } }] }] },
          { name: "side", plain: true },
        ],
      });
      if (transport === "http") {
        // The children really are http URLs of the same server.
        const yaml = readFileSync(join(tree.repos.get("mid")?.work ?? "", ".grex/pack.yaml"), "utf8");
        expect(yaml).toContain(`${server.url}/`);
      }
      const repo = (name: string) => {
        const r = tree.repos.get(name);
        if (!r) throw new Error(`no upstream ${name}`);
        return r;
      };
      const expected = tree.ids();
      const dirOf = (id: string) => join(w.ws, id);

      // add: clones the root and, recursively, every child.
      const add = await w.grex("add", tree.root.url, "--json");
      expect(add.stderr).toBe("");
      expect(add.code).toBe(0);
      expect(add.json).toMatchObject({ id: "stack", type: "meta", url: tree.root.url, sha: tree.root.head(), installed: true });
      for (const p of expected) {
        expect(headSha(dirOf(p.id))).toBe(repo(p.name).head());
        expect(currentBranch(dirOf(p.id))).toBe("main");
      }
      expect(readFileSync(join(dirOf("stack/mid/deep/leaf"), "leaf.txt"), "utf8")).toBe("leaf v1\n");
      // Ignore blocks: the root in the workspace .gitignore, each child in its parent's .git/info/exclude.
      expect(readFileSync(join(w.ws, ".gitignore"), "utf8")).toContain("# >>> grex:stack >>>\n/stack/\n# <<< grex:stack <<<");
      expect(readFileSync(join(dirOf("stack/mid/deep"), ".git/info/exclude"), "utf8")).toContain("/leaf/");
      expect(git(dirOf("stack"), "status", "--porcelain")).toBe("");

      // ls: the whole tree in pre-order, with depth, parent and installed sha.
      const ls = await w.grex("ls", "--json");
      expect(ls.code).toBe(0);
      const rows = packsOf<LsRow>(ls.json);
      expect(rows.map((r) => [r.id, r.depth])).toEqual(expected.map((p) => [p.id, p.depth]));
      expect(rows.find((r) => r.id === "stack/mid/deep/leaf")?.parent).toBe("stack/mid/deep");
      for (const r of rows) expect(r.sha).toBe(headSha(dirOf(r.id)));

      // sync with nothing new upstream: every pack ok and up to date.
      const noop = await w.grex("sync", "--json");
      expect(noop.code).toBe(0);
      const noopPacks = packsOf<PackJson>(noop.json);
      expect(noopPacks.map((p) => p.id).sort()).toEqual(expected.map((p) => p.id).sort());
      for (const p of noopPacks) {
        expect(p.result).toBe("ok");
        expect(p.message).toBe("up to date");
        expect(p.sha_after).toBe(p.sha_before);
      }

      // Upstream moves: new commits at depth 0, 1 and 3, and a new child of the root.
      const extra = makeUpstream(host, "extra", { "extra.txt": "extra\n" });
      const leafOld = repo("leaf").head();
      const leafNew = repo("leaf").commit({ "leaf.txt": "leaf v2\n", "new/file.txt": "added\n" }, "leaf: v2");
      const sideNew = repo("side").commit({ "README.md": "# side v2\n" }, "side: v2");
      const stackNew = repo("stack").commit(
        { ".grex/pack.yaml": packYaml("stack", "meta", [repo("mid").url, repo("side").url, extra.url]) },
        "stack: adopt extra",
      );
      const moved = await w.grex("sync", "--json");
      expect(moved.code).toBe(0);
      const m = byId(packsOf<PackJson>(moved.json));
      expect(m.get("stack")).toMatchObject({ result: "ok", sha_after: stackNew });
      expect(m.get("stack/side")).toMatchObject({ result: "ok", sha_after: sideNew });
      expect(m.get("stack/mid/deep/leaf")).toMatchObject({ result: "ok", sha_before: leafOld, sha_after: leafNew });
      expect(m.get("stack/mid/deep/leaf")?.message).toBe(`${leafOld.slice(0, 7)}..${leafNew.slice(0, 7)}`);
      expect(m.get("stack/mid")?.message).toBe("up to date");
      expect(m.get("stack/extra")).toMatchObject({ result: "ok", message: "cloned", sha_after: extra.head() });
      // Fast-forwarded, still on the branch, files updated, and no stray changes.
      expect(headSha(dirOf("stack/mid/deep/leaf"))).toBe(leafNew);
      expect(currentBranch(dirOf("stack/mid/deep/leaf"))).toBe("main");
      expect(readFileSync(join(dirOf("stack/mid/deep/leaf"), "leaf.txt"), "utf8")).toBe("leaf v2\n");
      expect(readFileSync(join(dirOf("stack/mid/deep/leaf"), "new/file.txt"), "utf8")).toBe("added\n");
      expect(git(dirOf("stack/mid/deep/leaf"), "status", "--porcelain")).toBe("");
      expect(headSha(dirOf("stack"))).toBe(stackNew);
      expect(readFileSync(join(dirOf("stack/extra"), "extra.txt"), "utf8")).toBe("extra\n");
      expect(git(dirOf("stack"), "status", "--porcelain")).toBe("");
      const lock = lockEntries(w.ws);
      expect(lock.get("stack/mid/deep/leaf")).toMatchObject({ sha: leafNew, branch: "main" });
      expect(lock.get("stack/extra")).toMatchObject({ sha: extra.head(), branch: "main" });

      // status: everything clean.
      const clean = await w.grex("status", "--json", "--fail-on-drift");
      expect(clean.code).toBe(0);
      const cleanRows = packsOf<StatusRow>(clean.json);
      expect(cleanRows.map((r) => r.id).sort()).toEqual([...expected.map((p) => p.id), "stack/extra"].sort());
      for (const r of cleanRows) expect(r.drift).toBe("clean");

      // A local edit three levels down: status says dirty, sync leaves it alone even though upstream moved.
      const leafDir = dirOf("stack/mid/deep/leaf");
      writeFileSync(join(leafDir, "leaf.txt"), "my local work\n");
      const leafAhead = repo("leaf").commit({ "leaf.txt": "leaf v3\n" }, "leaf: v3");
      const before = workTree(leafDir);
      const dirty = await w.grex("status", "--json");
      expect(dirty.code).toBe(0);
      const d = byId(packsOf<StatusRow>(dirty.json));
      expect(d.get("stack/mid/deep/leaf")).toMatchObject({ dirty: true, drift: "dirty" });
      expect(d.get("stack/mid/deep")?.drift).toBe("clean");
      expect((await w.grex("status", "--fail-on-drift")).code).toBe(7);

      const skip = await w.grex("sync", "--json");
      expect(skip.code).toBe(0);
      const s = byId(packsOf<PackJson>(skip.json));
      expect(s.get("stack/mid/deep/leaf")?.result).toBe("dirty");
      expect(s.get("stack")?.result).toBe("ok");
      expect(skip.json.summary).toMatchObject({ dirty: 1, failed: 0 });
      expect(readFileSync(join(leafDir, "leaf.txt"), "utf8")).toBe("my local work\n");
      expect(workTree(leafDir)).toEqual(before);
      expect(headSha(leafDir)).toBe(leafNew);
      expect(headSha(leafDir)).not.toBe(leafAhead);

      // rm refuses while a pack in the subtree is dirty: exit 4, nothing changes.
      const eventsBefore = manifestEvents(w.ws).length;
      const refused = await w.grex("rm", "stack");
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain("stack/mid/deep/leaf");
      expect(existsSync(leafDir)).toBe(true);
      expect(readFileSync(join(leafDir, "leaf.txt"), "utf8")).toBe("my local work\n");
      expect(manifestEvents(w.ws).length).toBe(eventsBefore);
      expect(readFileSync(join(w.ws, ".gitignore"), "utf8")).toContain("# >>> grex:stack >>>");

      // --force removes the directory, logs an rm event, drops the ignore block and the lock entries.
      const rm = await w.grex("rm", "stack", "--force", "--json");
      expect(rm.code).toBe(0);
      expect(rm.json).toMatchObject({ id: "stack", removed: true, files_deleted: true });
      expect(existsSync(dirOf("stack"))).toBe(false);
      expect(strayEntries(w.ws)).toEqual([]);
      const events = manifestEvents(w.ws);
      expect(events.length).toBe(eventsBefore + 1);
      expect(events.at(-1)).toMatchObject({ op: "rm", id: "stack" });
      const ignore = readFileSync(join(w.ws, ".gitignore"), "utf8");
      expect(ignore).not.toContain("grex:stack");
      expect(ignore).toContain("# >>> grex:state >>>");
      expect([...lockEntries(w.ws).keys()]).toEqual([]);
      expect(packsOf<LsRow>((await w.grex("ls", "--json")).json)).toEqual([]);
    });

    test("tag and sha refs stay detached at their commits across syncs", async () => {
      const w = await freshWorkspace();
      const host = hostFor(transport, w);
      const up = makeUpstream(host, "pinned", { "version.txt": "1\n" });
      const first = up.head();
      commit(up.work, { "version.txt": "2\n" }, "two");
      const tagged = tag(up.work, "v2", "release 2"); // annotated: must peel to the commit
      up.commit({ "version.txt": "3\n" }, "three");

      expect((await w.grex("add", up.url, "bytag", "--ref", "v2")).code).toBe(0);
      expect((await w.grex("add", up.url, "bysha", "--ref", first)).code).toBe(0);
      const check = () => {
        expect(headSha(join(w.ws, "bytag"))).toBe(tagged);
        expect(currentBranch(join(w.ws, "bytag"))).toBeNull();
        expect(readFileSync(join(w.ws, "bytag/version.txt"), "utf8")).toBe("2\n");
        expect(headSha(join(w.ws, "bysha"))).toBe(first);
        expect(currentBranch(join(w.ws, "bysha"))).toBeNull();
        expect(readFileSync(join(w.ws, "bysha/version.txt"), "utf8")).toBe("1\n");
        const lock = lockEntries(w.ws);
        expect(lock.get("bytag")).toMatchObject({ sha: tagged, branch: null });
        expect(lock.get("bysha")).toMatchObject({ sha: first, branch: null });
      };
      check();
      const ls = byId(packsOf<LsRow>((await w.grex("ls", "--json")).json));
      expect(ls.get("bytag")?.ref).toBe("v2");
      expect(ls.get("bysha")?.ref).toBe(first);

      for (const round of [4, 5]) {
        up.commit({ "version.txt": `${round}\n` }, `v${round}`);
        const sync = await w.grex("sync", "--json");
        expect(sync.code).toBe(0);
        const p = byId(packsOf<PackJson>(sync.json));
        expect(p.get("bytag")).toMatchObject({ result: "ok", sha_before: tagged, sha_after: tagged });
        expect(p.get("bysha")).toMatchObject({ result: "ok", sha_before: first, sha_after: first });
        check();
      }
      const status = await w.grex("status", "--json", "--fail-on-drift");
      expect(status.code).toBe(0);
    });

    test("a diverged branch is an error that changes nothing", async () => {
      const w = await freshWorkspace();
      const host = hostFor(transport, w);
      const up = makeUpstream(host, "fork", { "a.txt": "base\n" });
      expect((await w.grex("add", up.url)).code).toBe(0);
      const dir = join(w.ws, "fork");
      const local = commit(dir, { "a.txt": "local change\n", "mine.txt": "mine\n" }, "local work");
      const remote = up.commit({ "a.txt": "upstream change\n" }, "upstream work");
      expect(remote).not.toBe(local);
      const files = workTree(dir);
      const lockBefore = readFileSync(join(w.ws, "grex.lock.jsonl"), "utf8");

      for (let i = 0; i < 2; i++) {
        const sync = await w.grex("sync", "--json");
        expect(sync.code).toBe(4);
        expect(sync.json.error).toMatchObject({ kind: "pack_op", code: 4 });
        const fork = packsOf<PackJson>(sync.json).find((p) => p.id === "fork");
        expect(fork).toMatchObject({ result: "failed", sha_before: local });
        expect(fork?.message).toContain("diverged");
        expect(headSha(dir)).toBe(local);
        expect(currentBranch(dir)).toBe("main");
        expect(workTree(dir)).toEqual(files);
        expect(git(dir, "status", "--porcelain")).toBe("");
        expect(readFileSync(join(w.ws, "grex.lock.jsonl"), "utf8")).toBe(lockBefore);
      }
      const plain = await w.grex("sync");
      expect(plain.code).toBe(4);
      expect(plain.stderr).toMatch(/diverged/);
    });

    test("a failed clone (bad URL, missing ref) leaves no directory and no manifest event", async () => {
      const w = await freshWorkspace();
      const host = hostFor(transport, w);
      const up = makeUpstream(host, "real", { "x.txt": "x\n" });
      const badUrl = transport === "local" ? join(w.upstream, "does-not-exist") : `${host.serverUrl}/does-not-exist.git`;
      const manifestBefore = readFileSync(join(w.ws, "grex.jsonl"), "utf8");
      const ignoreBefore = readFileSync(join(w.ws, ".gitignore"), "utf8");

      for (const argv of [
        ["add", badUrl],
        ["add", up.url, "--ref", "no-such-ref"],
        ["add", up.url, "nested-target", "--ref", "0123456789abcdef0123456789abcdef01234567"],
      ]) {
        const r = await w.grex(...argv);
        expect(r.code).toBe(4);
        expect(r.stderr).toMatch(/^grex: /);
        expect(strayEntries(w.ws)).toEqual([]);
        expect(readFileSync(join(w.ws, "grex.jsonl"), "utf8")).toBe(manifestBefore);
        expect(readFileSync(join(w.ws, ".gitignore"), "utf8")).toBe(ignoreBefore);
        const ls = await w.grex("ls", "--json");
        expect(packsOf<LsRow>(ls.json)).toEqual([]);
      }
      // The same URL with a good ref still works afterwards.
      expect((await w.grex("add", up.url)).code).toBe(0);
      expect(strayEntries(w.ws)).toEqual(["real"]);
    });
  });
}

describe("progress output", () => {
  async function run(w: TestWorkspace, argv: string[], stderrTTY: boolean) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      cwd: w.ws,
      env: w.env,
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      stdoutTTY: false,
      stderrTTY,
    });
    return { code, stdout, stderr };
  }

  test("none on stderr with --json or when stderr is not a TTY; shown on a TTY otherwise", async () => {
    const w = await freshWorkspace();
    const host = hostFor("local", w);
    const tree = buildPackTree(host, { name: "top", children: [{ name: "kid" }] });
    expect((await w.grex("add", tree.root.url, "--no-install")).code).toBe(0);

    const json = await run(w, ["sync", "--json"], true);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe("");
    const notTty = await run(w, ["sync"], false);
    expect(notTty.code).toBe(0);
    expect(notTty.stderr).toBe("");
    // Control: the same sync on a TTY does draw progress, so the checks above could fail.
    const tty = await run(w, ["sync"], true);
    expect(tty.code).toBe(0);
    expect(tty.stderr).toContain("sync [");

    // A real process with stderr on a pipe: nothing on stderr either.
    const p = w.spawnGrex(["sync"]);
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(0);
    expect(err).toBe("");
    expect(out).toContain("2 packs: 2 ok");
  });
});
