// Copying objects from a local source's store into ours, the local
// transport's primitives: loose (a few, in an order where nothing is written
// before what it names) or streamed into one new pack (many, one object in
// memory at a time), and the annotated tag objects a followed tag needs.
import { throwIfAborted } from "../../base/errors.ts";
import { Collector, PER_OBJECT_GARBAGE } from "../objects/garbage.ts";
import { ObjectPresence } from "../objects/objects.ts";
import { ObjectStore, type ObjectType, writeLooseObjects } from "../objects/object-store.ts";
import { storePackStream } from "../objects/pack-index.ts";
import { packStream } from "../objects/pack-write.ts";
import { taggedObject } from "./shallow-refs.ts";

/** Up to this many missing objects (a few new commits) are copied as loose objects instead of a new pack. */
export const LOOSE_LIMIT = 256;

/** An object to copy: its name and (for ordering loose writes) its type. */
export interface Wanted {
  oid: string;
  type: ObjectType;
}

/** Loose objects in an order where a commit is written after everything it names: a kill in between leaves no commit without its tree. */
export function commitsLast<T extends { type: string }>(objects: T[]): T[] {
  const rank: Record<string, number> = { blob: 0, tree: 1, commit: 2, tag: 3 };
  const out = [...objects];
  // Trees: reversed walk order puts most subtrees first; commits: oldest first.
  out.reverse();
  return out.sort((a, b) => (rank[a.type] ?? 0) - (rank[b.type] ?? 0));
}

/** Copy `objects` from `store` as loose objects, one in memory at a time; false when one is unreadable there. */
export function copyLoose(store: ObjectStore, destGitdir: string, objects: Wanted[]): boolean {
  const gc = new Collector();
  for (const { oid } of objects) {
    const obj = store.read(oid);
    if (!obj) return false;
    writeLooseObjects(destGitdir, [{ oid, ...obj }]);
    gc.add(3 * obj.data.length + PER_OBJECT_GARBAGE); // read, framed and compressed: dead once written
  }
  return true;
}

/**
 * Copy `objects` from `store` as one new pack of whole (undeltified) entries,
 * produced as it is stored: read, compressed and written one object at a
 * time, then indexed and verified like a received pack (`promisor`: marked
 * as a partial clone's, `.promisor`). False when one is unreadable there
 * (nothing is kept).
 */
export async function streamPack(store: ObjectStore, destGitdir: string, objects: Wanted[], signal: AbortSignal, promisor?: string): Promise<boolean> {
  let i = 0;
  let unreadable = false;
  const source = packStream(objects.length, () => {
    if (i % 256 === 0) throwIfAborted(signal);
    const w = objects[i++] as Wanted;
    const obj = store.read(w.oid);
    if (!obj) unreadable = true;
    return obj;
  });
  const dest = new ObjectStore(destGitdir);
  try {
    await storePackStream(destGitdir, source, { store: dest, keepPack: true, signal, ...(promisor !== undefined ? { promisor } : {}) });
    return true;
  } catch (err) {
    if (unreadable) return false;
    throw err;
  } finally {
    dest.close();
  }
}

/**
 * The annotated tag objects among `tags` whose tagged object is here (for a
 * tag of a tag, each tag object of the chain), copied loose, innermost first:
 * what upload-pack's include-tag sends along, so the tags can be followed.
 */
export function copyTagObjects(srcGitdir: string, destGitdir: string, tags: ReadonlyMap<string, string>): void {
  const presence = new ObjectPresence(destGitdir);
  const store = new ObjectStore(srcGitdir);
  try {
    for (const oid of new Set(tags.values())) {
      const chain: Wanted[] = [];
      let at: string | null = oid;
      while (at !== null && !presence.has(at) && chain.length < 16) {
        const o = store.read(at);
        if (o?.type !== "tag") {
          at = null;
          break;
        }
        chain.push({ oid: at, type: "tag" });
        at = taggedObject(o.data);
      }
      if (chain.length > 0 && at !== null && presence.has(at)) copyLoose(store, destGitdir, chain.reverse());
    }
  } finally {
    store.close();
  }
}
