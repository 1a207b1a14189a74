// `grex add` against smart-HTTP servers that misbehave on purpose: every
// attack ends with one sentence naming the limit that fired (or what is wrong
// with the pack), exit 4, and nothing left behind — no clone, no temp pack, no
// temp file. Limits are set low through their environment variables so each
// case takes a second or two; memory is measured by bench/memory.ts, not here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { type HostileMode, type HostileServer, startHostileServer } from "../helpers/hostile-http-server.ts";
import { GREX_MAIN, TestWorkspace, userSnapshot } from "../helpers/workspace.ts";

let server: HostileServer;
let t: TestWorkspace;

beforeAll(async () => {
  server = await startHostileServer({ slowMs: 250, gzipRefsMiB: 16, bombMiB: 4 });
  t = new TestWorkspace("grex-hostile-");
  expect((await t.grex("init")).code).toBe(0);
  // A first add makes the workspace's .grex/ directory; the cases compare against what follows it.
  expect((await addFrom("bad-checksum")).code).toBe(4);
});

afterAll(async () => {
  await server.stop();
  t.cleanup();
});

/** Small limits, so that every attack is stopped within a second or two. */
const SMALL: Record<string, string> = {
  GREX_HTTP_CONNECT_TIMEOUT: "1",
  GREX_HTTP_LOW_SPEED_LIMIT: "1024",
  GREX_HTTP_LOW_SPEED_TIME: "1",
  GREX_MAX_REFS_BYTES: "1m",
  GREX_MAX_PACK_BYTES: "1m",
  GREX_MAX_OBJECT_BYTES: "1m",
  GREX_MAX_DELTA_DEPTH: "100",
};

async function addFrom(mode: HostileMode, env: Record<string, string> = {}, flags: string[] = []) {
  const p = Bun.spawn([process.execPath, GREX_MAIN, "add", `${server.url}/${mode}.git`, ...flags], {
    cwd: t.ws,
    env: { ...t.env, ...SMALL, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr: stderr.trim(), code };
}

const tmpEntries = () => readdirSync(tmpdir()).sort();

const cases: Array<[HostileMode, RegExp, Record<string, string>?]> = [
  ["endless-pack", /the pack is larger than 1 MiB \(limit 1 MiB, GREX_MAX_PACK_BYTES\); set GREX_MAX_PACK_BYTES higher/],
  ["endless-entry", /the entry at offset 12 goes on far past the 1024 bytes it declares/],
  ["endless-refs", /the ref advertisement from http:\/\/127\.0\.0\.1:\d+\/endless-refs\.git is larger than 1 MiB \(limit 1 MiB, GREX_MAX_REFS_BYTES\)/],
  ["gzip-refs", /the ref advertisement from .* is larger than 1 MiB \(limit 1 MiB, GREX_MAX_REFS_BYTES\)/],
  ["brotli-refs", /sent its ref advertisement with Content-Encoding br, which grex does not decode/],
  ["inflate-bomb", /the pack holds an object of 4 MiB at offset 12, over the largest allowed \(limit 1 MiB, GREX_MAX_OBJECT_BYTES\)/],
  ["lying-size", /the received pack is corrupt: the entry at offset 12 inflates to more than the 1024 bytes it declares/],
  ["delta-bomb", /a delta in the pack at offset \d+ builds an object of 2 MiB, over the largest allowed \(limit 1 MiB, GREX_MAX_OBJECT_BYTES\)/],
  ["deep-chain", /the pack holds a delta chain longer than 100 \(limit 100, GREX_MAX_DELTA_DEPTH\)/],
  ["slow-refs", /the ref advertisement from .* arrived at [\d.]+ bytes\/s for 1 s, under the low-speed limit of 1 KiB\/s \(GREX_HTTP_LOW_SPEED_LIMIT, GREX_HTTP_LOW_SPEED_TIME\); if the server is only slow, lower GREX_HTTP_LOW_SPEED_LIMIT or raise GREX_HTTP_LOW_SPEED_TIME/],
  ["slow-pack", /the pack from .* arrived at [\d.]+ bytes\/s for 1 s, under the low-speed limit of 1 KiB\/s \(GREX_HTTP_LOW_SPEED_LIMIT/],
  ["silent", /did not answer within 1 s \(limit 1 s, GREX_HTTP_CONNECT_TIMEOUT\); if the server is only slow, raise GREX_HTTP_CONNECT_TIMEOUT/],
  ["truncated-pack", /the received pack is corrupt: it ends (inside the entry at offset \d+|after \d+ of \d+ objects|after its last object, without its checksum)/],
  ["trailing-bytes", /the received pack is corrupt: it has bytes after its checksum/],
  ["bad-checksum", /the received pack is corrupt: its checksum does not match/],
  // A server that goes away is named in grex's words (how much had arrived), never the runtime's.
  ["dropped-pack", /^grex: .*the server at http:\/\/127\.0\.0\.1:\d+\/dropped-pack\.git closed the connection after [\d.]+ (KiB|bytes) of the pack; retry, and if it keeps happening check the server or use an ssh URL[.;]/],
  ["dropped-refs", /^grex: .*the server at http:\/\/127\.0\.0\.1:\d+\/dropped-refs\.git closed the connection after \d+ bytes of the ref advertisement; retry, and if it keeps happening check the server or use an ssh URL[.;]/],
];

describe("a hostile server cannot exhaust memory or hang grex", () => {
  for (const [mode, says, env] of cases) {
    test(`${mode}${env ? ` (${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")})` : ""}: one sentence, exit 4, nothing left behind`, async () => {
      const before = userSnapshot(t.ws);
      const tmpBefore = tmpEntries();
      const r = await addFrom(mode, env);
      expect(r.stderr).toMatch(says);
      expect(r.stderr).not.toMatch(/\n.*\n/); // one sentence (plus the verb's own wording), no stack
      expect(r.stderr).not.toMatch(/ at .*\.ts:\d+/);
      expect(r.stderr).not.toMatch(/verbose|fetch\(\)|For more information/);
      expect(r.code).toBe(4);
      expect(userSnapshot(t.ws)).toEqual(before);
      expect(tmpEntries()).toEqual(tmpBefore);
    });
  }

  test("the time limits are flags too, over their variables", async () => {
    const slow = await addFrom("slow-pack", { GREX_HTTP_LOW_SPEED_TIME: "600" }, ["--http-low-speed-time", "1"]);
    expect(slow.stderr).toMatch(/the pack from .* arrived at [\d.]+ bytes\/s for 1 s/);
    expect(slow.code).toBe(4);
    const silent = await addFrom("silent", { GREX_HTTP_CONNECT_TIMEOUT: "600" }, ["--http-connect-timeout=1"]);
    expect(silent.stderr).toMatch(/did not answer within 1 s \(limit 1 s, GREX_HTTP_CONNECT_TIMEOUT\)/);
    expect(silent.code).toBe(4);
  });

  test("a bad limit value is a usage error naming the variable", async () => {
    const r = await addFrom("truncated-pack", { GREX_MAX_PACK_BYTES: "lots" });
    expect(r.stderr).toContain("GREX_MAX_PACK_BYTES=lots is not a valid size");
    expect(r.code).toBe(2);
  });
});
