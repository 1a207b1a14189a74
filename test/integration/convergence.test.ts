// Status tells the truth and sync converges (the five scenarios a new user
// hits): setup undone by hand, a failed install on a second machine, a child
// dropped upstream, a pack behind its remote, a pack switched to another
// branch. Real repositories, a sandboxed HOME, both in-process transports
// wherever a remote is involved, and the MCP status tool read side by side.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { currentBranch, git, gitAsync, headSha, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { SessionTransport, serverOptions } from "../helpers/mcp.ts";
import { buildPackTree, makeUpstream, packYaml, type TreeHost, type Transport } from "../helpers/pack-tree.ts";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let server: GitHttpServer;
let serveRoot: { path: string; cleanup: () => void };
let hosts = 0;
const open: TestWorkspace[] = [];

beforeAll(async () => {
  serveRoot = tempDir("grex-conv-serve-");
  server = await startGitHttpServer(serveRoot.path);
});
afterAll(async () => {
  await server.stop();
  serveRoot.cleanup();
});
afterEach(() => {
  for (const w of open.splice(0)) w.cleanup();
});

async function workspace(): Promise<TestWorkspace> {
  const w = new TestWorkspace("grex-conv-");
  open.push(w);
  expect((await w.grex("init")).code).toBe(0);
  return w;
}

function hostFor(transport: Transport, w: TestWorkspace): TreeHost {
  if (transport === "local") return { transport, workDir: w.upstream };
  const sub = `c${hosts++}`;
  return { transport, workDir: w.upstream, serveDir: join(serveRoot.path, sub), serverUrl: `${server.url}/${sub}` };
}

interface Row {
  id: string;
  drift: string;
  branch: string | null;
  ahead: number | null;
  behind: number | null;
  setup_drift: Array<{ action: string; idx: number; path: string; differs: string }>;
  install_error: string | null;
  topic: { branch: string; base: string | null; ahead: number | null; behind: number | null; upstream: string | null; pushed: boolean } | null;
}

async function status(w: TestWorkspace, ...flags: string[]): Promise<{ code: number; rows: Map<string, Row>; stdout: string }> {
  const r = await w.grex("status", "--json", "--fail-on-drift", ...flags);
  const rows = new Map((r.json.packs as Row[]).map((x) => [x.id, x]));
  return { code: r.code, rows, stdout: r.stdout };
}

/** A declarative pack: a theme dir, a link into it, an env block. */
const THEME_YAML = `${packYaml("theme", "declarative", [])}actions:
  - mkdir: { path: $HOME/.config/themes }
  - symlink: { src: files/theme.conf, dst: $HOME/.config/themes/theme.conf }
  - env: { name: GREX_THEME, value: dark, scope: user }
`;
const THEME_FILES = { ".grex/pack.yaml": THEME_YAML, "files/theme.conf": "dark\n" };

/** The same document through the MCP status tool. */
async function mcpStatus(w: TestWorkspace, args: Record<string, unknown>): Promise<{ text: string; structured: unknown; isError: boolean }> {
  const client = new Client({ name: "grex-test", version: "1" });
  await client.connect(new SessionTransport(serverOptions(w.ws, w.env)));
  try {
    const r = (await client.callTool({ name: "status", arguments: args })) as {
      content: Array<{ text: string }>;
      structuredContent: unknown;
      isError?: boolean;
    };
    return { text: r.content[0]?.text ?? "", structured: r.structuredContent, isError: r.isError === true };
  } finally {
    await client.close();
  }
}

describe("1. setup undone by hand is setup-drift; sync re-applies exactly that", () => {
  test("deleted link, removed directory, edited env block: each exits 7, sync heals, exit 0", async () => {
    const w = await workspace();
    const up = makeUpstream({ transport: "local", workDir: w.upstream }, "theme", THEME_FILES);
    expect((await w.grex("add", up.url)).code).toBe(0);
    const link = join(w.home, ".config/themes/theme.conf");
    const bashrc = join(w.home, ".bashrc");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    const clean = await status(w);
    expect(clean.code).toBe(0);
    expect(clean.rows.get("theme")).toMatchObject({ drift: "clean", setup_drift: [], install_error: null, branch: "main" });

    const kinds: Array<{ name: string; undo: () => void; action: string; differs: RegExp; blocked?: () => void }> = [
      { name: "deleted link", undo: () => rmSync(link), action: "symlink", differs: /missing/ },
      {
        name: "link pointing elsewhere",
        undo: () => {
          rmSync(link);
          symlinkSync(bashrc, link);
        },
        action: "symlink",
        differs: /links to .*\.bashrc/,
        // Someone else's link is never clobbered: sync says so, and heals once it is gone.
        blocked: () => rmSync(link),
      },
      { name: "removed directory", undo: () => rmSync(join(w.home, ".config/themes"), { recursive: true }), action: "mkdir", differs: /missing/ },
      {
        name: "edited env block",
        undo: () => writeFileSync(bashrc, readFileSync(bashrc, "utf8").replace("'dark'", "'light'")),
        action: "env",
        differs: /differently/,
      },
      {
        name: "env block deleted",
        undo: () => writeFileSync(bashrc, ""),
        action: "env",
        differs: /no GREX_THEME block/,
      },
    ];
    for (const k of kinds) {
      k.undo();
      const drifted = await status(w);
      expect(drifted.code, k.name).toBe(7);
      const row = drifted.rows.get("theme");
      expect(row?.drift, k.name).toBe("setup-drift");
      expect(row?.setup_drift.some((d) => d.action === k.action && k.differs.test(d.differs)), k.name).toBe(true);
      // MCP returns the same document, and with fail_on_drift it is an error result.
      const viaMcp = await mcpStatus(w, { fail_on_drift: false });
      expect(viaMcp.text).toBe((await w.grex("status", "--json")).stdout.trim());
      expect((await mcpStatus(w, { fail_on_drift: true })).isError).toBe(true);
      // The text line names the state and what differs.
      expect((await w.grex("status", "--plain")).stdout).toMatch(new RegExp(`^theme  setup-drift  main +${k.action} `, "m"));
      // doctor lists it.
      const doctor = await w.grex("doctor", "--json");
      const findings = doctor.json.findings as Array<{ check: string; pack: string; detail: string }>;
      expect(findings.some((f) => f.check === "setup-drift" && f.pack === "theme"), k.name).toBe(true);
      // A dry run says what it would re-apply and changes nothing.
      const before = readFileSync(bashrc, "utf8");
      const dry = await w.grex("sync", "--dry-run", "--json");
      expect(dry.code, k.name).toBe(k.blocked ? 4 : 0); // someone else's link: the dry run already says it would fail
      const planned = k.blocked ? "failed" : "would_perform_change";
      expect((dry.json.steps as Array<{ action: string; result: string }>).some((s) => s.action === k.action && s.result === planned), k.name).toBe(true);
      expect(readFileSync(bashrc, "utf8")).toBe(before);
      expect((await status(w)).rows.get("theme")?.drift).toBe("setup-drift");
      if (k.blocked) {
        const refused = await w.grex("sync", "--json");
        expect(refused.code, k.name).toBe(4);
        expect((refused.json.packs as Array<{ message: string }>)[0]?.message).toMatch(/already exists/);
        expect((await status(w)).rows.get("theme")?.drift).toBe("setup-drift");
        k.blocked();
      }
      // sync heals without --force, re-running only the drifted actions.
      const sync = await w.grex("sync", "--json");
      expect(sync.code, k.name).toBe(0);
      const steps = sync.json.steps as Array<{ action: string; result: string }>;
      expect(steps.length, k.name).toBeGreaterThan(0);
      expect(steps.every((s) => s.action === k.action || (k.action === "mkdir" && s.action === "symlink")), k.name).toBe(true);
      expect(steps.every((s) => s.result === "performed_change"), k.name).toBe(true);
      const healed = await status(w);
      expect(healed.code, k.name).toBe(0);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readFileSync(bashrc, "utf8")).toContain("export GREX_THEME='dark'");
    }
    // A second sync has nothing to do.
    const again = await w.grex("sync", "--json");
    expect(again.json.steps).toEqual([]);
  });
});

for (const transport of ["local", "http"] as const) {
  describe(`over ${transport} transport`, () => {
    test("2. a failed install on a second machine is not-installed with its reason; every sync retries until it succeeds", async () => {
      const a = await workspace();
      const up = makeUpstream(hostFor(transport, a), "theme", THEME_FILES);
      expect((await a.grex("add", up.url)).code).toBe(0);

      // Machine B: the committed files only, and a file in the way in its HOME.
      const b = new TestWorkspace("grex-conv-b-");
      open.push(b);
      for (const f of ["grex.jsonl", "grex.lock.jsonl"]) copyFileSync(join(a.ws, f), join(b.ws, f));
      mkdirSync(join(b.home, ".config/themes"), { recursive: true });
      const link = join(b.home, ".config/themes/theme.conf");
      writeFileSync(link, "mine\n");
      expect((await b.grex("init")).code).toBe(4);

      const st = await status(b);
      expect(st.code).toBe(7);
      expect(st.rows.get("theme")?.drift).toBe("not-installed");
      expect(st.rows.get("theme")?.install_error).toMatch(/already exists/);
      // Per machine: beside the committed lockfile.
      const local = JSON.parse(readFileSync(join(b.ws, ".grex", ".state", "installs.json"), "utf8")) as { packs: Record<string, unknown> };
      expect(local.packs.theme).toMatchObject({ installed_at: "", install_error: expect.stringMatching(/already exists/) });
      expect(readFileSync(join(b.ws, "grex.lock.jsonl"), "utf8")).not.toContain("install_error");
      const doctor = await b.grex("doctor", "--json");
      expect((doctor.json.findings as Array<{ check: string }>).some((f) => f.check === "install-state")).toBe(true);
      expect(doctor.code).toBe(7);

      // Still in the way: sync tries again and fails again.
      const retry = await b.grex("sync", "--json");
      expect(retry.code).toBe(4);
      expect((await status(b)).rows.get("theme")?.drift).toBe("not-installed");

      rmSync(link);
      const ok = await b.grex("sync", "--json");
      expect(ok.code).toBe(0);
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      const healed = await status(b);
      expect(healed.code).toBe(0);
      expect(healed.rows.get("theme")).toMatchObject({ drift: "clean", install_error: null });
    });

    test("every other drift kind exits 7 and 0 once healed: missing, setup-changed, dirty", async () => {
      const w = await workspace();
      const yaml = (dirs: string[]) => `${packYaml("dirs", "declarative", [])}actions:\n${dirs.map((d) => `  - mkdir: { path: $HOME/${d} }\n`).join("")}`;
      const up = makeUpstream(hostFor(transport, w), "dirs", { ".grex/pack.yaml": yaml(["one"]) });
      expect((await w.grex("add", up.url)).code).toBe(0);
      const dir = join(w.ws, "dirs");
      const kinds: Array<{ state: string; make: () => Promise<void>; heal: () => Promise<void> }> = [
        {
          state: "missing",
          make: async () => rmSync(dir, { recursive: true }),
          heal: async () => void expect((await w.grex("sync")).code).toBe(0),
        },
        {
          // HEAD moved outside grex (a manual pull) onto a changed pack.yaml.
          state: "setup-changed",
          make: async () => {
            up.commit({ ".grex/pack.yaml": yaml(["one", "two"]) }, "one more dir");
            await gitAsync(dir, "pull", "-q", "--ff-only");
          },
          heal: async () => {
            expect((await w.grex("sync")).code).toBe(0);
            expect(existsSync(join(w.home, "two"))).toBe(true);
          },
        },
        {
          state: "dirty",
          make: async () => writeFileSync(join(dir, "scratch.txt"), "x\n"),
          heal: async () => rmSync(join(dir, "scratch.txt")),
        },
      ];
      for (const k of kinds) {
        await k.make();
        const st = await status(w);
        expect(st.rows.get("dirs")?.drift, k.state).toBe(k.state);
        expect(st.code, k.state).toBe(7);
        await k.heal();
        const healed = await status(w);
        expect(healed.rows.get("dirs")?.drift, k.state).toBe("clean");
        expect(healed.code, k.state).toBe(0);
      }
    });

    test("an install killed mid-action (SIGKILL) is not-installed, and the next sync installs it in full", async () => {
      const a = await workspace();
      const crashYaml = `${packYaml("crashy", "declarative", [])}actions:
  - mkdir: { path: $HOME/.crashy }
  - exec: { cmd: [sh, -c, 'test -z "$\${GREX_TEST_CRASH:-}" || kill -9 $$PPID'] }
  - symlink: { src: files/c.conf, dst: $HOME/.crashy/c.conf }
`;
      const up = makeUpstream(hostFor(transport, a), "crashy", { ".grex/pack.yaml": crashYaml, "files/c.conf": "c\n" });
      expect((await a.grex("add", up.url)).code).toBe(0);
      // Machine B, from the committed files; its first sync dies inside the exec action.
      const b = new TestWorkspace("grex-conv-crash-");
      open.push(b);
      for (const f of ["grex.jsonl", "grex.lock.jsonl"]) copyFileSync(join(a.ws, f), join(b.ws, f));
      const proc = Bun.spawn([process.execPath, GREX_MAIN, "sync"], {
        cwd: b.ws,
        env: { ...b.env, GREX_TEST_CRASH: "1" },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      await proc.exited;
      expect(proc.signalCode).toBe("SIGKILL");
      expect(existsSync(join(b.home, ".crashy"))).toBe(true);
      expect(existsSync(join(b.home, ".crashy/c.conf"))).toBe(false);

      const st = await status(b);
      expect(st.code).toBe(7);
      expect(st.rows.get("crashy")).toMatchObject({ drift: "not-installed", install_error: expect.stringMatching(/interrupted/) });
      const sync = await b.grex("sync", "--json");
      expect(sync.code).toBe(0);
      expect(lstatSync(join(b.home, ".crashy/c.conf")).isSymbolicLink()).toBe(true);
      expect((await status(b)).code).toBe(0);
    });

    test("3. a child dropped upstream is torn down, deleted and forgotten; one with local work is kept with a warning", async () => {
      const w = await workspace();
      const host = hostFor(transport, w);
      const tree = buildPackTree(host, {
        name: "parent",
        children: [{ name: "c1" }, { name: "c2", type: "declarative" }, { name: "c3" }],
      });
      const repo = (n: string) => tree.repos.get(n) ?? (null as never);
      // c2 links into HOME and has a child of its own.
      const grand = makeUpstream(host, "g", { "README.md": "g\n" });
      repo("c2").commit(
        {
          ".grex/pack.yaml": `${packYaml("c2", "declarative", [grand.url])}actions:\n  - symlink: { src: files/c2.conf, dst: $HOME/c2.conf }\n`,
          "files/c2.conf": "c2\n",
        },
        "c2: setup",
      );
      expect((await w.grex("add", tree.root.url)).code).toBe(0);
      expect(lstatSync(join(w.home, "c2.conf")).isSymbolicLink()).toBe(true);
      expect(existsSync(join(w.ws, "parent/c2/g/README.md"))).toBe(true);
      writeFileSync(join(w.ws, "parent/c3/notes.txt"), "my work\n"); // local work in c3

      repo("parent").commit({ ".grex/pack.yaml": packYaml("parent", "meta", [repo("c1").url]) }, "parent: drop c2 and c3");
      const sync = await w.grex("sync", "--json");
      expect(sync.code).toBe(0);
      const packs = new Map((sync.json.packs as Array<{ id: string; result: string; message: string }>).map((p) => [p.id, p]));
      expect(packs.get("parent/c2")?.message).toMatch(/removed upstream/);
      expect(existsSync(join(w.ws, "parent/c2"))).toBe(false);
      expect(existsSync(join(w.home, "c2.conf"))).toBe(false);
      // Kept: it holds local work.
      expect(readFileSync(join(w.ws, "parent/c3/notes.txt"), "utf8")).toBe("my work\n");
      expect((sync.json.warnings as string[]).some((m) => m.includes("parent/c3") && m.includes("local work"))).toBe(true);
      // Forgotten: lock entries, exclude lines, ls, status.
      const lock = readFileSync(join(w.ws, "grex.lock.jsonl"), "utf8");
      expect(lock).not.toContain("parent/c2");
      expect(lock).not.toContain("parent/c3");
      const exclude = readFileSync(join(w.ws, "parent/.git/info/exclude"), "utf8");
      expect(exclude).not.toContain("/c2/");
      expect(exclude).toContain("/c3/"); // kept, so still out of the parent's way
      const ls = await w.grex("ls", "--tree", "--json");
      expect((ls.json.packs as Array<{ id: string }>).map((p) => p.id)).toEqual(["parent", "parent/c1"]);
      const st = await status(w);
      expect([...st.rows.keys()]).toEqual(["parent", "parent/c1"]);
      expect(st.rows.get("parent")?.drift).toBe("clean");
      expect(st.code).toBe(0);
    });

    test("4. status shows branch and behind/ahead/diverged after --fetch; sync heals behind", async () => {
      const w = await workspace();
      const up = makeUpstream(hostFor(transport, w), "tool", { "a.txt": "1\n" });
      expect((await w.grex("add", up.url)).code).toBe(0);
      const dir = join(w.ws, "tool");
      expect((await status(w)).rows.get("tool")).toMatchObject({ drift: "clean", branch: "main", ahead: 0, behind: 0 });

      up.commit({ "a.txt": "2\n" }, "upstream moves");
      const refsBefore = await gitAsync(dir, "for-each-ref");
      const dry = await status(w, "--fetch", "--dry-run");
      expect(dry.rows.get("tool")).toMatchObject({ drift: "clean", behind: 0 }); // a dry run fetches nothing
      expect(await gitAsync(dir, "for-each-ref")).toBe(refsBefore);
      const fetched = await status(w, "--fetch");
      expect(fetched.code).toBe(7);
      expect(fetched.rows.get("tool")).toMatchObject({ drift: "behind", branch: "main", ahead: 0, behind: 1 });
      expect(headSha(dir)).not.toBe(up.head()); // fetch never moves the work tree
      const viaMcp = await mcpStatus(w, { fetch: true });
      expect(viaMcp.text).toBe((await w.grex("status", "--json")).stdout.trim());
      expect((viaMcp.structured as { packs: Row[] }).packs[0]).toMatchObject({ drift: "behind", behind: 1 });

      expect((await w.grex("sync")).code).toBe(0);
      expect(headSha(dir)).toBe(up.head());
      expect((await status(w, "--fetch")).code).toBe(0);

      // A local commit: ahead; plus a new upstream one: diverged.
      await gitAsync(dir, "-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-q", "--allow-empty", "-m", "mine");
      const ahead = await status(w);
      expect(ahead.rows.get("tool")).toMatchObject({ drift: "ahead", ahead: 1, behind: 0 });
      expect(ahead.code).toBe(7);
      up.commit({ "b.txt": "b\n" }, "upstream again");
      expect((await status(w, "--fetch")).rows.get("tool")).toMatchObject({ drift: "diverged", ahead: 1, behind: 1 });
    });

    test("5. a pack switched to another branch is on a topic branch: not drift; sync advances its tracked branch beside it, --force or a re-pin moves it", async () => {
      const w = await workspace();
      const up = makeUpstream(hostFor(transport, w), "tool", { "a.txt": "1\n" });
      git(up.work, "branch", "dev");
      up.publish();
      expect((await w.grex("add", up.url)).code).toBe(0);
      const dir = join(w.ws, "tool");
      await gitAsync(dir, "switch", "-q", "-c", "feature");
      const topicHead = headSha(dir);
      up.commit({ "a.txt": "2\n" }, "upstream moves");

      const st = await status(w);
      expect(st.code).toBe(0);
      expect(st.rows.get("tool")).toMatchObject({ drift: "topic", branch: "feature", off_branch: null, topic: { branch: "feature", base: "main", upstream: null, pushed: false } });
      const sync = await w.grex("sync", "--json");
      expect(sync.code).toBe(0);
      const row = (sync.json.packs as Array<{ id: string; result: string; message: string }>)[0];
      expect(row).toMatchObject({ id: "tool", result: "ok" });
      expect(row?.message).toBe("on feature; main moved 1 commit; feature is 1 behind main");
      expect(currentBranch(dir)).toBe("feature");
      expect(headSha(dir)).toBe(topicHead);
      expect(git(dir, "rev-parse", "refs/heads/main")).toBe(up.head());
      expect((await status(w)).rows.get("tool")?.topic).toMatchObject({ ahead: 0, behind: 1 });

      // --force moves it back to the pin.
      expect((await w.grex("sync", "--force")).code).toBe(0);
      expect(currentBranch(dir)).toBe("main");
      expect(headSha(dir)).toBe(up.head());
      expect((await status(w)).code).toBe(0);

      // Re-pinned with update --ref: the new branch is the pin, status clean.
      await gitAsync(dir, "switch", "-q", "dev");
      expect((await status(w)).rows.get("tool")?.drift).toBe("topic");
      expect((await w.grex("update", "tool", "--ref", "dev")).code).toBe(0);
      expect(currentBranch(dir)).toBe("dev");
      const repinned = await status(w);
      expect(repinned.rows.get("tool")).toMatchObject({ drift: "clean", branch: "dev" });
      expect((await w.grex("sync")).code).toBe(0);
      expect(currentBranch(dir)).toBe("dev");
    });
  });
}
