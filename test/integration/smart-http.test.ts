// grex's own smart-HTTP client against the real `git http-backend` and
// against servers that misbehave: exactly one ref advertisement and one
// upload-pack request per fetch, connections reused across packs, only the
// new objects fetched, credentials sent but never shown, and one clear
// pack_op sentence for every way a server can fail.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/base/errors.ts";
import { backendFor } from "../../src/core/git/backend.ts";
import { listRemoteRefs } from "../../src/core/git/ls-remote.ts";
import { bareCopy, commit, git, makeRepo, pushAll, tempDir } from "../helpers/git-fixtures.ts";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";

const never = () => new AbortController().signal;

let server: GitHttpServer;
let root: { path: string; cleanup: () => void };

beforeAll(async () => {
  root = tempDir("grex-smart-http-");
  mkdirSync(join(root.path, "served"));
  server = await startGitHttpServer(join(root.path, "served"));
});

afterAll(async () => {
  await server.stop();
  root.cleanup();
});

let n = 0;
let work: string;
let url: string;
let served: string;
let dest: string;

beforeEach(() => {
  n++;
  work = join(root.path, `work-${n}`);
  makeRepo(work, { "README.md": "hello\n", "src/a.txt": "a\n" });
  for (let i = 0; i < 5; i++) commit(work, { [`f${i}.txt`]: `${i}\n` }, `c${i}`);
  served = join(root.path, "served", `repo-${n}.git`);
  bareCopy(work, served);
  url = `${server.url}/repo-${n}.git`;
  dest = join(root.path, `dest-${n}`);
});

/** A throwaway HTTP server answering every request with `respond`. */
async function withServer(respond: (req: Request) => Response, body: (base: string, seen: Array<{ url: string; auth: string | null }>) => Promise<void>): Promise<void> {
  const seen: Array<{ url: string; auth: string | null }> = [];
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.push({ url: req.url, auth: req.headers.get("authorization") });
      return respond(req);
    },
  });
  try {
    await body(`http://127.0.0.1:${s.port}`, seen);
  } finally {
    await s.stop(true);
  }
}

async function packOpMessage(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    expect((err as GrexError).kind).toBe("pack_op");
    const msg = (err as Error).message;
    expect(msg.split("\n")).toHaveLength(1);
    return msg;
  }
  throw new Error("expected a failure");
}

describe("smart HTTP client", () => {
  test("a clone is one ref advertisement and one upload-pack request, and git accepts the result", async () => {
    const before = server.requests;
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
    expect(server.requests - before).toBe(2);
    git(dest, "fsck", "--full", "--no-dangling");
    expect(git(dest, "status", "--porcelain")).toBe("");
    expect(git(dest, "rev-parse", "HEAD")).toBe(git(work, "rev-parse", "HEAD"));
  });

  test("one new commit fetches only the new objects, in two requests", async () => {
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
    const packs = readdirSync(join(dest, ".git", "objects", "pack")).sort();
    const sha = commit(work, { "src/a.txt": "a2\n", "new.txt": "new\n" }, "one more");
    pushAll(work, served);
    const before = server.requests;
    const r = await backendFor(url).update(dest, url, { ref: null, signal: never() });
    expect(r.after.sha).toBe(sha);
    expect(server.requests - before).toBe(2);
    // Commit, two trees and two blobs arrive as loose objects; the clone's pack is untouched.
    expect(readdirSync(join(dest, ".git", "objects", "pack")).sort()).toEqual(packs);
    expect(git(dest, "count-objects")).toMatch(/^5 objects,/);
    git(dest, "fsck", "--full", "--no-dangling");
  });

  test("several packs from one host share a connection", async () => {
    const before = server.connections;
    for (let i = 0; i < 4; i++) await listRemoteRefs(url, never());
    await backendFor(url).clone(url, dest, { ref: null, signal: never() });
    expect(server.connections - before).toBeLessThanOrEqual(1);
  });

  test("a redirected repository is fetched from where it answered, as git does", async () => {
    // /old.git/… answers with a redirect to the real repository; the pack request must follow.
    await withServer(
      (req) => {
        const u = new URL(req.url);
        return Response.redirect(`${url}${u.pathname.replace(/^\/old\.git/, "")}${u.search}`, 301);
      },
      async (base, seen) => {
        const moved = `${base}/old.git`;
        const before = server.requests;
        const h = await backendFor(moved).clone(moved, dest, { ref: null, signal: never() });
        expect(h.sha).toBe(git(work, "rev-parse", "HEAD"));
        expect(seen.map((r) => new URL(r.url).pathname)).toEqual(["/old.git/info/refs"]);
        expect(server.requests - before).toBe(2);
        git(dest, "fsck", "--full", "--no-dangling");
      },
    );
  });

  test("credentials in the URL are sent as Basic auth and never shown", async () => {
    await withServer(
      () => new Response("no", { status: 403 }),
      async (base, seen) => {
        const msg = await packOpMessage(listRemoteRefs(`${base.replace("http://", "http://alice:s3cret@")}/x.git`, never()));
        expect(seen[0]?.auth).toBe(`Basic ${Buffer.from("alice:s3cret").toString("base64")}`);
        expect(new URL(seen[0]?.url ?? "").username).toBe("");
        expect(msg).not.toContain("s3cret");
        expect(msg).toMatch(/answered HTTP 403; check your access to it\.$/);
      },
    );
  });

  test("a 401 and a 404 are one sentence each", async () => {
    await withServer(
      (req) => new Response("", { status: req.url.includes("private") ? 401 : 404 }),
      async (base) => {
        expect(await packOpMessage(listRemoteRefs(`${base}/private.git`, never()))).toBe(`${base}/private.git answered HTTP 401; check your access to it.`);
        expect(await packOpMessage(listRemoteRefs(`${base}/nope.git`, never()))).toBe(`${base}/nope.git answered HTTP 404; check the URL.`);
      },
    );
  });

  test("a web page instead of a git server is named as such", async () => {
    await withServer(
      () => new Response("<html>hi</html>", { headers: { "content-type": "text/html" } }),
      async (base) => {
        const msg = await packOpMessage(backendFor(`${base}/r.git`).clone(`${base}/r.git`, dest, { ref: null, signal: never() }));
        expect(msg).toBe(`${base}/r.git did not answer as a git server (content type text/html); check the URL.`);
      },
    );
  });

  test("a malformed advertisement and a server-side ERR are clear errors", async () => {
    const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, "0")}${s}`;
    const ad = (refs: string) => new Response(`${pkt("# service=git-upload-pack\n")}0000${refs}`, { headers: { "content-type": "application/x-git-upload-pack-advertisement" } });
    await withServer(
      (req) => (req.url.includes("cut") ? ad(pkt(`${"a".repeat(40)} refs/heads/main\n`)) : ad(`${pkt("ERR access denied by policy\n")}0000`)),
      async (base) => {
        expect(await packOpMessage(listRemoteRefs(`${base}/cut.git`, never()))).toBe(`${base}/cut.git did not answer as a git server (its ref advertisement is cut off); check the URL.`);
        expect(await packOpMessage(listRemoteRefs(`${base}/err.git`, never()))).toBe(`${base}/err.git refused the fetch (access denied by policy); check the URL and your access.`);
      },
    );
  });

  test("a corrupt pack from the server leaves no clone behind", async () => {
    // A real advertisement, then an upload-pack reply whose pack is damaged.
    const real = await fetch(`${url}/info/refs?service=git-upload-pack`).then((r) => r.arrayBuffer());
    await withServer(
      (req) =>
        req.method === "GET"
          ? new Response(real, { headers: { "content-type": "application/x-git-upload-pack-advertisement" } })
          : new Response(Buffer.concat([Buffer.from("0008NAK\nPACK"), Buffer.alloc(40, 7)]), { headers: { "content-type": "application/x-git-upload-pack-result" } }),
      async (base) => {
        const msg = await packOpMessage(backendFor(`${base}/r.git`).clone(`${base}/r.git`, dest, { ref: null, signal: never() }));
        expect(msg).toMatch(/^git transfer from .* failed \(the received pack is corrupt: .*\); check the URL and that the repository is reachable\.$/);
        expect(readdirSync(root.path).filter((f) => f.includes(`dest-${n}`))).toEqual([]);
      },
    );
  });
});
