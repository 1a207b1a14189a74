// What a failing server says reaches the user: a server that stops mid-pack
// is quoted as git quotes it ("remote: fatal: …"), and an object missing
// from what a server sent is named by its role, with the pack_op exit code.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EXIT_CODES, GrexError } from "../../src/core/base/errors.ts";
import { backendFor } from "../../src/core/git/backend.ts";
import { PktStream, sidebandReader } from "../../src/core/git/transport/smart-http.ts";
import { git, gitEnv, makeRepo, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";

const never = () => new AbortController().signal;
let server: GitHttpServer;
let root: { path: string; cleanup: () => void };

beforeAll(async () => {
  root = tempDir("grex-server-messages-");
  mkdirSync(join(root.path, "served"));
  server = await startGitHttpServer(join(root.path, "served"));
});
afterAll(async () => {
  await server.stop();
  root.cleanup();
});

async function failure(p: Promise<unknown>): Promise<GrexError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof GrexError) return err;
    throw err;
  }
  throw new Error("expected a failure");
}

test("a server whose repository is corrupt: its own fatal line is passed through, exit 4", async () => {
  const work = join(root.path, "work");
  makeRepo(work, { "README.md": "hello\n", "big.txt": "payload\n".repeat(1000) });
  const served = join(root.path, "served", "corrupt.git");
  git(root.path, "clone", "--quiet", "--bare", "--no-local", work, served);
  // Loose objects, then one blob overwritten with garbage: upload-pack's pack-objects dies on it.
  const packs = readdirSync(join(served, "objects", "pack")).filter((f) => f.endsWith(".pack"));
  for (const p of packs) {
    const bytes = await Bun.file(join(served, "objects", "pack", p)).bytes();
    rmSync(join(served, "objects", "pack", p));
    rmSync(join(served, "objects", "pack", p.replace(/\.pack$/, ".idx")));
    expect(Bun.spawnSync(["git", "unpack-objects", "-q"], { cwd: served, stdin: bytes }).exitCode).toBe(0);
  }
  const blob = git(work, "rev-parse", "HEAD:big.txt");
  const path = join(served, "objects", blob.slice(0, 2), blob.slice(2));
  rmSync(path, { force: true });
  writeFileSync(path, "not a zlib stream at all");
  // Async: the server runs in this process.
  const cli = Bun.spawn(["git", "clone", "--quiet", `${server.url}/corrupt.git`, join(root.path, "by-git")], { env: gitEnv(), stdout: "ignore", stderr: "pipe" });
  const gitSays = await new Response(cli.stderr).text();
  await cli.exited;
  const dest = join(root.path, "by-grex");
  const err = await failure(backendFor(`${server.url}/corrupt.git`).clone(`${server.url}/corrupt.git`, dest, { ref: null, signal: never() }));
  const remoteLine = /remote: (fatal: .*)/.exec(gitSays)?.[1]?.trim() ?? "no remote line from git";
  expect(gitSays).toContain("remote: fatal:");
  expect(err.message).toContain(`remote: ${remoteLine}`);
  expect(err.exitCode).toBe(EXIT_CODES.pack_op);
  expect(existsSync(dest)).toBe(false);
});

/** The pack a side-band reply carries, read through grex's streaming reader. */
async function unwrapSideband(reply: Buffer, url: string): Promise<Buffer> {
  let sent = false;
  const body = { read: async () => (sent ? null : ((sent = true), reply)), keepalive: () => {}, bytes: reply.length, close: async () => {} };
  const read = sidebandReader(new PktStream(body), body, url);
  const out: Uint8Array[] = [];
  for (let chunk = await read(); chunk !== null; chunk = await read()) out.push(chunk);
  return Buffer.concat(out);
}

test("side-band framing: band 1 is the pack, band 3 is the server's fatal error, band 2 errors count when the reply is cut", async () => {
  const pkt = (band: number, data: string | Buffer) => {
    const body = Buffer.concat([Buffer.from([band]), Buffer.from(data)]);
    return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body]);
  };
  const ok = Buffer.concat([pkt(1, "PACK"), pkt(2, "counting objects\n"), pkt(1, "rest"), Buffer.from("0000")]);
  expect((await unwrapSideband(ok, "http://h/r")).toString()).toBe("PACKrest");
  const fatal = Buffer.concat([pkt(1, "PACK"), pkt(3, "fatal: out of memory\n")]);
  const fatalErr = await unwrapSideband(fatal, "http://u:secret@h/r").catch((e: Error) => e);
  expect(String(fatalErr)).toContain("remote: fatal: out of memory");
  expect(String(fatalErr)).not.toContain("secret");
  const cut = Buffer.concat([pkt(1, "PACK"), pkt(2, "error: pack-objects died of signal 9\n"), pkt(1, "par")]);
  expect(String(await unwrapSideband(cut, "http://h/r").catch((e: Error) => e))).toContain("remote: error: pack-objects died of signal 9");
  // Cut without a word from the server: the stream itself is named as cut off.
  expect(String(await unwrapSideband(Buffer.concat([pkt(1, "PACK"), pkt(1, "par")]), "http://h/r").catch((e: Error) => e))).toContain("cut off");
});

/** A server advertising `main` at `tip` and answering every upload-pack request with `pack` (no side-band). */
async function servePack(tip: string, pack: Buffer, body: (url: string) => Promise<void>): Promise<void> {
  const pkt = (s: string) => `${(Buffer.byteLength(s) + 4).toString(16).padStart(4, "0")}${s}`;
  const ad = `${pkt("# service=git-upload-pack\n")}0000${pkt(`${tip} HEAD\0ofs-delta symref=HEAD:refs/heads/main\n`)}${pkt(`${tip} refs/heads/main\n`)}0000`;
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      req.method === "GET"
        ? new Response(ad, { headers: { "content-type": "application/x-git-upload-pack-advertisement" } })
        : new Response(Buffer.concat([Buffer.from("0008NAK\n"), pack]), { headers: { "content-type": "application/x-git-upload-pack-result" } }),
  });
  try {
    await body(`http://127.0.0.1:${s.port}/r.git`);
  } finally {
    await s.stop(true);
  }
}

/** `git pack-objects` of exactly `oids` from `work`. */
const packFrom = (work: string, oids: string[]) => Buffer.from(Bun.spawnSync(["git", "pack-objects", "--stdout"], { cwd: work, env: gitEnv(), stdin: Buffer.from(`${oids.join("\n")}\n`) }).stdout);

/** The ids `git rev-list --objects` lists for `revs`. */
const objectsOf = (work: string, ...revs: string[]) => git(work, "rev-list", "--objects", ...revs).split("\n").map((l) => l.split(" ")[0] as string);

/** A repository of two commits: README.md, then new.txt. */
function twoCommits(name: string): { work: string; first: string; second: string } {
  const work = join(root.path, name);
  makeRepo(work, { "README.md": "hello\n" });
  const first = git(work, "rev-parse", "HEAD");
  writeFileSync(join(work, "new.txt"), "new\n");
  git(work, "add", "new.txt");
  git(work, "commit", "-q", "-m", "second");
  return { work, first, second: git(work, "rev-parse", "HEAD") };
}

test("a server that leaves out an object: the message names the object's role, exit 4", async () => {
  const work = join(root.path, "partial");
  makeRepo(work, { "README.md": "hello\n", "dir/file.txt": "f\n" });
  const tip = git(work, "rev-parse", "HEAD");
  const tree = git(work, "rev-parse", "HEAD^{tree}");
  const dirTree = git(work, "rev-parse", "HEAD:dir");
  const readme = git(work, "rev-parse", "HEAD:README.md");
  const file = git(work, "rev-parse", "HEAD:dir/file.txt");
  const cases: Array<[string[], string]> = [
    [[tip], `the tree of commit ${tip.slice(0, 12)} is missing from`],
    [[tip, tree, readme, file], `the tree of directory 'dir' in commit ${tip.slice(0, 12)} is missing from`],
    [[tip, tree, dirTree, readme], `the file 'dir/file.txt' of commit ${tip.slice(0, 12)} is missing from`],
  ];
  for (const [oids, said] of cases) {
    await servePack(tip, packFrom(work, oids), async (url) => {
      const dest = join(root.path, `partial-${oids.length}`);
      const err = await failure(backendFor(url).clone(url, dest, { ref: null, signal: never() }));
      expect(err.message).toStartWith(said);
      expect(err.message).toContain(url);
      expect(err.exitCode).toBe(EXIT_CODES.pack_op);
      expect(existsSync(dest)).toBe(false);
    });
  }
});

test("a first fetch whose history stops short (a parent commit left out): named, exit 4, nothing left", async () => {
  const { work, first, second } = twoCommits("short-history");
  await servePack(second, packFrom(work, [...objectsOf(work, second, `^${first}`), git(work, "rev-parse", "HEAD~1^{tree}")]), async (url) => {
    const dest = join(root.path, "short-history-clone");
    const err = await failure(backendFor(url).clone(url, dest, { ref: null, signal: never() }));
    expect(err.message).toStartWith(`commit ${first.slice(0, 12)} is missing from ${url}`);
    expect(err.exitCode).toBe(EXIT_CODES.pack_op);
    expect(existsSync(dest)).toBe(false);
  });
  // The whole history is there: the same clone succeeds (the check is not refusing everything).
  await servePack(second, packFrom(work, objectsOf(work, second)), async (url) => {
    const dest = join(root.path, "short-history-whole");
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
    expect(git(dest, "rev-parse", "HEAD")).toBe(second);
  });
});

test("an update whose new file never arrived: the file and commit are named, exit 4, nothing moved", async () => {
  const { work, first, second } = twoCommits("partial-update");
  const all = objectsOf(work, first);
  const dest = join(root.path, "partial-update-clone");
  await servePack(first, packFrom(work, all), async (url) => {
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
  });
  // The second commit and its tree, but not the new file's blob.
  await servePack(second, packFrom(work, [second, git(work, "rev-parse", "HEAD^{tree}")]), async (url) => {
    git(dest, "remote", "set-url", "origin", url);
    const err = await failure(backendFor(url).update(dest, url, { ref: null, signal: never() }));
    expect(err.message).toStartWith(`the file 'new.txt' of commit ${second.slice(0, 12)} is missing from ${url}`);
    expect(err.exitCode).toBe(EXIT_CODES.pack_op);
  });
  expect(git(dest, "rev-parse", "HEAD")).toBe(first);
});
