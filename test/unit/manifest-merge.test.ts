// grex.jsonl under a union merge: any interleaving of two branches' appended
// lines (each branch's own order kept, lines possibly repeated) folds to the
// union of what each branch did; two branches changing the same pack are
// found as a divergence, and a later line superseding both resolves it.
import { describe, expect, test } from "bun:test";
import { chainEvents, divergences } from "../../src/core/workspace/manifest-conflicts.ts";
import { fold, type ManifestEvent, makeEvent, type PackEntry } from "../../src/core/workspace/manifest.ts";
import { prng } from "../helpers/prng.ts";

const TS0 = Date.UTC(2026, 0, 1);
let clock = 0;
const tick = () => new Date(TS0 + ++clock * 1000).toISOString();

function addEv(id: string, ref: string | null = null): ManifestEvent {
  return makeEvent("add", id, { url: `https://h/${id}.git`, path: id, type: "meta", ref }, tick());
}

/** Random intent for one branch: adds of its own new ids, re-pins and removals of its own ids or of base ids it owns. */
function branchOps(rand: () => number, history: ManifestEvent[], own: string[], prefix: string, n: number): ManifestEvent[] {
  const out: ManifestEvent[] = [];
  const live = new Set(own.filter((id) => fold(history).has(id)));
  let fresh = 0;
  for (let i = 0; i < n; i++) {
    const r = rand();
    let e: ManifestEvent;
    const pick = [...live][Math.floor(rand() * live.size)];
    if (r < 0.4 || pick === undefined) {
      const id = `${prefix}${fresh++}`;
      own.push(id);
      e = addEv(id, rand() < 0.5 ? null : `v${Math.floor(rand() * 3)}`);
      live.add(id);
    } else if (r < 0.8) {
      e = makeEvent("update", pick, { ref: `v${Math.floor(rand() * 9)}` }, tick());
    } else {
      e = makeEvent("rm", pick, {}, tick());
      live.delete(pick);
    }
    // Written the way grex writes: chained to what this branch's log holds.
    const [chained] = chainEvents([...history, ...out], [e]);
    out.push(chained as ManifestEvent);
  }
  return out;
}

/** A random interleaving of a and b keeping each one's order, with some lines repeated. */
function interleave(rand: () => number, a: ManifestEvent[], b: ManifestEvent[]): ManifestEvent[] {
  const out: ManifestEvent[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const takeA = j >= b.length || (i < a.length && rand() < 0.5);
    const e = takeA ? (a[i++] as ManifestEvent) : (b[j++] as ManifestEvent);
    out.push(e);
    if (rand() < 0.1) out.push(e); // a repeated line (a line both sides carry) changes nothing
  }
  return out;
}

const sorted = (m: Map<string, PackEntry>) => [...m.values()].sort((x, y) => x.id.localeCompare(y.id));

describe("union merge of grex.jsonl", () => {
  test("property: any interleaving of two branches' lines folds to the union of the branches", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = prng(seed);
      const base = chainEvents([], [addEv("base-a"), addEv("base-b"), addEv("base-c"), addEv("base-d")]);
      // Each branch owns some base packs (and all it adds): disjoint changes.
      const ownA = ["base-a", "base-b"];
      const ownB = ["base-c"];
      const a = branchOps(rand, base, ownA, "a", 1 + Math.floor(rand() * 8));
      const b = branchOps(rand, base, ownB, "b", 1 + Math.floor(rand() * 8));
      const foldA = fold([...base, ...a]);
      const foldB = fold([...base, ...b]);
      const want = new Map<string, PackEntry>();
      for (const [id, p] of fold(base)) if (!ownA.includes(id) && !ownB.includes(id)) want.set(id, p);
      for (const id of ownA) if (foldA.has(id)) want.set(id, foldA.get(id) as PackEntry);
      for (const id of ownB) if (foldB.has(id)) want.set(id, foldB.get(id) as PackEntry);
      for (let k = 0; k < 5; k++) {
        const merged = [...base, ...interleave(rand, a, b)];
        expect({ seed, packs: sorted(fold(merged)) }).toEqual({ seed, packs: sorted(want) });
        expect({ seed, conflicts: divergences(merged) }).toEqual({ seed, conflicts: [] });
      }
    }
  });

  test("property: two branches re-pinning the same pack differently are a divergence in every interleaving", () => {
    for (let seed = 1; seed <= 100; seed++) {
      const rand = prng(seed);
      const base = chainEvents([], [addEv("tools", "v1"), addEv("other")]);
      const a = branchOps(rand, base, ["other"], "a", Math.floor(rand() * 4));
      const pinA = chainEvents([...base, ...a], [makeEvent("update", "tools", { ref: "v2" }, tick())]);
      const pinB = chainEvents(base, [makeEvent("update", "tools", { ref: "v3" }, tick())]);
      const merged = [...base, ...interleave(rand, [...a, ...pinA], pinB)];
      const found = divergences(merged);
      expect(found.map((d) => [d.id, d.field])).toEqual([["tools", "ref"]]);
      expect(found[0]?.sides.join(" ")).toContain("'v2'");
      expect(found[0]?.sides.join(" ")).toContain("'v3'");
      // The user's choice supersedes both heads: resolved.
      const resolved = [...merged, ...chainEvents(merged, [makeEvent("update", "tools", { ref: "v3" }, tick())])];
      expect(divergences(resolved)).toEqual([]);
      expect(fold(resolved).get("tools")?.ref).toBe("v3");
    }
  });

  test("the same change on both branches, or changes to different fields, is no conflict", () => {
    const base = chainEvents([], [addEv("tools", "v1")]);
    const same1 = chainEvents(base, [makeEvent("update", "tools", { ref: "v2" }, tick())]);
    const same2 = chainEvents(base, [makeEvent("update", "tools", { ref: "v2" }, tick())]);
    expect(divergences([...base, ...same1, ...same2])).toEqual([]);
    const url = chainEvents(base, [makeEvent("update", "tools", { url: "https://h/moved.git" }, tick())]);
    expect(divergences([...base, ...same1, ...url])).toEqual([]);
  });

  test("a removal on one branch beside a re-pin on the other is a conflict; two adds of one id with different URLs too", () => {
    const base = chainEvents([], [addEv("tools", "v1")]);
    const removed = chainEvents(base, [makeEvent("rm", "tools", {}, tick())]);
    const pinned = chainEvents(base, [makeEvent("update", "tools", { ref: "v2" }, tick())]);
    expect(divergences([...base, ...removed, ...pinned]).map((d) => d.field)).toEqual(["rm"]);
    const a = chainEvents([], [makeEvent("add", "x", { url: "https://h/one.git", path: "x", type: "meta", ref: null }, tick())]);
    const b = chainEvents([], [makeEvent("add", "x", { url: "https://h/two.git", path: "x", type: "meta", ref: null }, tick())]);
    expect(divergences([...a, ...b]).map((d) => [d.id, d.field])).toEqual([["x", "url"]]);
  });

  test("lines without `prev` (older grex, Rust grex, a compacted log) are a linear history: never a conflict", () => {
    const strip = (e: ManifestEvent) => {
      const { prev: _prev, ...rest } = e as ManifestEvent & { prev?: unknown };
      return rest as ManifestEvent;
    };
    const base = [addEv("tools", "v1")];
    const events = [...base, makeEvent("update", "tools", { ref: "v2" }, tick()), makeEvent("update", "tools", { ref: "v3" }, tick())].map(strip);
    expect(divergences(events)).toEqual([]);
    expect(fold(events).get("tools")?.ref).toBe("v3");
  });
});
