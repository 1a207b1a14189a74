// Bun collects garbage on its own schedule, which lets hundreds of megabytes
// of dead buffers pile up while grex reads a large repository object by
// object (indexing a pack, a checkout, a connectivity walk). Counting the
// bytes read and collecting after every GARBAGE_BYTES keeps the peak near
// what is live; a full collection costs a few milliseconds when the live heap
// is small, so it is done by bytes, never per object.
const GARBAGE_BYTES = 24 * 1024 * 1024;

/**
 * Bytes of garbage to count per object read, besides its data (its id,
 * hasher, header, inflate result, parsed fields): a history's many small
 * commits and trees would otherwise pile up tens of megabytes unseen.
 */
export const PER_OBJECT_GARBAGE = 1024;

export class Collector {
  private bytes = 0;
  /** Count `n` bytes of new garbage; collect when enough has piled up. */
  add(n: number): void {
    this.bytes += n;
    if (this.bytes >= GARBAGE_BYTES) {
      this.bytes = 0;
      Bun.gc(true);
    }
  }
}
