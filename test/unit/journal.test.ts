// The runtime journal (.grex/.state/journal.jsonl): where sync markers and
// action brackets go, how it survives a torn append, stays bounded, and joins
// the events an older grex left in grex.jsonl for crash recovery.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import {
  appendJournalLocked,
  interruptedWithJournal,
  JOURNAL_COMPACT_BYTES,
  journalPath,
  readJournal,
  runtimeEvents,
} from "../../src/core/workspace/journal.ts";
import { withManifestLock } from "../../src/core/locks/locks.ts";
import { compactManifest } from "../../src/core/workspace/manifest-compact.ts";
import { appendEvents, eventLine, type ManifestEvent, makeEvent, readManifest } from "../../src/core/workspace/manifest.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
let ws: Workspace;
beforeEach(() => {
  ws = workspaceAt(tmp.make("grex-journal-"));
  writeFileSync(ws.manifestPath, "");
});
afterEach(() => tmp.cleanup());

const TS0 = Date.UTC(2026, 0, 1);
const ts = (i: number) => new Date(TS0 + i * 1000).toISOString();
const add = (id: string, i: number) => makeEvent("add", id, { url: `https://h/${id}.git`, path: id, type: "declarative", ref: null }, ts(i));
const started = (id: string, idx: number, i: number) => makeEvent("action_started", id, { action: "mkdir", idx }, ts(i));
const completed = (id: string, idx: number, i: number) => makeEvent("action_completed", id, { action: "mkdir", idx, changed: true }, ts(i));
const synced = (id: string, i: number) => makeEvent("sync", id, {}, ts(i));
const collect = () => {
  const warnings: string[] = [];
  return { warnings, warn: (m: string) => void warnings.push(m) };
};

describe("routing", () => {
  test("intent goes to grex.jsonl, sync markers and action brackets to the journal", async () => {
    await appendEvents(ws, [add("a", 0), started("a", 0, 1), completed("a", 0, 2), started("a", 1, 3)]);
    const manifest = readFileSync(ws.manifestPath, "utf8");
    expect(manifest.trim().split("\n").map((l) => JSON.parse(l).op)).toEqual(["add"]);
    expect(readJournal(ws).map((e) => e.op)).toEqual(["action_started", "action_completed", "action_started"]);
    expect([...(await readManifest(ws, collect())).interrupted]).toEqual(["a"]);
    // The end of a sync (its markers) rewrites the journal down to what is still worth keeping.
    const halted = makeEvent("action_halted", "a", { action: "exec", idx: 1, reason: "exit 1", stderr: "" }, ts(4));
    await appendEvents(ws, [halted, synced("b", 5)]);
    expect(readJournal(ws).map((e) => e.op)).toEqual(["action_halted", "sync"]);
    expect([...(await readManifest(ws, collect())).interrupted]).toEqual([]);
  });

  test("runtime-only appends leave grex.jsonl byte for byte (and its mtime) as it was", async () => {
    await appendEvents(ws, [add("a", 0)]);
    const before = readFileSync(ws.manifestPath);
    const mtime = statSync(ws.manifestPath).mtimeMs;
    for (let i = 1; i <= 10; i++) await appendEvents(ws, [synced("a", i)]);
    expect(readFileSync(ws.manifestPath)).toEqual(before);
    expect(statSync(ws.manifestPath).mtimeMs).toBe(mtime);
    expect(readJournal(ws)).toEqual([synced("a", 10)]); // each pack's last marker is all recovery needs
  });
});

describe("durability", () => {
  test("a torn last line is skipped on read and cut away (with a warning) by the next append", async () => {
    await appendEvents(ws, [started("a", 0, 1)]);
    appendFileSync(journalPath(ws), '{"op":"action_completed","ts":"2026-01-01T00:0');
    const r = collect();
    expect(readJournal(ws, r).map((e) => e.op)).toEqual(["action_started"]);
    expect(r.warnings).toEqual([]);
    const w = collect();
    await appendEvents(ws, [completed("a", 0, 2)], undefined, w);
    expect(w.warnings.join("\n")).toContain("partly written line");
    expect(readFileSync(journalPath(ws), "utf8")).toBe(eventLine(started("a", 0, 1)) + eventLine(completed("a", 0, 2)));
  });

  test("a line that is no runtime event is skipped with one warning, never fatal", () => {
    mkdirSync(ws.stateDir, { recursive: true });
    writeFileSync(journalPath(ws), `not json\n${eventLine(synced("a", 1))}{"op":"add"}\n`);
    const r = collect();
    expect(readJournal(ws, r).map((e) => e.op)).toEqual(["sync"]);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toContain("2 unreadable lines");
  });

  test("no journal reads as empty", () => {
    expect(readJournal(ws)).toEqual([]);
    expect(existsSync(journalPath(ws))).toBe(false);
  });

  test("past its bound the journal is rewritten down to open brackets and each pack's last marker", async () => {
    const line = eventLine(synced("a", 0)).length;
    const n = Math.ceil(JOURNAL_COMPACT_BYTES / line) + 10;
    await appendEvents(ws, [started("b", 3, 0)]); // stays open: must survive compaction
    // A journal grown by many earlier runs (written at once: thousands of fsync'd appends would be slow).
    let grown = "";
    for (let i = 1; i <= n; i++) grown += eventLine(synced(i % 2 === 0 ? "a" : "c", i));
    appendFileSync(journalPath(ws), grown);
    await withManifestLock(ws, undefined, () => appendJournalLocked(ws, [eventLine(synced("a", n + 1))]));
    const left = readJournal(ws);
    expect(statSync(journalPath(ws)).size).toBeLessThan(JOURNAL_COMPACT_BYTES);
    expect(left.map((e) => `${e.op}:${e.id}`).sort()).toEqual(["action_started:b", "sync:a", "sync:c"]);
    expect(interruptedWithJournal(ws, new Set(), () => [])).toEqual(new Set(["b"]));
  });
});

describe("crash recovery across old and new workspaces", () => {
  const legacyOpen: ManifestEvent[] = [add("a", 0), add("b", 1), started("a", 0, 2), started("b", 0, 3), completed("b", 0, 4)];

  test("brackets an older grex left open in grex.jsonl read the same (no journal)", async () => {
    writeFileSync(ws.manifestPath, legacyOpen.map(eventLine).join(""));
    const m = await readManifest(ws, { ...collect(), keepEvents: true });
    expect([...m.interrupted]).toEqual(["a"]);
    expect(runtimeEvents(ws, m.events).map((e) => e.op)).toEqual(["action_started", "action_started", "action_completed"]);
  });

  test("a journal sync marker closes an old open bracket; the journal's own open brackets count", async () => {
    writeFileSync(ws.manifestPath, legacyOpen.map(eventLine).join(""));
    await appendEvents(ws, [synced("a", 5), started("b", 1, 6)]);
    const m = await readManifest(ws, collect());
    expect([...m.interrupted].sort()).toEqual(["b"]);
    const m2 = await readManifest(ws, { ...collect(), keepEvents: true });
    expect([...m2.interrupted].sort()).toEqual(["b"]);
  });

  test("doctor --compact moves runtime events out of grex.jsonl and keeps what recovery needs", async () => {
    writeFileSync(ws.manifestPath, [...legacyOpen, synced("b", 5)].map(eventLine).join(""));
    const before = await readManifest(ws, collect());
    await compactManifest(ws);
    const text = readFileSync(ws.manifestPath, "utf8");
    expect(text).not.toContain('"op":"action_');
    expect(text).not.toContain('"op":"sync"');
    const after = await readManifest(ws, collect());
    expect(after.interrupted).toEqual(before.interrupted);
    expect([...after.state.keys()]).toEqual(["a", "b"]);
    expect(readJournal(ws).map((e) => `${e.op}:${e.id}`)).toEqual(["action_started:a", "sync:b"]);
  });
});
