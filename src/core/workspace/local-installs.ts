// What this machine installed, and the checkouts grex itself made: per-machine
// facts beside the committed grex.lock.jsonl (`.grex/.state/installs.json`,
// never committed). The lockfile's lines carry only shared resolved state
// (commit, branch, type, actions hash, a child's origin), so a teammate's
// clone and sync leave it byte-identical; `readLockfile` lays these facts over
// its entries and `writeLockfile` splits them off again.
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { atomicWriteFile } from "../fs/fsutil.ts";
import type { Workspace } from "../base/workspace.ts";

export const INSTALLS_FILE = "installs.json";

/** Where grex last left a pack's HEAD: a detached commit it made is grex's to move later. */
export interface GrexCheckout {
  sha: string;
  branch: string | null;
}

export interface LocalInstall {
  /** RFC 3339 UTC, or empty when the setup is not installed here. */
  installed_at: string;
  /** The commit the setup last ran at. */
  installed_sha?: string;
  /** The setup's hash as installed here (the lock line's may be another machine's). */
  installed_hash?: string;
  /** Why the last install failed or was interrupted. */
  install_error?: string;
  checkout?: GrexCheckout;
}

export const installsPath = (ws: Workspace): string => join(ws.stateDir, INSTALLS_FILE);

const isString = (x: unknown): x is string => typeof x === "string";

/** One record as written, or null when it is not one (a damaged file counts as no record: sync writes a new one). */
function asRecord(o: unknown): LocalInstall | null {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return null;
  const r = o as Record<string, unknown>;
  if (!isString(r.installed_at)) return null;
  const out: LocalInstall = { installed_at: r.installed_at };
  if (isString(r.installed_sha)) out.installed_sha = r.installed_sha;
  if (isString(r.installed_hash)) out.installed_hash = r.installed_hash;
  if (isString(r.install_error)) out.install_error = r.install_error;
  const c = r.checkout as Record<string, unknown> | undefined;
  if (c && isString(c.sha) && (c.branch === null || isString(c.branch))) out.checkout = { sha: c.sha, branch: c.branch };
  return out;
}

/** This machine's records by pack id; a missing or unreadable file is empty. */
export function readLocalInstalls(ws: Workspace): Map<string, LocalInstall> {
  let text: string;
  try {
    text = readFileSync(installsPath(ws), "utf8");
  } catch {
    return new Map();
  }
  const out = new Map<string, LocalInstall>();
  try {
    const doc = JSON.parse(text) as { packs?: Record<string, unknown> };
    for (const [id, o] of Object.entries(doc.packs ?? {})) {
      const r = asRecord(o);
      if (r) out.set(id, r);
    }
  } catch {
    return new Map();
  }
  return out;
}

/** Rewrite the records (temp + rename) when they say something new; the caller holds the manifest lock. */
export function writeLocalInstalls(ws: Workspace, records: ReadonlyMap<string, LocalInstall>): boolean {
  const packs: Record<string, LocalInstall> = {};
  for (const [id, r] of records) packs[id] = r;
  const text = `${JSON.stringify({ version: 1, packs }, null, 1)}\n`;
  const path = installsPath(ws);
  try {
    if (readFileSync(path, "utf8") === text) return false;
  } catch {
    // absent: written below
  }
  mkdirSync(dirname(path), { recursive: true });
  atomicWriteFile(path, text);
  return true;
}
