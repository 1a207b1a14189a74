// Reading a file that a user, a client or a pack pointed grex at (pack.yaml,
// a platform override, REPOS.json): a regular file only (a FIFO would block
// forever, a device never ends), whose real path lies inside the place it must
// be in, and at most `maxBytes`. Error messages name the file and what is
// wrong with it, never anything read from it.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { errnoCode, type GrexError } from "../base/errors.ts";
import { physicalPath, within } from "./confine.ts";

export const ABSENT = Symbol("absent");

export interface ReadRules {
  /** The directory the file's real path must stay in (null: anywhere). */
  inside: string | null;
  maxBytes: number;
  /** Builds the error for a refused file (the kind decides the exit code). */
  error: (message: string) => GrexError;
  /** The message after the file name when it is too big: "is over the 1 MiB limit ...; do this". */
  tooBig: string;
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  return "not a regular file";
}

/** The file's bytes, or ABSENT when it does not exist. */
export function readRegularFile(file: string, rules: ReadRules): Buffer | typeof ABSENT {
  if (rules.inside !== null) {
    const real = physicalPath(file, true);
    const place = physicalPath(rules.inside, true);
    if (!within(place, real)) {
      throw rules.error(`${file} resolves to ${real}, outside ${place}; it must be a file inside ${place}, not a link out of it.`);
    }
  }
  let fd: number;
  try {
    // Non-blocking: opening a FIFO must not wait for a writer; fstat below refuses it.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT" || code === "ENOTDIR") return ABSENT;
    throw rules.error(`${file} cannot be read (${code ?? "error"}); check that it exists and its permissions.`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw rules.error(`${file} is ${kindOf(st)}, not a regular file; replace it with a regular file.`);
    const tooBig = () => rules.error(`${file} ${rules.tooBig}.`);
    if (st.size > rules.maxBytes) throw tooBig();
    // Read one byte past the limit in case the file grew since the stat.
    const buf = Buffer.alloc(rules.maxBytes + 1);
    let len = 0;
    while (len < buf.length) {
      const n = readSync(fd, buf, len, buf.length - len, len);
      if (n === 0) break;
      len += n;
    }
    if (len > rules.maxBytes) throw tooBig();
    return buf.subarray(0, len);
  } finally {
    closeSync(fd);
  }
}
