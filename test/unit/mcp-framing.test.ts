// The stdio framing: splitting bytes into lines, oversized messages, and the
// stdio loop (EOF, shutdown, signal) over in-memory streams.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LineSplitter, MAX_MESSAGE_BYTES, serveStdio, type StdioStreams } from "../../src/mcp/stdio.ts";
import { INIT_PARAMS, type Message, serverOptions } from "../helpers/mcp.ts";
import { TestWorkspace } from "../helpers/workspace.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function split(chunks: (string | Uint8Array)[], max = 64) {
  const lines: string[] = [];
  let oversize = 0;
  const s = new LineSplitter(max, (l) => lines.push(dec.decode(l)), () => oversize++);
  for (const c of chunks) s.push(typeof c === "string" ? enc.encode(c) : c);
  s.end();
  return { lines, oversize };
}

describe("LineSplitter", () => {
  test("splits on LF and drops a CR before it", () => {
    expect(split(["a\nb\r\nc\n"]).lines).toEqual(["a", "b", "c"]);
  });

  test("joins lines that span chunks, including a CRLF split across them", () => {
    expect(split(["{\"a\":", "1}\r", "\n{\"b\"", ":2}\n"]).lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  test("a multi-byte character split across chunks survives", () => {
    const bytes = enc.encode("é€\n");
    expect(split([bytes.subarray(0, 1), bytes.subarray(1, 3), bytes.subarray(3)]).lines).toEqual(["é€"]);
  });

  test("the last line without a newline counts at end of input; empty lines are passed on", () => {
    expect(split(["a\n\nb"]).lines).toEqual(["a", "", "b"]);
  });

  test("an oversized line is reported once, discarded up to its newline, and the next line is fine", () => {
    const big = "x".repeat(50);
    const r = split([big, big, big, "\nok\n"], 64);
    expect(r.oversize).toBe(1);
    expect(r.lines).toEqual(["ok"]);
  });

  test("a line of exactly the maximum is accepted", () => {
    expect(split(["y".repeat(64), "\n"], 64).lines).toEqual(["y".repeat(64)]);
  });
});

describe("serveStdio over in-memory streams", () => {
  let tw: TestWorkspace;
  beforeAll(async () => {
    tw = new TestWorkspace("grex-mcp-framing-");
    expect((await tw.grex("init")).code).toBe(0);
  });
  afterAll(() => tw.cleanup());

  function streams(input: (string | Uint8Array)[], keepOpen = false) {
    const out: string[] = [];
    let closeInput = () => {};
    const s: StdioStreams = {
      input: new ReadableStream<Uint8Array>({
        start(c) {
          for (const i of input) c.enqueue(typeof i === "string" ? enc.encode(i) : i);
          if (keepOpen) closeInput = () => c.close();
          else c.close();
        },
      }),
      write: (line) => {
        out.push(line);
      },
      flush: async () => {},
    };
    const messages = () => out.map((l) => JSON.parse(l) as Message);
    return { s, out, messages, closeInput: () => closeInput() };
  }

  const line = (m: object) => `${JSON.stringify(m)}\n`;
  const init = line({ jsonrpc: "2.0", id: 1, method: "initialize", params: INIT_PARAMS });

  test("EOF: in-flight calls are answered, then it returns 'eof'; every output is one JSON line", async () => {
    const { s, out, messages } = streams([init, line({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ls", arguments: {} } })]);
    expect(await serveStdio(serverOptions(tw.ws, tw.env), undefined, s)).toBe("eof");
    expect(out.every((l) => l.endsWith("\n") && !l.slice(0, -1).includes("\n"))).toBe(true);
    expect(messages().map((m) => m.id)).toEqual([1, 2]);
  });

  test("a message over the cap → -32600 with id null, and the server keeps serving", async () => {
    const huge = `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"${"z".repeat(MAX_MESSAGE_BYTES)}"}}\n`;
    const { s, messages } = streams([init, huge, line({ jsonrpc: "2.0", id: 3, method: "ping" })]);
    await serveStdio(serverOptions(tw.ws, tw.env), undefined, s);
    expect(messages().map((m) => [m.id, m.error?.code ?? "ok"])).toEqual([
      [1, "ok"],
      [null, -32600],
      [3, "ok"],
    ]);
  });

  test("invalid UTF-8 → -32700", async () => {
    const { s, messages } = streams([init, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a])]);
    await serveStdio(serverOptions(tw.ws, tw.env), undefined, s);
    expect(messages()[1]).toMatchObject({ id: null, error: { code: -32700 } });
  });

  test("shutdown: answered, then it returns 'shutdown' without waiting for EOF", async () => {
    const { s, messages } = streams([init, line({ jsonrpc: "2.0", id: 2, method: "shutdown" })], true);
    expect(await serveStdio(serverOptions(tw.ws, tw.env), undefined, s)).toBe("shutdown");
    expect(messages().map((m) => [m.id, m.result])).toEqual([
      [1, expect.any(Object)],
      [2, {}],
    ]);
  });

  test("an abort signal stops the loop ('signal')", async () => {
    const { s } = streams([init], true);
    const ac = new AbortController();
    const served = serveStdio(serverOptions(tw.ws, tw.env), ac.signal, s);
    ac.abort();
    expect(await served).toBe("signal");
  });

  test("a write failure (reader gone) is logged, not thrown, and later writes are dropped", async () => {
    for (const how of ["callback", "throw"] as const) {
      const logs: string[] = [];
      let attempts = 0;
      const { s } = streams([init, line({ jsonrpc: "2.0", id: 2, method: "ping" })]);
      s.write = (_line, failed) => {
        attempts++;
        if (how === "throw") throw new Error("EPIPE");
        failed(new Error("EPIPE"));
      };
      expect(await serveStdio(serverOptions(tw.ws, tw.env, logs), undefined, s)).toBe("eof");
      expect(logs.join("\n")).toContain("cannot write to stdout");
      expect(attempts).toBe(1);
    }
  });
});
