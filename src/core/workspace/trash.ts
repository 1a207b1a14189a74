// Deleting a pack directory in a way a crash cannot leave half done: the
// directory leaves the workspace in one rename into grex's state area, the
// caller records the removal, and only then the contents are deleted. Whatever
// a crash leaves in the trash is swept on the next `rm` (and by `doctor --fix`;
// plain `doctor` reports it).
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../base/errors.ts";
import { fsyncDir } from "../fs/fsutil.ts";
import type { Workspace } from "../base/workspace.ts";

export const trashDir = (ws: Workspace): string => join(ws.stateDir, "trash");

/**
 * Move `dir` into the trash in one rename; returns where it went, or null when
 * the trash is on another filesystem (the caller then deletes `dir` in place).
 */
export function moveToTrash(ws: Workspace, dir: string, id: string): string | null {
  const trash = trashDir(ws);
  mkdirSync(trash, { recursive: true });
  // `+` never occurs in a pack id, so the id can be read back from the name.
  const dest = join(trash, `${id.replaceAll("/", "__")}+${Date.now()}+${process.pid}+${Math.random().toString(36).slice(2, 8)}`);
  try {
    renameSync(dir, dest);
  } catch (err) {
    if (errnoCode(err) === "EXDEV") return null;
    throw err;
  }
  fsyncDir(trash);
  return dest;
}

/** Entries left in the trash by an interrupted removal. */
export function trashLeftovers(ws: Workspace): string[] {
  try {
    return readdirSync(trashDir(ws)).sort();
  } catch {
    return [];
  }
}

/** Delete every leftover; returns their names. */
export function sweepTrash(ws: Workspace): string[] {
  const left = trashLeftovers(ws);
  for (const name of left) rmSync(join(trashDir(ws), name), { recursive: true, force: true });
  return left;
}

/** The pack id a trash entry was made for. */
export const trashedId = (name: string): string => (name.split("+")[0] as string).replaceAll("__", "/");
