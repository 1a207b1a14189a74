// `grex status` beside a running `grex serve` (src/mcp/resident.ts,
// src/core/git/worktree/resident-client.ts): real processes, a real
// workspace. The CLI asks the server over `.grex/.state/serve.sock` (mode
// 0600) and prints exactly what it prints alone (GREX_NO_SERVE=1), before and
// after changes made behind the server's back — a same-size edit with the
// mtime put back, a rename, a `git checkout` — and the server's own MCP
// `status` tool says the same. A server that does not answer (stopped with
// SIGSTOP), another git environment, or GREX_NO_SERVE=1: the CLI scans by
// itself. The socket goes when the server does; doctor names a pack the
// server cannot watch.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let server: ReturnType<typeof Bun.spawn> & { stdin: import("bun").FileSink; stdout: ReadableStream<Uint8Array> };
let lines: AsyncGenerator<string>;
const socket = () => join(t.ws, ".grex", ".state", "serve.sock");

async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      yield buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
    }
  }
}

let rpcId = 0;
async function rpc(method: string, params: object): Promise<Record<string, unknown>> {
  const id = ++rpcId;
  server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
  server.stdin.flush();
  for (;;) {
    const next = await lines.next();
    if (next.done) throw new Error("the server closed stdout");
    const msg = JSON.parse(next.value) as { id?: number; result?: Record<string, unknown> };
    if (msg.id === id) return msg.result ?? {};
  }
}

async function cli(argv: string[], extra: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), ...argv], {
    cwd: t.ws,
    env: { ...t.env, ...extra },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/**
 * `grex status --json` with the server and alone: the same bytes every time;
 * whether the server answered. On a loaded machine its hello can miss the
 * 50 ms deadline (the CLI then scans by itself, rightly), so up to 5 tries.
 */
async function bothWays(): Promise<{ doc: { packs: Array<{ id: string; dirty: boolean; drift: string }> }; served: boolean }> {
  const alone = await cli(["status", "--json"], { GREX_NO_SERVE: "1" });
  let served = false;
  for (let i = 0; i < 5 && !served; i++) {
    const withServe = await cli(["status", "--json", "-v"]);
    expect(withServe.stdout).toBe(alone.stdout);
    expect(withServe.code).toBe(alone.code);
    served = withServe.stderr.includes("grex serve answered for 3 pack(s); 0 scanned here");
  }
  return { doc: JSON.parse(alone.stdout), served };
}

beforeAll(async () => {
  t = new TestWorkspace("grex-serve-status-");
  expect((await t.grex("init")).code).toBe(0);
  for (const name of ["alpha", "beta", "gamma"]) {
    const repo = t.repo(name, { "README.md": `${name}\n`, "src/one.txt": "one\n", "src/two.txt": "two\n" });
    git(repo, "branch", "side");
    expect((await t.grex("add", repo, name)).code).toBe(0);
  }
  server = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), "serve"], {
    cwd: t.ws,
    env: t.env,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  }) as unknown as typeof server;
  lines = readLines(server.stdout);
  await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } });
  server.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  for (let i = 0; i < 100 && !existsSync(socket()); i++) await Bun.sleep(50);
}, 60_000);

afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  t?.cleanup();
});

describe("grex status beside grex serve", () => {
  test("the socket is in .grex/.state, a socket only its user may use", () => {
    const st = lstatSync(socket());
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.uid).toBe(process.getuid?.() ?? st.uid);
  });

  test("the CLI asks the server and prints what it prints alone; MCP status says the same", async () => {
    const { doc, served } = await bothWays();
    expect(served).toBe(true);
    expect(doc.packs.map((p) => p.drift)).toEqual(["clean", "clean", "clean"]);
    const again = await bothWays(); // now from what the server kept
    expect(again.served).toBe(true);
    const viaMcp = await rpc("tools/call", { name: "status", arguments: {} });
    expect(viaMcp.structuredContent).toEqual(doc);
  }, 60_000);

  test("changes behind the server's back show: a same-size edit with the mtime put back, a rename, a git checkout", async () => {
    await bothWays();
    const file = join(t.ws, "alpha", "src", "one.txt");
    const st = statSync(file);
    writeFileSync(file, readFileSync(file, "utf8").replace("one", "ONE"));
    utimesSync(file, st.atime, st.mtime);
    renameSync(join(t.ws, "beta", "src", "two.txt"), join(t.ws, "beta", "src", "three.txt"));
    git(join(t.ws, "gamma"), "checkout", "-q", "side");
    const { doc, served } = await bothWays();
    expect(served).toBe(true);
    expect(doc.packs.map((p) => [p.id, p.dirty])).toEqual([
      ["alpha", true],
      ["beta", true],
      ["gamma", false],
    ]);
    expect(doc.packs[2]?.drift).toBe("topic"); // a branch the user switched to: their work, not drift
    const viaMcp = await rpc("tools/call", { name: "status", arguments: {} });
    expect(viaMcp.structuredContent).toEqual(doc);
    // Put back: clean again, both ways.
    git(join(t.ws, "alpha"), "checkout", "-q", "--", ".");
    renameSync(join(t.ws, "beta", "src", "three.txt"), join(t.ws, "beta", "src", "two.txt"));
    git(join(t.ws, "gamma"), "checkout", "-q", "main");
    const back = await bothWays();
    expect(back.doc.packs.map((p) => p.drift)).toEqual(["clean", "clean", "clean"]);
  }, 60_000);

  test("GREX_NO_SERVE=1, another git environment, or a server that does not answer: the CLI scans by itself", async () => {
    const off = await cli(["status", "--json", "-v"], { GREX_NO_SERVE: "1" });
    expect(off.stderr).not.toContain("grex serve answered");
    const otherEnv = await cli(["status", "--json", "-v"], { XDG_CONFIG_HOME: join(t.root, "elsewhere") });
    expect(otherEnv.code).toBe(0);
    expect(otherEnv.stderr).not.toContain("grex serve answered");
    server.kill("SIGSTOP");
    try {
      const stopped = await cli(["status", "--json", "-v"]);
      expect(stopped.code).toBe(0);
      expect(stopped.stderr).not.toContain("grex serve answered");
      expect(JSON.parse(stopped.stdout).packs).toHaveLength(3);
    } finally {
      server.kill("SIGCONT");
    }
  }, 60_000);

  test("doctor over MCP names a pack the server cannot watch", async () => {
    const dir = join(t.ws, "beta");
    const elsewhere = join(t.root, "beta-gitdir");
    renameSync(join(dir, ".git"), elsewhere);
    writeFileSync(join(dir, ".git"), `gitdir: ${elsewhere}\n`);
    try {
      await rpc("tools/call", { name: "status", arguments: {} });
      const r = (await rpc("tools/call", { name: "doctor", arguments: {} })) as { structuredContent?: { findings: Array<{ check: string; pack: string | null; detail: string }> } };
      const notes = r.structuredContent?.findings.filter((f) => f.check === "serve-watch") ?? [];
      expect(notes.find((f) => f.pack === "beta")?.detail).toContain("not a .git directory");
      const viaCli = await cli(["doctor", "--json"]);
      expect(viaCli.stdout).toContain("grex serve scans this pack on every status");
    } finally {
      const { rmSync } = await import("node:fs");
      rmSync(join(dir, ".git"));
      renameSync(elsewhere, join(dir, ".git"));
    }
  }, 60_000);

  test("the socket goes when the server does", async () => {
    server.kill("SIGTERM");
    await server.exited;
    expect(existsSync(socket())).toBe(false);
    const alone = await cli(["status", "--json", "-v"]);
    expect(alone.code).toBe(0);
    expect(alone.stderr).not.toContain("grex serve answered");
  }, 60_000);

  test("a server that says hello and then never answers: the CLI gives up on it and scans by itself", async () => {
    const alone = await cli(["status", "--json"], { GREX_NO_SERVE: "1" });
    const hung = Bun.listen({
      unix: socket(),
      socket: {
        data(s, chunk) {
          if (chunk.toString().includes('"hello"')) s.write('{"hello":true}\n');
        },
      },
    });
    try {
      const r = await cli(["status", "--json", "-v"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(alone.stdout);
      expect(r.stderr).not.toContain("grex serve answered");
    } finally {
      hung.stop(true);
    }
  }, 60_000);

  test("grex serve --http keeps status too: the CLI asks it, and the socket goes with it", async () => {
    const http = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), "serve", "--http", "127.0.0.1:0"], {
      cwd: t.ws,
      env: t.env,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    });
    try {
      for (let i = 0; i < 200 && !existsSync(socket()); i++) await Bun.sleep(50);
      expect(lstatSync(socket()).mode & 0o777).toBe(0o600);
      const { served } = await bothWays();
      expect(served).toBe(true);
    } finally {
      http.kill("SIGTERM");
      await http.exited;
    }
    expect(existsSync(socket())).toBe(false);
  }, 60_000);

  test("a server killed with SIGKILL leaves its socket: the CLI scans by itself, and the next server takes the path over", async () => {
    const start = () =>
      Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "src", "cli", "main.ts"), "serve"], { cwd: t.ws, env: t.env, stdin: "pipe", stdout: "ignore", stderr: "pipe" });
    // Up when a connection is accepted (an inode number can be reused, so the file's own says nothing).
    const live = () => Bun.connect({ unix: socket(), socket: { data() {} } }).then((s) => (s.end(), true), () => false);
    const waitLive = async () => {
      for (let i = 0; i < 200 && !(await live()); i++) await Bun.sleep(50);
      return live();
    };
    server.kill("SIGTERM"); // the suite's server, if still up, would hold the path
    await server.exited;
    const first = start();
    expect(await waitLive()).toBe(true);
    first.kill("SIGKILL");
    await first.exited;
    expect(existsSync(socket())).toBe(true);
    const alone = await cli(["status", "--json", "-v"]);
    expect(alone.code).toBe(0);
    expect(alone.stderr).not.toContain("grex serve answered");
    const second = start();
    try {
      expect(await live()).toBe(false);
      expect(await waitLive()).toBe(true);
      expect((await bothWays()).served).toBe(true);
    } finally {
      second.kill("SIGTERM");
      await second.exited;
    }
  }, 60_000);
});
