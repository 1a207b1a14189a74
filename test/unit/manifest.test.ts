// grex.jsonl (SPEC §2.1): parsing, fold, torn-tail repair, the 2 KiB line cap,
// appends and compaction. Real files in temp dirs; no mocks.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { GrexError } from "../../src/core/base/errors.ts";
import { withManifestLock } from "../../src/core/locks/locks.ts";
import {
  appendEvents,
  appendEventsLocked,
  checkEvent,
  eventLine,
  fold,
  MAX_LINE_BYTES,
  type ManifestEvent,
  makeEvent,
  type PackEntry,
  parseManifest,
  readManifest,
  readManifestLocked,
} from "../../src/core/workspace/manifest.ts";
import { compactManifest, compactText } from "../../src/core/workspace/manifest-compact.ts";
import { ManifestEventSchema } from "../../src/core/workspace/manifest-schema.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";
import { TmpDirs } from "../helpers/tmp.ts";
import { prng } from "../helpers/prng.ts";

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
const lines = (...events: ManifestEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`).join("");
const entries = (m: Map<string, PackEntry>) => [...m.entries()];
const collect = () => {
  const warnings: string[] = [];
  return { warnings, warn: (m: string) => void warnings.push(m) };
};

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

function oneSentence(err: GrexError): void {
  expect(err.message).not.toContain("\n");
  expect(err.message.endsWith(".")).toBe(true);
}

describe("parseManifest", () => {
  test("reads every event; blank lines, CRLF, a BOM and a missing final newline are fine", () => {
    const a = add("a", 1);
    const b = add("b", 2);
    const text = `\uFEFF${JSON.stringify(a)}\r\n\n   \n${JSON.stringify(b)}`;
    const p = parseManifest(text, "/w/grex.jsonl");
    expect(p.events).toEqual([a, b]);
    expect(p.tornTail).toBe(false);
    expect(parseManifest("", "/w/grex.jsonl")).toEqual({ events: [], tornTail: false });
  });

  test("an add without ref reads as ref null", () => {
    const { ref: _ref, ...noRef } = add("a", 1) as Record<string, unknown>;
    const p = parseManifest(`${JSON.stringify(noRef)}\n`, "grex.jsonl");
    expect((p.events[0] as { ref: unknown }).ref).toBeNull();
    expect(fold(p.events).get("a")?.ref).toBeNull();
  });

  test("an unparsable last line without a newline is a torn tail", () => {
    const a = add("a", 1, { url: "https://h/é/ü.git" });
    const whole = JSON.stringify(add("b", 2));
    for (const cut of [1, 10, whole.length - 1]) {
      const p = parseManifest(`${JSON.stringify(a)}\n${whole.slice(0, cut)}`, "/w/grex.jsonl");
      expect(p).toEqual({ events: [a], tornTail: true });
    }
    expect(parseManifest('{"op":"ad', "/w/grex.jsonl")).toEqual({ events: [], tornTail: true });
  });

  const T = ts(0);
  const integrity: Array<[string, string, string]> = [
    ["bad JSON in the middle", `${lines(add("a"))}{not json\n${lines(add("b"))}`, "grex.jsonl line 2 is not valid JSON"],
    ["bad JSON on the last line, newline-terminated (not a tear)", `${lines(add("a"))}{"op":\n`, "grex.jsonl line 2 is not valid JSON"],
    ["line numbers count blank lines", `${lines(add("a"))}\n\n{x\n`, "grex.jsonl line 4 is not valid JSON"],
    ["valid JSON but an invalid event on an unterminated last line", `${lines(add("a"))}{"op":"rm"}`, "line 2"],
    ["a JSON array", "[1,2]\n", "line 1 is not a JSON object"],
    ["JSON null", "null\n", "line 1 is not a JSON object"],
    ["schema_version 2", lines({ ...add("a"), schema_version: "2" }), 'line 1 has schema_version "2", but this grex reads only "1"; upgrade grex'],
    ["schema_version as a number", `${JSON.stringify({ ...add("a"), schema_version: 1 })}\n`, "line 1 has schema_version 1"],
    // (an `rm` without it is a line the Rust grex writes: read as schema "1", see rust-compat.test.ts)
    ["no schema_version", `{"op":"add","ts":"${T}","id":"a","url":"https://x/a.git","path":"a","type":"meta"}\n`, 'line 1 has no schema_version; add "schema_version":"1"'],
    ["no op", `{"ts":"${T}","id":"a","schema_version":"1"}\n`, "line 1 is not a valid event (it has no 'op')"],
    ["bad ts", '{"op":"rm","ts":"yesterday","id":"a","schema_version":"1"}\n', "'ts' is not an RFC 3339 UTC timestamp"],
    ["local-time ts", `{"op":"rm","ts":"2026-01-01T10:00:00+02:00","id":"a","schema_version":"1"}\n`, "'ts'"],
    ["empty id", `{"op":"rm","ts":"${T}","id":"","schema_version":"1"}\n`, "'id' is not a pack id"],
    ["id escaping the workspace", `{"op":"rm","ts":"${T}","id":"../etc","schema_version":"1"}\n`, "'id' is not a pack id"],
    ["add without url", `{"op":"add","ts":"${T}","id":"a","schema_version":"1","path":"a","type":"meta"}\n`, "'url'"],
    ["add with an absolute path", `${JSON.stringify({ ...add("a"), path: "/etc" })}\n`, "'path'"],
    ["add with a numeric ref", `${JSON.stringify({ ...add("a"), ref: 3 })}\n`, "'ref' must be a string or null"],
    ["update with a numeric url", `{"op":"update","ts":"${T}","id":"a","schema_version":"1","url":5}\n`, "'url'"],
    ["action_started without idx", `{"op":"action_started","ts":"${T}","id":"a","schema_version":"1","action":"mkdir"}\n`, "'idx'"],
    ["action_completed without changed", `{"op":"action_completed","ts":"${T}","id":"a","schema_version":"1","action":"x","idx":0}\n`, "'changed'"],
  ];
  for (const [name, text, says] of integrity) {
    test(`integrity error: ${name}`, () => {
      const err = grexErr(() => parseManifest(text, "/w/grex.jsonl"));
      expect(err.kind).toBe("integrity");
      expect(err.exitCode).toBe(3);
      expect(err.message).toContain(says);
      expect(err.data?.file).toBe("/w/grex.jsonl");
      oneSentence(err);
    });
  }

  test("unknown ops (from a newer grex) are kept and ignored by fold", () => {
    const future = { op: "pin", ts: ts(5), id: "a", schema_version: "1", extra: [1, 2] };
    const p = parseManifest(`${lines(add("a", 1))}${JSON.stringify(future)}\n`, "/w/grex.jsonl");
    expect(p.events[1]).toEqual(future);
    expect(entries(fold(p.events))).toEqual(entries(fold([add("a", 1)])));
  });
});

describe("fold", () => {
  test("add sets, update patches, rm tombstones, re-add after rm goes last, other ops and unknown ids are ignored", () => {
    const events: ManifestEvent[] = [
      add("a", 1),
      add("b", 2),
      { op: "update", ts: ts(3), id: "a", schema_version: "1", ref: "v2", url: "https://new/a.git" },
      { op: "update", ts: ts(4), id: "ghost", schema_version: "1", ref: "x" },
      add("c", 5),
      rm("b", 6),
      { op: "update", ts: ts(6), id: "b", schema_version: "1", ref: "ignored-while-removed" },
      { op: "sync", ts: ts(7), id: "a", schema_version: "1" },
      add("b", 8, { type: "declarative" }),
      { op: "update", ts: ts(9), id: "a", schema_version: "1", ref: null },
      add("c", 10, { url: "https://other/c.git" }), // add over a live id replaces it in place
      { op: "action_completed", ts: ts(11), id: "a", schema_version: "1", action: "mkdir", idx: 0, changed: true },
      { op: "future", ts: ts(12), id: "a", schema_version: "1", url: "nope" },
    ];
    expect(entries(fold(events))).toEqual([
      ["a", { id: "a", url: "https://new/a.git", path: "a", type: "meta", ref: null }],
      ["c", { id: "c", url: "https://other/c.git", path: "c", type: "meta", ref: null }],
      ["b", { id: "b", url: "https://h/b.git", path: "b", type: "declarative", ref: null }],
    ]);
  });

  test("fold does not mutate the events and is deterministic", () => {
    const events = [add("a", 1), { op: "update", ts: ts(2), id: "a", schema_version: "1", ref: "v9" } as ManifestEvent];
    const before = JSON.stringify(events);
    expect(entries(fold(events))).toEqual(entries(fold(events)));
    expect(JSON.stringify(events)).toBe(before);
  });
});

describe("eventLine (schema and 2 KiB cap)", () => {
  test("a normal event is one JSON line with the envelope first", () => {
    const e = makeEvent("update", "a", { ref: "v1" }, ts(1));
    expect(eventLine(e)).toBe(`{"op":"update","ts":"${ts(1)}","id":"a","schema_version":"1","ref":"v1"}\n`);
  });

  test("a long action_halted stderr keeps its tail and the line fits in 2 KiB", () => {
    for (const unit of ["x", "é", "😀", "\u0001"]) {
      const stderr = `${"HEAD-".repeat(400)}${unit.repeat(4000)}THE-END`;
      const e = makeEvent("action_halted", "a", { action: "exec", idx: 3, reason: "exit 1", stderr });
      const line = eventLine(e);
      expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_LINE_BYTES);
      expect(line.indexOf("\n")).toBe(line.length - 1);
      const back = JSON.parse(line) as { stderr: string; reason: string };
      expect(back.reason).toBe("exit 1");
      expect(back.stderr.endsWith("THE-END")).toBe(true);
      expect(stderr.endsWith(back.stderr.slice(1))).toBe(true); // "…" + a true tail
      expect(back.stderr).not.toContain("\uFFFD");
      expect(Buffer.byteLength(line)).toBeGreaterThan(MAX_LINE_BYTES - 8); // shortened, not emptied
      expect(parseManifest(line, "grex.jsonl").events).toHaveLength(1);
    }
  });

  test("a huge halted reason is shortened too, so the halt is always recorded", () => {
    const e = makeEvent("action_halted", "a", { action: "exec", idx: 0, reason: `why ${"r".repeat(3000)}`, stderr: "e".repeat(3000) });
    const back = JSON.parse(eventLine(e)) as { stderr: string; reason: string };
    expect(back.stderr).toBe("");
    expect(back.reason.startsWith("why r")).toBe(true);
  });

  test("other oversize events are refused (usage error, one sentence)", () => {
    const err = grexErr(() => eventLine(add("a", 1, { url: `https://h/${"x".repeat(MAX_LINE_BYTES)}` })));
    expect(err.kind).toBe("usage");
    expect(err.message).toContain("2048-byte line limit");
    oneSentence(err);
  });

  test("an invalid event is refused before it can reach the file", () => {
    for (const bad of [
      { ...add("a"), id: "a b" },
      { ...add("a"), ts: "now" },
      { ...add("a"), path: "../x" },
      makeEvent("action_started", "a", { action: "", idx: 0 }),
      makeEvent("action_started", "a", { action: "x", idx: -1 }),
    ] as ManifestEvent[]) {
      const err = grexErr(() => eventLine(bad));
      expect(err.kind).toBe("usage");
      oneSentence(err);
    }
  });
});

describe("appendEvents / readManifest", () => {
  test("appends whole lines that read back in order", async () => {
    const e1 = makeEvent("add", "a", { url: "https://h/a.git", path: "a", type: "meta", ref: null });
    const e2 = makeEvent("update", "a", { ref: "v1" });
    await appendEvents(ws, [e1]);
    await appendEvents(ws, [e2, makeEvent("sync", "a", {})]);
    // The sync marker is runtime state: it goes to the journal, not to grex.jsonl.
    expect(readFileSync(ws.manifestPath, "utf8").split("\n")).toHaveLength(3);
    expect(readFileSync(join(ws.stateDir, "journal.jsonl"), "utf8")).toContain('"op":"sync"');
    const { warnings, warn } = collect();
    const r = await readManifest(ws, { warn });
    // Each intent line names the line it supersedes (an add of a new id: none).
    expect(r.events).toEqual([{ ...e1, prev: [] }, { ...e2, prev: e1.ts }]);
    expect(r.state.get("a")?.ref).toBe("v1");
    expect(warnings).toEqual([]);
  });

  test("events are the same whether kept from the pass (keepEvents) or parsed on first access", async () => {
    const events = randomEvents(prng(99), 200);
    writeFileSync(ws.manifestPath, `${events.map(eventLine).join("")}{"op":"to`); // and a torn tail
    const lazy = await readManifest(ws, collect());
    writeFileSync(ws.manifestPath, `${events.map(eventLine).join("")}{"op":"to`);
    const kept = await readManifest(ws, { ...collect(), keepEvents: true });
    expect(lazy.events).toEqual(events);
    expect(kept.events).toEqual(events);
    expect(lazy.events).toBe(lazy.events); // parsed once
    expect(entries(lazy.state)).toEqual(entries(fold(events)));
    expect(entries(kept.state)).toEqual(entries(fold(events)));
  });

  test("the locked core batches appends inside one lock", async () => {
    await withManifestLock(ws, undefined, () => {
      appendEventsLocked(ws, [add("a", 1)]);
      appendEventsLocked(ws, [add("b", 2)]);
      expect([...readManifestLocked(ws, collect()).state.keys()]).toEqual(["a", "b"]);
    });
  });

  test("a bad event makes the whole batch fail before anything is written", async () => {
    const huge = add("b", 2, { url: `https://h/${"y".repeat(3000)}` });
    expect((await grexErrAsync(appendEvents(ws, [add("a", 1), huge]))).kind).toBe("usage");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe("");
  });

  test("no manifest: reading and appending are usage errors and create nothing; an empty batch is a no-op", async () => {
    const other = workspaceAt(tmp.make("grex-manifest-none-"));
    const err = await grexErrAsync(appendEvents(other, [add("a")]));
    expect(err.kind).toBe("usage");
    expect(err.message).toContain("grex init");
    expect(existsSync(other.manifestPath)).toBe(false);
    await appendEvents(other, []);
    expect(existsSync(other.manifestPath)).toBe(false);
    const readErr = await grexErrAsync(readManifest(other, collect()));
    expect(readErr.kind).toBe("usage");
    oneSentence(readErr);
  });

  test("an empty manifest is valid", async () => {
    const r = await readManifest(ws, collect());
    expect(r.events).toEqual([]);
    expect(r.state.size).toBe(0);
  });

  test("a torn tail is truncated away with one warning; the next read is silent", async () => {
    const good = lines(add("a", 1, { url: "https://h/ü.git" }), add("b", 2));
    writeFileSync(ws.manifestPath, `${good}{"op":"add","ts":"2026-01-01T00:00:03.000Z","id":"c","sch\u00e9`);
    const { warnings, warn } = collect();
    const r = await readManifest(ws, { warn });
    expect(r.events.map((e) => e.id)).toEqual(["a", "b"]);
    expect([...r.state.keys()]).toEqual(["a", "b"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("grex.jsonl ended in a partly written line");
    expect(warnings[0]).not.toContain("\n");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(good);

    const again = collect();
    await readManifest(ws, again);
    expect(again.warnings).toEqual([]);
  });

  test("a torn line in the middle (followed by more lines) is not repaired: integrity error naming the line", async () => {
    const text = `${lines(add("a"))}{"op":"ad\n${lines(add("b"))}`;
    writeFileSync(ws.manifestPath, text);
    const err = await grexErrAsync(readManifest(ws, collect()));
    expect(err.kind).toBe("integrity");
    expect(err.message).toContain("grex.jsonl line 2");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(text); // untouched
  });

  // A hand edit can leave a complete event without its "\n": the next append
  // must not glue its line onto it.
  test("appending after a complete last line that lacks its newline keeps both events", async () => {
    writeFileSync(ws.manifestPath, lines(add("a", 1)) + JSON.stringify(add("b", 2)));
    await appendEvents(ws, [add("c", 3)]);
    const p = parseManifest(readFileSync(ws.manifestPath, "utf8"), ws.manifestPath);
    expect(p.tornTail).toBe(false);
    expect(p.events.map((e) => e.id)).toEqual(["a", "b", "c"]);
  });

  // Another process may die mid-append after we read the manifest and before
  // we take the lock: the append must not bury the torn fragment mid-file.
  test("appending onto a torn tail drops the fragment (with a warning) instead of corrupting the log", async () => {
    const good = lines(add("a", 1));
    writeFileSync(ws.manifestPath, `${good}{"op":"add","ts":"x","id":"tor`);
    const { warnings, warn } = collect();
    await appendEvents(ws, [add("c", 3)], undefined, { warn });
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(good + lines({ ...add("c", 3), prev: [] }));
    expect(warnings).toHaveLength(1);
    const again = collect();
    expect((await readManifest(ws, again)).events.map((e) => e.id)).toEqual(["a", "c"]);
    expect(again.warnings).toEqual([]);
  });

  test("a cancelled append writes nothing", async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await grexErrAsync(appendEvents(ws, [add("a")], ac.signal));
    expect(err.kind).toBe("cancelled");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe("");
  });
});

// ---------------------------------------------------------------------------
// Property-style: random event sequences, seeded.


const IDS = ["a", "b", "c", "dev-env", "libs/themes", "x.y_z"];
const URLS = ["https://h/1.git", "git@h:org/2.git", "/abs/local/3", "https://h/ünï.git"];
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
      const u: Record<string, unknown> = { op: "update", ...env };
      if (rand() < 0.5) u.url = pick(URLS);
      if (rand() < 0.5) u.type = pick(TYPES);
      if (rand() < 0.5) u.ref = pick(REFS);
      out.push(u as ManifestEvent);
    } else if (r < 0.8) out.push({ op: "rm", ...env });
    else if (r < 0.86) out.push({ op: "sync", ...env });
    else if (r < 0.9) out.push({ op: "action_started", ...env, action: "mkdir", idx: Math.floor(rand() * 4) });
    else if (r < 0.95) out.push({ op: "action_completed", ...env, action: "mkdir", idx: Math.floor(rand() * 4), changed: rand() < 0.5 });
    else out.push({ op: "future_op", ...env, payload: { n: i } });
  }
  return out;
}

/** Independent reference model of the fold (SPEC §2.1 table + first-add order), written naively. */
function modelFold(events: readonly ManifestEvent[]): Array<[string, PackEntry]> {
  let live: PackEntry[] = [];
  for (const e of events) {
    const f = e as Record<string, unknown>;
    if (e.op === "add") {
      const p = { id: e.id, url: f.url as string, path: f.path as string, type: f.type as string, ref: (f.ref ?? null) as string | null };
      const at = live.findIndex((x) => x.id === e.id);
      if (at >= 0) live[at] = p;
      else live.push(p);
    } else if (e.op === "update") {
      live = live.map((p) =>
        p.id !== e.id
          ? p
          : {
              ...p,
              ...("url" in f ? { url: f.url as string } : {}),
              ...("type" in f ? { type: f.type as string } : {}),
              ...("ref" in f ? { ref: (f.ref ?? null) as string | null } : {}),
            },
      );
    } else if (e.op === "rm") live = live.filter((p) => p.id !== e.id);
  }
  return live.map((p) => [p.id, p]);
}

describe("property: fold, round trip and compaction (300 seeded sequences)", () => {
  test("fold matches the model; compaction keeps the fold, drops tombstones and is idempotent", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = prng(seed);
      const events = randomEvents(rand, Math.floor(rand() * 80));
      const state = fold(events);
      expect(entries(state)).toEqual(modelFold(events));

      // Serialise → parse gives back the same events.
      const parsed = parseManifest(events.map(eventLine).join(""), "grex.jsonl");
      expect(parsed.tornTail).toBe(false);
      expect(parsed.events).toEqual(events);

      const compact = compactText(events);
      const reparsed = parseManifest(compact, "grex.jsonl").events;
      expect(entries(fold(reparsed))).toEqual(entries(state));
      expect(reparsed.every((e) => e.op === "add")).toBe(true);
      expect(reparsed.map((e) => e.id)).toEqual([...state.keys()]);
      expect(compactText(reparsed)).toBe(compact);
      for (const id of IDS) if (!state.has(id)) expect(compact).not.toContain(`"id":"${id}"`);
      // Each compacted add carries the time of the last add/update that shaped that pack.
      for (const e of reparsed) {
        const last = events.filter((x) => x.id === e.id && (x.op === "add" || x.op === "update")).at(-1);
        expect(e.ts).toBe(last?.ts as string);
      }
    }
  });

  test("the fast read-side check agrees with the valibot schema", () => {
    const rand = prng(777);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
    const junk: unknown[] = [undefined, null, "", "x", "a b", "../up", "/abs", 0, -1, 1.5, 3, true, [], {}, "2026-01-01", ts(1), "main", [ts(2)], [ts(1), "x"]];
    const fields = ["op", "ts", "id", "url", "path", "type", "ref", "action", "idx", "changed", "reason", "stderr", "prev"];
    let accepted = 0;
    let rejected = 0;
    for (let i = 0; i < 3000; i++) {
      const base = { ...(pick(randomEvents(rand, 8)) as Record<string, unknown>) };
      if (base.op === "future_op" && rand() < 0.3) base.op = pick(["add", "rm", "action_halted", "sync"]);
      const mutations = Math.floor(rand() * 3);
      for (let m = 0; m < mutations; m++) {
        const f = pick(fields);
        const val = pick(junk);
        if (val === undefined) delete base[f];
        else base[f] = val;
      }
      const fast = checkEvent(base) === null;
      const schema = v.is(ManifestEventSchema, base);
      if (fast !== schema) throw new Error(`disagree (fast ${fast}, schema ${schema}) on ${JSON.stringify(base)}`);
      if (fast) accepted++;
      else rejected++;
    }
    expect(accepted).toBeGreaterThan(300);
    expect(rejected).toBeGreaterThan(300);
  });
});

describe("compactManifest (file)", () => {
  test("rewrites the file to the compact form by rename; a second run is byte-identical", async () => {
    const events = randomEvents(prng(4242), 300);
    writeFileSync(ws.manifestPath, events.map(eventLine).join(""));
    const before = fold(events);
    const r1 = await compactManifest(ws);
    expect(r1).toEqual({ linesBefore: 300, linesAfter: before.size });
    const once = readFileSync(ws.manifestPath, "utf8");
    expect(once).toBe(compactText(events));
    expect(entries((await readManifest(ws, collect())).state)).toEqual(entries(before));
    const ino = statSync(ws.manifestPath).ino;
    await compactManifest(ws);
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(once);
    expect(statSync(ws.manifestPath).ino).not.toBe(ino); // temp + rename, never in place
    expect(readdirSync(ws.root).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  test("an all-removed log compacts to an empty file; a torn tail is dropped with a warning", async () => {
    writeFileSync(ws.manifestPath, `${lines(add("a", 1), rm("a", 2))}{"op":"ad`);
    const { warnings, warn } = collect();
    await compactManifest(ws, undefined, { warn });
    expect(readFileSync(ws.manifestPath, "utf8")).toBe("");
    expect(warnings).toHaveLength(1);
  });

  test("a corrupt log is not compacted", async () => {
    const text = `${lines(add("a"))}{bad\n${lines(add("b"))}`;
    writeFileSync(ws.manifestPath, text);
    expect((await grexErrAsync(compactManifest(ws))).kind).toBe("integrity");
    expect(readFileSync(ws.manifestPath, "utf8")).toBe(text);
  });
});
