// The one seam between a report's dirty check and anything that may know its
// answer already: `inspectPack` (sync/pack-status.ts) asks the installed
// oracle, if any, instead of scanning the work tree itself. `grex serve`
// installs its resident watcher (resident-status.ts); a `grex status` run
// beside a running server installs a client that asks it over the workspace's
// socket (resident-client.ts). Everything else a report says (HEAD, refs, the
// lockfile, setup drift) is read fresh either way, and an oracle that cannot
// vouch for an answer runs the scan it is handed, so the answer is the scan's.

/** What a dirty check of one pack needs: the same facts the scan is given. */
export interface DirtyQuery {
  /** The pack's work tree (absolute). */
  dir: string;
  /** Its git dir, as the caller resolved it. */
  gitdir: string;
  /** HEAD's commit as the caller read it, or null. */
  head: string | null;
  /** The pack's URL (which backend scans it), or "". */
  url: string;
  /** The workspace's state directory (`.grex/.state`). */
  stateDir: string;
  /** The status cache file of the pack (status-cache.ts). */
  statusCache: string;
}

/** One pack a resident server was asked about: watched, or scanned on every report and why. */
export interface WatchReport {
  dir: string;
  resident: boolean;
  reason: string | null;
}

export interface DirtyOracle {
  /** Whether the pack's work tree has changes: known, or `scan()`'s answer. */
  dirty(q: DirtyQuery, scan: () => Promise<boolean>): Promise<boolean>;
  /** The packs the resident server watches or scans (doctor), or null when no server answers. */
  watchReport(stateDir: string): Promise<WatchReport[] | null>;
}

let installed: DirtyOracle | null = null;

/** Install (or, with null, remove) this process's oracle. */
export function setDirtyOracle(oracle: DirtyOracle | null): void {
  installed = oracle;
}

/** This process's oracle, or null. */
export function currentDirtyOracle(): DirtyOracle | null {
  return installed;
}

/** The dirty check of a report: the oracle's answer when one is installed, else the scan. */
export function dirtyOf(q: DirtyQuery, scan: () => Promise<boolean>): Promise<boolean> {
  return installed === null ? scan() : installed.dirty(q, scan);
}
