// Writing one file of a first checkout, shared by the main thread and the
// file-writer worker (file-writer-worker.ts): the one place that says how a
// checked-out file is created and which of its stat data the index records.
// Imports node:fs alone, so the worker starts with nothing else to load.
import * as fs from "node:fs";

const NO_FOLLOW_WRITE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | (fs.constants.O_NOFOLLOW ?? 0);

/** The stat data an index entry keeps (index-file.ts `entryFor`). */
export interface StatData {
  ctimeMs: number;
  mtimeMs: number;
  size: number;
  dev: number;
  ino: number;
  uid: number;
  gid: number;
}

/** Numbers per file when stat data travels between threads (STAT_FIELDS of them, in StatData's order). */
export const STAT_FIELDS = 7;

/** A file's kind as a batch carries it: a regular file, an executable one, a symlink, a repository's own file (git's 0666, less the umask). */
export const KIND_FILE = 0;
export const KIND_EXEC = 1;
export const KIND_LINK = 2;
export const KIND_DATA = 3;

/** The kind of a tree entry's mode ("100644", "100755", "120000"). */
export function kindOf(mode: string): number {
  return mode === "120000" ? KIND_LINK : mode === "100755" ? KIND_EXEC : KIND_FILE;
}

/**
 * Write one file (or symlink) of the checkout, never through a link: two
 * names that are one on a case-insensitive file system must not write
 * elsewhere. Returns its stat data for the index, taken from the still-open
 * descriptor as git's checkout takes it (fstat before close).
 */
export function writeNow(abs: string, kind: number, bytes: Uint8Array): StatData {
  if (kind === KIND_LINK) {
    fs.symlinkSync(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"), abs);
    return fs.lstatSync(abs);
  }
  const fd = fs.openSync(abs, NO_FOLLOW_WRITE, kind === KIND_EXEC ? 0o755 : kind === KIND_DATA ? 0o666 : 0o644);
  try {
    for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at, bytes.length - at);
    return fs.fstatSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Put `st` into `into` at file number `i` (STAT_FIELDS numbers a file). */
export function packStat(into: Float64Array, i: number, st: StatData): void {
  const at = i * STAT_FIELDS;
  into[at] = st.ctimeMs;
  into[at + 1] = st.mtimeMs;
  into[at + 2] = st.size;
  into[at + 3] = st.dev;
  into[at + 4] = st.ino;
  into[at + 5] = st.uid;
  into[at + 6] = st.gid;
}

/** File number `i`'s stat data from `from` (packStat's inverse). */
export function unpackStat(from: Float64Array, i: number): StatData {
  const at = i * STAT_FIELDS;
  return {
    ctimeMs: from[at] as number,
    mtimeMs: from[at + 1] as number,
    size: from[at + 2] as number,
    dev: from[at + 3] as number,
    ino: from[at + 4] as number,
    uid: from[at + 5] as number,
    gid: from[at + 6] as number,
  };
}

/**
 * Files for the writer thread: names under `dir` (which ends in a separator),
 * NUL-separated in one string (git allows no NUL in a path; one string is
 * cloned across threads far faster than an array of them), their kinds, and
 * their bytes back to back (file i ends at ends[i]). `dirs` (NUL-separated
 * too, parents first, "" for none) are made before the files.
 */
export interface Batch {
  id: number;
  dir: string;
  dirs: string;
  names: string;
  kinds: Uint8Array;
  ends: Uint32Array;
  data: ArrayBuffer;
}

/** The writer thread's answer: every file's stat data, or the first failure (its file number and errno code). */
export interface BatchAnswer {
  id: number;
  stats?: Float64Array;
  /** `at`: the file's number; -1 for none (the thread failed); `dir` instead names a directory it could not make. */
  failure?: { at: number; dir?: string; code?: string; syscall?: string; message: string };
}
