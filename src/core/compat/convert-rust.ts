// Converting a workspace written by the Rust grex (`grex doctor --fix`): its
// grex.jsonl and grex.lock.jsonl are rewritten in this grex's format, each
// after a byte-for-byte backup next to it (`<file>.rust-backup`). Under the
// manifest lock; both writes are temp + fsync + rename, the backup first, so
// a crash leaves either the original or the converted file, never a mix.
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { errnoCode } from "../base/errors.ts";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { writeLockfileLocked, parseLockfile } from "../workspace/lockfile.ts";
import { withManifestLock } from "../locks/locks.ts";
import { eventLine, fold, parseManifest } from "../workspace/manifest.ts";
import type { Workspace } from "../base/workspace.ts";
import { RUST_LOCK_DEFAULT_TYPE, countRustLines, isRustEvent, isRustLockEntry } from "../workspace/rust-lines.ts";

export interface RustShape {
  /** grex.jsonl lines in the Rust grex's format. */
  manifestLines: number;
  /** grex.lock.jsonl lines in the Rust grex's format. */
  lockLines: number;
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return "";
    throw err;
  }
}

/** How much of the workspace's files is in the Rust grex's format. */
export function rustShape(ws: Workspace): RustShape {
  return {
    manifestLines: countRustLines(readOrEmpty(ws.manifestPath), isRustEvent),
    lockLines: countRustLines(readOrEmpty(ws.lockPath), isRustLockEntry),
  };
}

/** A one-sentence description of a Rust-shaped workspace, or null when there is nothing to convert. */
export function describeRustShape(s: RustShape): string | null {
  const parts: string[] = [];
  if (s.manifestLines > 0) parts.push(`grex.jsonl has ${s.manifestLines} line(s)`);
  if (s.lockLines > 0) parts.push(`grex.lock.jsonl has ${s.lockLines} line(s)`);
  if (parts.length === 0) return null;
  return `${parts.join(" and ")} in the Rust grex's format (read as such); grex doctor --fix rewrites them in this grex's format and keeps a .rust-backup copy`;
}

/** A backup path next to `file` that does not exist yet. */
function backupPathFor(file: string): string {
  let candidate = `${file}.rust-backup`;
  for (let i = 1; existsSync(candidate); i++) candidate = `${file}.rust-backup.${i}`;
  return candidate;
}

/** Rewrite the Rust-shaped files in this grex's format. Returns the backups written (none when nothing needed converting). */
export async function convertRustWorkspace(ws: Workspace, signal?: AbortSignal): Promise<string[]> {
  return withManifestLock(ws, signal, () => {
    const backups: string[] = [];
    const manifestText = readOrEmpty(ws.manifestPath);
    const events = parseManifest(manifestText, ws.manifestPath).events;
    if (countRustLines(manifestText, isRustEvent) > 0) {
      const backup = backupPathFor(ws.manifestPath);
      atomicWriteFile(backup, manifestText);
      atomicWriteFile(ws.manifestPath, events.map(eventLine).join(""));
      backups.push(basename(backup));
    }
    const lockText = readOrEmpty(ws.lockPath);
    if (countRustLines(lockText, isRustLockEntry) > 0) {
      const state = fold(events);
      const { entries } = parseLockfile(lockText, ws.lockPath);
      // The Rust lockfile records no type: take it from the manifest where the pack is registered.
      for (const e of entries.values()) {
        const registered = state.get(e.id);
        if (e.type === RUST_LOCK_DEFAULT_TYPE && registered) e.type = registered.type;
      }
      const backup = backupPathFor(ws.lockPath);
      atomicWriteFile(backup, lockText);
      writeLockfileLocked(ws, entries.values());
      backups.push(basename(backup));
    }
    return backups;
  });
}
