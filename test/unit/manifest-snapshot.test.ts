// The fold snapshot of a long grex.jsonl (.grex/.state/manifest-fold.json) is
// only an accelerator: used for exactly the text it was made from, ignored
// otherwise (any edit, even one that keeps the size and the mtime), never
// written after a torn tail, never fatal when it cannot be written, and the
// commands read the same with or without it. Real files in temp dirs.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeEvent, type PackEntry, readManifest } from "../../src/core/workspace/manifest.ts";
import { SNAPSHOT_MIN_CHARS, snapshotPath } from "../../src/core/workspace/manifest-snapshot.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";
import { TestWorkspace } from "../helpers/workspace.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
let ws: Workspace;
const warnings: string[] = [];
const opts = { warn: (m: string) => void warnings.push(m) };

/** `n` add events (long enough for a snapshot when n ≥ ~400), ids pack-0…; `extra` lines after them. */
function manifestText(n: number, extra: string[] = []): string {
  let text = "";
  for (let i = 0; i < n; i++) {
    const e = makeEvent("add", `pack-${i}`, { url: `https://example.invalid/pack-${i}.git`, path: `pack-${i}`, type: "meta", ref: null }, "2026-01-01T00:00:00.000Z");
    text += `${JSON.stringify(e)}\n`;
  }
  return text + extra.map((l) => `${l}\n`).join("");
}

const entries = (state: Map<string, PackEntry>) => [...state.values()];
const snapshotDoc = () => JSON.parse(readFileSync(snapshotPath(ws), "utf8")) as { format: number; key: string; packs: PackEntry[] };

beforeEach(() => {
  ws = workspaceAt(tmp.make("grex-snapshot-"));
  warnings.length = 0;
});
afterEach(() => tmp.cleanup());

describe("manifest fold snapshot", () => {
  test("a long manifest gets one; the next read uses it and returns the same fold", async () => {
    writeFileSync(ws.manifestPath, manifestText(1000));
    expect(readFileSync(ws.manifestPath, "utf8").length).toBeGreaterThanOrEqual(SNAPSHOT_MIN_CHARS);
    const first = await readManifest(ws, opts);
    expect(existsSync(snapshotPath(ws))).toBe(true);
    const second = await readManifest(ws, opts);
    expect(first.ordered).toBeUndefined(); // folded: the map is the result
    expect(second.ordered).toEqual(entries(first.state)); // from the snapshot: the packs in fold order...
    expect(entries(second.state)).toEqual(entries(first.state)); // ...and the same map when asked for
    expect(second.state.size).toBe(1000);
    // The events are still there, parsed from the text on demand.
    expect(second.events.length).toBe(1000);
    expect(warnings).toEqual([]);
  });

  test("it is trusted only for the exact text: an append or a same-size edit with the old mtime refolds", async () => {
    writeFileSync(ws.manifestPath, manifestText(1000));
    await readManifest(ws, opts);
    // Tamper with the snapshot's content, keeping its key: a read of the same text now shows the tampering,
    // which proves the snapshot is what answers...
    const doc = snapshotDoc();
    (doc.packs[0] as PackEntry).url = "https://example.invalid/from-snapshot.git";
    writeFileSync(snapshotPath(ws), JSON.stringify(doc));
    expect((await readManifest(ws, opts)).state.get("pack-0")?.url).toBe("https://example.invalid/from-snapshot.git");

    // ...and any change to the text makes it ignored.
    const before = statSync(ws.manifestPath);
    const text = readFileSync(ws.manifestPath, "utf8").replace("pack-0.git", "pack-X.git");
    writeFileSync(ws.manifestPath, text);
    utimesSync(ws.manifestPath, before.atime, before.mtime);
    expect(statSync(ws.manifestPath).size).toBe(before.size);
    expect((await readManifest(ws, opts)).state.get("pack-0")?.url).toBe("https://example.invalid/pack-X.git");

    appendFileSync(ws.manifestPath, `${JSON.stringify(makeEvent("rm", "pack-1", {}))}\n`);
    const after = await readManifest(ws, opts);
    expect(after.state.has("pack-1")).toBe(false);
    expect(after.state.size).toBe(999);
    expect(snapshotDoc().packs.length).toBe(999); // rewritten for the new text
  });

  test("a snapshot that is garbage, of another format or not an object is ignored and replaced", async () => {
    writeFileSync(ws.manifestPath, manifestText(500));
    await readManifest(ws, opts);
    const good = snapshotDoc();
    for (const bad of ["{not json", "null", "[]", JSON.stringify({ ...good, format: 999, packs: [] }), JSON.stringify({ ...good, packs: "x" })]) {
      writeFileSync(snapshotPath(ws), bad);
      const r = await readManifest(ws, opts);
      expect(r.state.size).toBe(500);
      expect(snapshotDoc()).toEqual(good);
    }
  });

  test("the packs whose install was cut short come with the fold, from the text and from the snapshot alike", async () => {
    const bracket = (op: string, id: string, idx: number) => JSON.stringify({ op, ts: "2026-01-01T00:00:00Z", id, schema_version: "1", action: "exec", idx, ...(op === "action_completed" ? { changed: true } : {}) });
    const lines = [
      bracket("action_started", "pack-1", 0), // never closed: interrupted
      bracket("action_started", "pack-2", 0),
      bracket("action_completed", "pack-2", 0), // closed
      bracket("action_started", "pack-3", 4),
      JSON.stringify(makeEvent("sync", "pack-3", {})), // a later sync closes it
    ];
    for (const long of [false, true]) {
      writeFileSync(ws.manifestPath, manifestText(long ? 600 : 20, lines));
      const folded = await readManifest(ws, opts);
      expect([...folded.interrupted]).toEqual(["pack-1"]);
      const again = await readManifest(ws, opts);
      expect(again.ordered !== undefined).toBe(long); // the second read of a long manifest comes from the snapshot
      expect([...again.interrupted]).toEqual(["pack-1"]);
      const events = (await readManifest(ws, { ...opts, keepEvents: true })).interrupted;
      expect([...events]).toEqual(["pack-1"]);
    }
    // A snapshot without the interrupted list (an older format) is not used.
    const doc = snapshotDoc() as unknown as Record<string, unknown>;
    delete doc.interrupted;
    writeFileSync(snapshotPath(ws), JSON.stringify(doc));
    const fresh = await readManifest(ws, opts);
    expect(fresh.ordered).toBeUndefined();
    expect([...fresh.interrupted]).toEqual(["pack-1"]);
  });

  test("a short manifest gets none", async () => {
    writeFileSync(ws.manifestPath, manifestText(20));
    await readManifest(ws, opts);
    expect(existsSync(snapshotPath(ws))).toBe(false);
  });

  test("a bad line is still reported when an older snapshot exists", async () => {
    writeFileSync(ws.manifestPath, manifestText(500));
    await readManifest(ws, opts);
    appendFileSync(ws.manifestPath, '{"op":"add","id":"x"}\n');
    await expect(readManifest(ws, opts)).rejects.toThrow(/line 501/);
  });

  test("no snapshot after a torn tail (which is repaired as before)", async () => {
    writeFileSync(ws.manifestPath, `${manifestText(500)}{"op":"add","ts":"2026`);
    const r = await readManifest(ws, opts);
    expect(r.state.size).toBe(500);
    expect(existsSync(snapshotPath(ws))).toBe(false);
    expect(warnings.join("\n")).toContain("partly written line");
  });

  test("a state directory that cannot be written is no error and no warning", async () => {
    writeFileSync(ws.manifestPath, manifestText(500));
    mkdirSync(join(ws.root, ".grex"));
    writeFileSync(ws.stateDir, "a file where the directory should be");
    const r = await readManifest(ws, opts);
    expect(r.state.size).toBe(500);
    expect(warnings).toEqual([]);
  });

  test("callers that keep the events fold the text themselves", async () => {
    writeFileSync(ws.manifestPath, manifestText(500));
    await readManifest(ws, opts);
    const doc = snapshotDoc();
    (doc.packs[0] as PackEntry).type = "from-snapshot";
    writeFileSync(snapshotPath(ws), JSON.stringify(doc));
    const r = await readManifest(ws, { ...opts, keepEvents: true });
    expect(r.state.get("pack-0")?.type).toBe("meta");
    expect(r.events.length).toBe(500);
  });
});

describe("grex ls with and without the snapshot", () => {
  let t: TestWorkspace;
  beforeEach(() => {
    t = new TestWorkspace("grex-snapshot-cli-");
  });
  afterEach(() => t.cleanup());

  test("prints the same bytes", async () => {
    writeFileSync(join(t.ws, "grex.jsonl"), manifestText(600, [JSON.stringify(makeEvent("update", "pack-3", { ref: "v1" })), JSON.stringify(makeEvent("rm", "pack-5", {}))]));
    const cold = await t.grex("ls", "--json");
    const snap = join(t.ws, ".grex", ".state", "manifest-fold.json");
    expect(existsSync(snap)).toBe(true);
    const warm = await t.grex("ls", "--json");
    expect(warm).toEqual(cold);
    expect(cold.code).toBe(0);
    expect((cold.json.packs as unknown[]).length).toBe(599);
    rmSync(snap);
    for (const args of [["ls"], ["ls", "--long", "--filter", "pack-3*"]]) {
      const a = await t.grex(...args);
      const b = await t.grex(...args);
      expect(b).toEqual(a);
    }
  });
});
