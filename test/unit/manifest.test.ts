// grex.jsonl (SPEC §2.1): parsing, fold, torn-tail repair, the 2 KiB line cap,
// appends and compaction. Real files in temp dirs; no mocks.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GrexError } from "../../src/core/errors.ts";
import {
  appendEvents,
  compactManifest,
  compactText,
  eventLine,
  fold,
  MAX_LINE_BYTES,
  type ManifestEvent,
  makeEvent,
  type PackEntry,
  parseManifest,
  readManifest,
} from "../../src/core/manifest.ts";
import { type Workspace, workspaceAt } from "../../src/core/workspace.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
let ws: Workspace;

beforeEach(() => {
  ws = workspaceAt(tmp.make("grex-manifest-"));
  writeFileSync(ws.manifestPath, "");
});
afterEach(() => tmp.cleanup());

const TS0 = Date.UTC(2026, 0, 1);
const ts = (i: number) => new Date(TS0 + i * 1000).toISOString();

function add(id: string, i = 0, extra: Partial<{ url: string; type: string; ref: string | null }> = {}): ManifestEvent {
  return { op: "add", ts: ts(i), id, schema_version: "1", url: `https://h/${id}.git`, path: id, type: "meta", ref: null, ...extra };
}
const rm = (id: string, i = 0): ManifestEvent => ({ op: "rm", ts: ts(i), id, schema_version: "1" });
const lines = (...events: ManifestEvent[]) => events.map((e) => JSON.stringify(e) + "\n").join("");
const entries = (m: Map<string, PackEntry>) => [...m.entries()];

/** The thrown GrexError (fails the test if `f` does not throw one). */
function grexErr(f: () => unknown): GrexError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    return err as GrexError;
  }
  throw new Error("expected a GrexError");
}

async function grexErrAsync(p: Promise<unknown>): Promise<GrexError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    return err as GrexError;
  }
  throw new Error("expected a GrexError");
}

describe("parseManifest", () => {
  test("reads every event; blank lines, CRLF and a missing final newline are fine", () => {
    const a = add("a", 1);
    const b = add("b", 2);
    const text = `${JSON.stringify(a)}\r\n\n   \n${JSON.stringify(b)}`;
    const p = parseManifest(text, "/w/grex.jsonl");
    expect(p.events).toEqual([a, b]);
    expect(p.tornTail).toBe(false);
    expect(p.validBytes).toBe(Buffer.byteLength(text));
    expect(parseManifest("", "/w/grex.jsonl")).toEqual({ events: [], tornTail: false, validBytes: 0 });
  });

  test("an unparsable last line without a newline is a torn tail; validBytes counts bytes, not characters", () => {
    const a = add("a", 1, { url: "https://h/é/ü.git" }); // multi-byte characters before the tear
    const whole = JSON.stringify(add("b", 2));
    for (const cut of [1, 10, whole.length - 1]) {
      const good = `${JSON.stringify(a)}\n`;
      const p = parseManifest(good + whole.slice(0, cut), "/w/grex.jsonl");
      expect(p.tornTail).toBe(true);
      expect(p.events).toEqual([a]);
      expect(p.validBytes).toBe(Buffer.byteLength(good));
    }
    // A torn very first line.
    expect(parseManifest('{"op":"ad', "/w/grex.jsonl")).toEqual({ events: [], tornTail: true, validBytes: 0 });
  });

  const integrity: Array<[string, string, string]> = [
    ["bad JSON in the middle", `${lines(add("a"))}{not json\n${lines(add("b"))}`, "grex.jsonl line 2 is not valid JSON"],
    ["bad JSON on the last line, newline-terminated (not a tear)", `${lines(add("a"))}{"op":\n`, "grex.jsonl line 2 is not valid JSON"],
    ["a JSON array", "[1,2]\n", "line 1 is not a JSON object"],
    ["a JSON string", '"add"\n', "line 1 is not a JSON object"],
    ["JSON null", "null\n", "line 1 is not a JSON object"],
    ["schema_version 2", lines({ ...add("a"), schema_version: "2" }), 'line 1 has schema_version "2", but this grex reads only "1"'],
    ["schema_version as a number", `${JSON.stringify({ ...add("a"), schema_version: 1 })}\n`, "line 1 has schema_version 1"],
    ["no schema_version", '{"op":"rm","ts":"t","id":"a"}\n', "line 1 has schema_version undefined"],
    ["no op", '{"ts":"t","id":"a","schema_version":"1"}\n', "line 1 is not a valid event (missing 'op')"],
    ["empty id", '{"op":"rm","ts":"t","id":"","schema_version":"1"}\n', "missing 'id'"],
    ["no ts", '{"op":"rm","id":"a","schema_version":"1"}\n', "missing 'ts'"],
    ["add without url", '{"op":"add","ts":"t","id":"a","schema_version":"1","path":"a","type":"meta"}\n', "an 'add' needs url, path, type"],
    ["add with a numeric ref", `${JSON.stringify({ ...add("a"), ref: 3 })}\n`, "an 'add' needs url"],
    ["update with a numeric url", '{"op":"update","ts":"t","id":"a","schema_version":"1","url":5}\n', "an 'update' may only set"],
    ["action_started without idx", '{"op":"action_started","ts":"t","id":"a","schema_version":"1","action":"mkdir"}\n', "an 'action_started' needs action and idx"],
  ];
  for (const [name, text, says] of integrity) {
    test(`integrity error: ${name}`, () => {
      const err = grexErr(() => parseManifest(text, "/w/grex.jsonl"));
      expect(err.kind).toBe("integrity");
      expect(err.exitCode).toBe(3);
      expect(err.message).toContain(says);
      expect(err.message).not.toContain("\n");
      expect(err.message.endsWith(".")).toBe(true);
    });
  }

  test("unknown ops (from a newer grex) are kept and ignored by fold", () => {
    const future = { op: "pin", ts: ts(5), id: "a", schema_version: "1", extra: [1, 2] };
    const p = parseManifest(lines(add("a", 1)) + JSON.stringify(future) + "\n", "/w/grex.jsonl");
    expect(p.events[1]).toEqual(future);
    expect(entries(fold(p.events))).toEqual(entries(fold([add("a", 1)])));
  });
});

describe("fold", () => {
  test("add, update patches, rm tombstones, re-add moves to the end, updates of unknown ids are ignored", () => {
    const events: ManifestEvent[] = [
      add("a", 1),
      add("b", 2),
      { op: "update", ts: ts(3), id: "a", schema_version: "1", ref: "v2", url: "https://new/a.git" },
      { op: "update", ts: ts(4), id: "ghost", schema_version: "1", ref: "x" },
      add("c", 5),
      rm("b", 6),
      { op: "sync", ts: ts(7), id: "a", schema_version: "1" },
      add("b", 8, { type: "declarative" }),
      { op: "update", ts: ts(9), id: "a", schema_version: "1", ref: null },
      { op: "action_completed", ts: ts(10), id: "a", schema_version: "1", action: "mkdir", idx: 0, changed: true },
    ];
    expect(entries(fold(events))).toEqual([
      ["a", { id: "a", url: "https://new/a.git", path: "a", type: "meta", ref: null }],
      ["c", { id: "c", url: "https://h/c.git", path: "c", type: "meta", ref: null }],
      ["b", { id: "b", url: "https://h/b.git", path: "b", type: "declarative", ref: null }],
    ]);
  });

  test("fold does not mutate the events", () => {
    const events = [add("a", 1), { op: "update", ts: ts(2), id: "a", schema_version: "1", ref: "v9" } as ManifestEvent];
    const before = JSON.stringify(events);
    fold(events);
    fold(events);
    expect(JSON.stringify(events)).toBe(before);
  });
});

describe("eventLine (2 KiB cap)", () => {
  test("a normal event is one JSON line", () => {
    const e = add("a", 1);
    expect(eventLine(e)).toBe(`${JSON.stringify(e)}\n`);
  });

  test("a long action_halted stderr keeps its tail and fits in 2 KiB", () => {
    for (const unit of ["x", "é", "😀"]) {
      const stderr = `${"HEAD-".repeat(400)}${unit.repeat(4000)}THE-END`;
      const e = makeEvent("action_halted", "a", { action: "exec", idx: 3, reason: "exit 1", stderr });
      const line = eventLine(e);
      expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_LINE_BYTES);
      expect(line.endsWith("\n")).toBe(true);
      expect(line.indexOf("\n")).toBe(line.length - 1);
      const back = JSON.parse(line) as { stderr: string; reason: string };
      expect(back.reason).toBe("exit 1");
      expect(back.stderr.endsWith("THE-END")).toBe(true);
      expect(Buffer.byteLength(back.stderr)).toBeGreaterThan(1000); // shortened, not emptied
      expect(parseManifest(line, "grex.jsonl").events).toHaveLength(1);
    }
  });

  test("an event that cannot be shortened is refused with an integrity error", () => {
    const err = grexErr(() => eventLine(add("a", 1, { url: `https://h/${"x".repeat(MAX_LINE_BYTES)}` })));
    expect(err.kind).toBe("integrity");
    expect(err.message).toContain("exceed 2048 bytes");
    const reason = "r".repeat(3000);
    expect(() => eventLine(makeEvent("action_halted", "a", { action: "exec", idx: 0, reason, stderr: "" }))).toThrow(GrexError);
  });
});

describe("appendEvents / readManifest", () => {
  test("appends whole lines that read back in order", async () => {
    const e1 = makeEvent("add", "a", { url: "https://h/a.git", path: "a", type: "meta", ref: null });
    const e2 = makeEvent("update", "a", { ref: "v1" });
    await appendEvents(ws, [e1]);
    await appendEvents(ws, [e2]);
    const text = readFileSync(ws.manifestPath, "utf8");
    expect(text).toBe(eventLine(e1) + eventLine(e2));
    const warnings: string[] = [];
    const r = await readManifest(ws, { warn: (m) => warnings.push(m) });
    expect(r.events).toEqual([e1, e2]);
    expect(r.state.get("a")?.ref).toBe("v1");
    expect(warnings).toEqual([]);
  });

  test("an over-long event makes the whole batch fail before anything is written", async () => {
    const good = add("a", 1);
    const huge = add("b", 2, { url: `https://h/${"y".repeat(3000)}` });
    const err = await grexErrAsync(appendEvents(ws, [good, huge]));
    expect(err.kind).toBe("integrity");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe("");
  });

  test("no manifest: appending is a usage error and creates nothing; an empty batch is a no-op", async () => {
    const other = workspaceAt(tmp.make("grex-manifest-none-"));
    const err = await grexErrAsync(appendEvents(other, [add("a")]));
    expect(err.kind).toBe("usage");
    expect(err.message).toContain("grex init");
    expect(existsSync(other.manifestPath)).toBe(false);
    await appendEvents(other, []);
    expect(existsSync(other.manifestPath)).toBe(false);
    expect((await grexErrAsync(readManifest(other, { warn: () => {} }))).kind).toBe("usage");
  });

  test("a torn tail is truncated away with one warning; the next read is silent", async () => {
    const good = lines(add("a", 1, { url: "https://h/ü.git" }), add("b", 2));
    writeFileSync(ws.manifestPath, `${good}{"op":"add","ts":"2026-01-01T00:00:03.000Z","id":"c","sch`);
    const warnings: string[] = [];
    const r = await readManifest(ws, { warn: (m) => warnings.push(m) });
    expect(r.events.map((e) => e.id)).toEqual(["a", "b"]);
    expect([...r.state.keys()]).toEqual(["a", "b"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("grex.jsonl ended in a partly written line");
    expect(warnings[0]).not.toContain("\n");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(good);

    const again: string[] = [];
    await readManifest(ws, { warn: (m) => again.push(m) });
    expect(again).toEqual([]);
  });

  test("a torn line in the middle (followed by more lines) is not repaired: integrity error naming the line", async () => {
    writeFileSync(ws.manifestPath, `${lines(add("a"))}{"op":"ad\n${lines(add("b"))}`);
    const err = await grexErrAsync(readManifest(ws, { warn: () => {} }));
    expect(err.kind).toBe("integrity");
    expect(err.message).toContain("grex.jsonl line 2");
    expect(readFileSync(ws.manifestPath, "utf8")).toContain('{"op":"ad\n'); // untouched
  });

  // A crash can leave a complete event without its "\n" (the writer died
  // between the line and the newline, or a split write). The next append must
  // not glue its line onto it.
  test("appending after a complete last line that lacks its newline keeps both events", async () => {
    writeFileSync(ws.manifestPath, lines(add("a", 1)) + JSON.stringify(add("b", 2)));
    await appendEvents(ws, [add("c", 3)]);
    const p = parseManifest(readFileSync(ws.manifestPath, "utf8"), ws.manifestPath);
    expect(p.tornTail).toBe(false);
    expect(p.events.map((e) => e.id)).toEqual(["a", "b", "c"]);
  });

  // Another process may die mid-append after we read the manifest and before
  // we take the lock: the append must not bury the torn fragment mid-file.
  test("appending onto a torn tail (no read in between) drops the fragment instead of corrupting the log", async () => {
    const good = lines(add("a", 1));
    writeFileSync(ws.manifestPath, `${good}{"op":"add","ts":"x","id":"tor`);
    await appendEvents(ws, [add("c", 3)]);
    const text = readFileSync(ws.manifestPath, "utf8");
    expect(text).toBe(good + lines(add("c", 3)));
    const warnings: string[] = [];
    const r = await readManifest(ws, { warn: (m) => warnings.push(m) });
    expect(r.events.map((e) => e.id)).toEqual(["a", "c"]);
    expect(warnings).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Property-style: random event sequences, seeded.

function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const IDS = ["a", "b", "c", "dev-env", "tools", "x.y_z"];
const URLS = ["https://h/1.git", "git@h:org/2.git", "../local/3", "https://h/ünï.git"];
const TYPES = ["meta", "declarative", "scripted"];
const REFS = [null, "main", "v1.0", "0123456789abcdef0123456789abcdef01234567"];

function randomEvents(rand: () => number, n: number): ManifestEvent[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out: ManifestEvent[] = [];
  for (let i = 0; i < n; i++) {
    const id = pick(IDS);
    const env = { ts: ts(i), id, schema_version: "1" };
    const r = rand();
    if (r < 0.35) out.push({ op: "add", ...env, url: pick(URLS), path: id, type: pick(TYPES), ref: pick(REFS) });
    else if (r < 0.6) {
      const u: ManifestEvent = { op: "update", ...env };
      if (rand() < 0.5) u.url = pick(URLS);
      if (rand() < 0.5) u.type = pick(TYPES);
      if (rand() < 0.5) u.ref = pick(REFS);
      out.push(u);
    } else if (r < 0.8) out.push({ op: "rm", ...env });
    else if (r < 0.88) out.push({ op: "sync", ...env });
    else if (r < 0.95) out.push({ op: "action_completed", ...env, action: "mkdir", idx: Math.floor(rand() * 4), changed: rand() < 0.5 });
    else out.push({ op: "future_op", ...env, payload: { n: i } });
  }
  return out;
}

/** Independent reference model of the fold (SPEC §2.1 table), written naively. */
function modelFold(events: readonly ManifestEvent[]): Array<[string, PackEntry]> {
  let live: PackEntry[] = [];
  for (const e of events) {
    if (e.op === "add") {
      live = live.filter((p) => p.id !== e.id);
      const a = e as Extract<ManifestEvent, { op: "add" }>;
      live.push({ id: a.id, url: a.url, path: a.path, type: a.type, ref: a.ref });
    } else if (e.op === "update") {
      const u = e as Extract<ManifestEvent, { op: "update" }>;
      live = live.map((p) =>
        p.id !== u.id
          ? p
          : { ...p, ...("url" in u ? { url: u.url as string } : {}), ...("type" in u ? { type: u.type as string } : {}), ...("ref" in u ? { ref: u.ref ?? null } : {}) },
      );
    } else if (e.op === "rm") live = live.filter((p) => p.id !== e.id);
  }
  return live.map((p) => [p.id, p]);
}

describe("property: fold, round trip and compaction", () => {
  for (let seed = 1; seed <= 150; seed++) {
    test(`seed ${seed}`, () => {
      const rand = prng(seed);
      const events = randomEvents(rand, Math.floor(rand() * 60));
      const state = fold(events);
      expect(entries(state)).toEqual(modelFold(events));

      // Serialise → parse gives back the same events.
      const text = events.map(eventLine).join("");
      const parsed = parseManifest(text, "grex.jsonl");
      expect(parsed.tornTail).toBe(false);
      expect(parsed.events).toEqual(events);

      // Compaction keeps the fold (order included), is idempotent byte for byte, and drops tombstones.
      const compact = compactText(events);
      const reparsed = parseManifest(compact, "grex.jsonl").events;
      expect(entries(fold(reparsed))).toEqual(entries(state));
      expect(reparsed.every((e) => e.op === "add")).toBe(true);
      expect(reparsed.map((e) => e.id)).toEqual([...state.keys()]);
      expect(compactText(reparsed)).toBe(compact);
      for (const id of IDS) {
        if (!state.has(id)) expect(reparsed.some((e) => e.id === id)).toBe(false);
      }
      // Each compacted add carries the time of the last event that shaped that pack.
      for (const e of reparsed) {
        const last = events.filter((x) => x.id === e.id && (x.op === "add" || x.op === "update")).at(-1);
        expect(e.ts).toBe(last?.ts as string);
      }
    });
  }
});

describe("compactManifest (file)", () => {
  test("rewrites the file to the compact form atomically; a second run is byte-identical", async () => {
    const events = randomEvents(prng(4242), 300);
    writeFileSync(ws.manifestPath, events.map(eventLine).join(""));
    const before = fold(events);
    await compactManifest(ws);
    const once = readFileSync(ws.manifestPath, "utf8");
    expect(once).toBe(compactText(events));
    const r = await readManifest(ws, { warn: () => {} });
    expect(entries(r.state)).toEqual(entries(before));
    const ino = statSync(ws.manifestPath).ino;
    await compactManifest(ws);
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(once);
    expect(statSync(ws.manifestPath).ino).not.toBe(ino); // temp + rename, never in place
    expect(existsSync(join(ws.root, "grex.jsonl"))).toBe(true);
  });

  test("an empty or all-removed log compacts to an empty file", async () => {
    writeFileSync(ws.manifestPath, lines(add("a", 1), rm("a", 2)));
    await compactManifest(ws);
    expect(readFileSync(ws.manifestPath, "utf8")).toBe("");
  });
});
