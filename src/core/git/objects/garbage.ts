// Bun collects garbage on its own schedule, which lets hundreds of megabytes
// of dead buffers pile up while grex reads a large repository object by
// object (indexing a pack, a checkout, a connectivity walk). Counting the
// bytes read and collecting by bytes keeps the peak near what is live: the
// young generation, where nearly all of this garbage dies, every
// YOUNG_BYTES (cheap: it scans only what is new), the whole heap every
// FULL_BYTES for what survived one collection. Never per object.
// Measured on a 312 MB pack: a full collection every 24 MiB alone peaked at
// 121-130 MB in 7.2-8.4 s; with young ones every 2 MiB, 113-114 MB in 6.7-7.7 s.
const YOUNG_BYTES = 2 * 1024 * 1024;
const FULL_BYTES = 32 * 1024 * 1024;
/** Garbage counted since the last full collection below which a step's end does not collect (`collectAtBoundary`). */
const BOUNDARY_BYTES = 16 * 1024 * 1024;

/**
 * Bytes of garbage to count per object read, besides its data (its id,
 * hasher, header, inflate result, parsed fields): a history's many small
 * commits and trees would otherwise pile up tens of megabytes unseen.
 */
export const PER_OBJECT_GARBAGE = 1024;

/**
 * Bytes of garbage counted process-wide since the last full collection (all
 * packs of a sync together: one full collection frees every pack's garbage).
 */
let sinceFull = 0;

export class Collector {
  private young = 0;
  private full = 0;
  /** Count `n` bytes of new garbage; collect when enough has piled up. */
  add(n: number): void {
    this.young += n;
    sinceFull += n;
    if (this.young < YOUNG_BYTES) return;
    this.full += this.young;
    this.young = 0;
    if (this.full >= FULL_BYTES) {
      this.full = 0;
      fullCollection();
    } else Bun.gc(false);
  }
}

function fullCollection(): void {
  sinceFull = 0;
  Bun.gc(true);
}

/**
 * A full collection at the end of a step that leaves much garbage behind (a
 * pack's delta resolution before its index is built, a clone's fetch before
 * its checkout allocates), so that the two peaks never add up; skipped while
 * less than BOUNDARY_BYTES were counted since the last one. A full collection
 * blocks every pack of a sync for milliseconds (tens of them with 8 clones in
 * flight), and a small pack's garbage is well below what Bun collects on its own.
 */
export function collectAtBoundary(): void {
  if (sinceFull >= BOUNDARY_BYTES) fullCollection();
}

/**
 * Entries (of a tree, an index) from which a step's leftovers are collected
 * before the next step allocates: on a large work tree, each step of a
 * checkout (tree walks, file writes, the index) leaves tens of megabytes of
 * dead objects that Bun would otherwise keep until after the next step's
 * peak. A small one's are not worth a full collection (a few milliseconds,
 * per pack, in a sync of hundreds).
 */
export const LARGE_TREE = 4096;

/** Collect everything dead now when `entries` says the step just done was large. */
export function collectAfter(entries: number): void {
  if (entries >= LARGE_TREE) fullCollection();
}
