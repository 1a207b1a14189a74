// Per-pack action state, `<ws>/.grex/.state/packs/<id>.json`: what install
// created (directories, backups, earlier env blocks) so teardown undoes exactly
// that. This module is the only reader and writer. The record is read and
// written back under the pack's lock; a file that is missing is an empty
// record, one that exists but cannot be read is an integrity error — never
// treated as empty, because writing back would destroy the undo record.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, integrityError } from "../base/errors.ts";
import { atomicWriteFile } from "../fs/fsutil.ts";
import { withPackLock } from "../locks/locks.ts";
import type { Workspace } from "../base/workspace.ts";

export type PackStateRecord = Record<string, unknown>;

export const packStatePath = (ws: Workspace, id: string): string => join(ws.stateDir, "packs", `${encodeURIComponent(id)}.json`);

const unreadable = (path: string, id: string, why: string) =>
  integrityError(
    `The state file ${path} of pack '${id}' ${why}; it records what grex installed so that teardown can undo it, so grex leaves it as it is: repair it (or its permissions), or move it away to forget that record, then run the command again.`,
    { file: path, pack: id },
  );

/** The pack's record: `{}` when there is none; an integrity error (exit 3) when the file exists but cannot be read. */
export function readPackState(ws: Workspace, id: string): PackStateRecord {
  const path = packStatePath(ws, id);
  if (!existsSync(path)) return {}; // the usual case for a plain pack, asked by every status: no thrown ENOENT
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT") return {};
    throw unreadable(path, id, `cannot be read (${code ?? String(err)})`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw unreadable(path, id, "is not valid JSON");
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw unreadable(path, id, "does not hold a JSON object");
  return data as PackStateRecord;
}

/** Replace the record atomically; an empty record removes the file. */
function writePackState(ws: Workspace, id: string, state: PackStateRecord): void {
  const path = packStatePath(ws, id);
  if (Object.keys(state).length === 0) {
    if (existsSync(path)) rmSync(path);
    return;
  }
  atomicWriteFile(path, `${JSON.stringify(state)}\n`);
}

export interface PackStateTarget {
  ws: Workspace;
  id: string;
  dir: string;
  dryRun: boolean;
  signal: AbortSignal;
}

/**
 * Read the record, let `body` change it in place, write it back — all under
 * the pack's lock, so a `run` and a `sync` on one pack (one MCP session, or two
 * processes) never interleave their read-modify-write. A dry run only reads.
 */
export function withPackState<T>(t: PackStateTarget, body: (state: PackStateRecord) => Promise<T>): Promise<T> {
  const go = async () => {
    const state = readPackState(t.ws, t.id);
    try {
      return await body(state);
    } finally {
      if (!t.dryRun) writePackState(t.ws, t.id, state);
    }
  };
  return t.dryRun ? go() : withPackLock(t.ws, t.dir, t.signal, go);
}
