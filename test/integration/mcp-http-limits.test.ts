// What `grex serve --http` refuses to hold or run, against the real server
// process: a POST that is not application/json (a page in a browser can send
// text/plain without a CORS preflight), request bodies past the one byte
// budget shared by all bodies in flight, and sessions past a client's cap.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_BODY_BUDGET, DEFAULT_SESSIONS_PER_CLIENT, httpLimitsFromEnv, isJsonContentType, MAX_BODY_BYTES } from "../../src/mcp/http-limits.ts";
import { HttpServeProcess, INIT_BODY, rawPost } from "../helpers/http-serve.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared 2-core machine: a guard against hangs, not a timing assertion.
setDefaultTimeout(60_000);

let tw: TestWorkspace;

beforeAll(async () => {
  tw = new TestWorkspace("grex-mcp-limits-");
  expect((await tw.grex("init")).code).toBe(0);
  expect((await tw.grex("add", tw.repo("one", { "a.txt": "a\n" }), "one")).code).toBe(0);
});

afterAll(() => tw.cleanup());

const JSON_ONLY = { Accept: "application/json" };

/** A tools/call of exec running `script` with sh in every pack (one here); `pad` bytes ride along in `_meta`. */
function execCall(id: number, script: string, pad = 0): string {
  const params: Record<string, unknown> = { name: "exec", arguments: { cmd: "sh", args: ["-c", script] } };
  if (pad > 0) params._meta = { pad: "x".repeat(pad) };
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params });
}

async function withServer(env: Record<string, string>, fn: (s: HttpServeProcess) => Promise<void>): Promise<void> {
  const server = await HttpServeProcess.start(tw.ws, { ...tw.env, ...env });
  try {
    await fn(server);
  } finally {
    expect(await server.stop()).toBe(0);
  }
}

async function waitFor(path: string): Promise<void> {
  while (!existsSync(path)) await Bun.sleep(20);
}

const errorOf = async (res: Response) => ((await res.json()) as { error: { code: number; message: string } }).error;

describe("only application/json POSTs reach the server", () => {
  test("a text/plain POST calling exec (what a page on another loopback port can send without a preflight) is refused with 415 and runs nothing", async () => {
    await withServer({}, async (s) => {
      const marker = join(tw.root, "exec-ran");
      const body = execCall(1, `touch '${marker}'`);
      for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]) {
        const res = await rawPost(s.url, body, { ...JSON_ONLY, "Content-Type": type });
        expect({ type, status: res.status }).toEqual({ type, status: 415 });
        expect(await errorOf(res)).toEqual({ code: -32016, message: "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json." });
      }
      // The same POST from fetch's default (a string body is sent as text/plain), with no Content-Type set by us.
      const browserLike = await fetch(s.url, { method: "POST", body });
      expect(browserLike.status).toBe(415);
      // A request answered after the refusals: had any of them run, the marker would be there by now.
      expect((await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "ls", arguments: {} } }), JSON_ONLY)).status).toBe(200);
      expect(existsSync(marker)).toBe(false);
      // The control: the same call as application/json (any case, with parameters) does run.
      const ok = await rawPost(s.url, body, { ...JSON_ONLY, "Content-Type": "Application/JSON; charset=utf-8" });
      expect(ok.status).toBe(200);
      expect(existsSync(marker)).toBe(true);
    });
  });
});

describe("one byte budget for every request body in flight", () => {
  test("bodies held by calls in flight spend the budget: the next large one gets 503 (-32015, Retry-After), small ones pass; freed when answered", async () => {
    // The smallest budget there is (one largest body): two 1.6 MB calls fit, a third does not.
    const pad = 1_600_000;
    await withServer({ GREX_MCP_HTTP_BODY_BUDGET: String(MAX_BODY_BYTES) }, async (s) => {
      const gate = join(tw.root, "budget-gate");
      const started = (n: number) => join(tw.root, `budget-started-${n}`);
      const waiting = (n: number) => execCall(n, `touch '${started(n)}'; while [ ! -e '${gate}' ]; do sleep 0.05; done`, pad);
      // Plain JSON answers: each POST (and its body's share of the budget) is held until its call answers.
      const first = rawPost(s.url, waiting(1), JSON_ONLY);
      await waitFor(started(1));
      const second = rawPost(s.url, waiting(2), JSON_ONLY);
      await waitFor(started(2));
      const third = await rawPost(s.url, waiting(3), JSON_ONLY);
      expect(third.status).toBe(503);
      expect(third.headers.get("retry-after")).toBe("1");
      expect((await errorOf(third)).code).toBe(-32015);
      expect(existsSync(started(3))).toBe(false);
      // Small requests still fit beside them.
      expect((await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" }), JSON_ONLY)).status).toBe(200);
      writeFileSync(gate, "");
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
      // Answered: their bytes are back in the budget.
      const again = await rawPost(s.url, execCall(5, "true", pad), JSON_ONLY);
      expect(again.status).toBe(200);
    });
  });

  test("64 concurrent bodies of ~4 MiB: every one is answered (200, or 503 past the budget) and the server's peak memory stays bounded", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: { pad: "x".repeat(MAX_BODY_BYTES - 200) } } });
    await withServer({}, async (s) => {
      const statuses = await Promise.all([...Array(64).keys()].map(async () => (await rawPost(s.url, body, JSON_ONLY)).status));
      for (const st of statuses) expect([200, 503]).toContain(st);
      expect(statuses).toContain(200);
      // Loose bound on the real process's peak RSS (VmHWM): without the budget 64 such bodies took 790 MB or more.
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.proc.pid}/status`, "utf8"));
      const peakMb = Number(hwm?.[1]) / 1024;
      console.log(`serve --http peak RSS with 64 concurrent 4 MiB bodies: ${peakMb.toFixed(0)} MB; ${statuses.filter((x) => x === 503).length} refused`);
      expect(peakMb).toBeLessThan(500);
    });
  });
});

describe("sessions per client", () => {
  test("past its cap a client gets 429 (-32013) for a new session; closing one makes room; session-less POSTs still work", async () => {
    await withServer({ GREX_MCP_HTTP_SESSIONS_PER_CLIENT: "3" }, async (s) => {
      const open = async () => rawPost(s.url, JSON.stringify(INIT_BODY), JSON_ONLY);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await open();
        expect(res.status).toBe(200);
        ids.push(res.headers.get("mcp-session-id") as string);
      }
      const refused = await open();
      expect(refused.status).toBe(429);
      const err = await errorOf(refused);
      expect(err.code).toBe(-32013);
      expect(err.message).toContain("3 sessions open");
      // A POST without a session id that is not initialize is answered on its own: no session is kept.
      expect((await rawPost(s.url, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }), JSON_ONLY)).status).toBe(200);
      const closed = await fetch(s.url, { method: "DELETE", headers: { "Mcp-Session-Id": ids[0] as string } });
      expect(closed.status).toBe(200);
      expect((await open()).status).toBe(200);
    });
  });
});

describe("the limits' settings", () => {
  test("GREX_MCP_HTTP_BODY_BUDGET and GREX_MCP_HTTP_SESSIONS_PER_CLIENT: whole numbers in range, else the default with a warning", () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    expect(httpLimitsFromEnv({}, warn)).toEqual({ bodyBudget: DEFAULT_BODY_BUDGET, sessionsPerClient: DEFAULT_SESSIONS_PER_CLIENT });
    expect(httpLimitsFromEnv({ GREX_MCP_HTTP_BODY_BUDGET: "67108864", GREX_MCP_HTTP_SESSIONS_PER_CLIENT: "2" }, warn)).toEqual({ bodyBudget: 67108864, sessionsPerClient: 2 });
    expect(warnings).toEqual([]);
    expect(httpLimitsFromEnv({ GREX_MCP_HTTP_BODY_BUDGET: "1024", GREX_MCP_HTTP_SESSIONS_PER_CLIENT: "0" }, warn)).toEqual({ bodyBudget: DEFAULT_BODY_BUDGET, sessionsPerClient: DEFAULT_SESSIONS_PER_CLIENT });
    expect(httpLimitsFromEnv({ GREX_MCP_HTTP_BODY_BUDGET: "32m" }, warn).bodyBudget).toBe(DEFAULT_BODY_BUDGET);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain(`GREX_MCP_HTTP_BODY_BUDGET='1024' is not a whole number of at least ${MAX_BODY_BYTES}`);
  });

  test("application/json with or without parameters, any case; nothing else", () => {
    for (const ok of ["application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ;charset=UTF-8"]) expect(isJsonContentType(ok)).toBe(true);
    for (const no of [null, "", "text/plain", "application/jsonp", "application/json-seq", "text/json", "multipart/form-data; boundary=application/json"]) expect(isJsonContentType(no)).toBe(false);
  });
});
