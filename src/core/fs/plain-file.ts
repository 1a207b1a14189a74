// Reading only plain files. Apart from fs-errors.ts, which every error path
// imports (`grex serve` too, before its first reply), so that loading it does
// not load node:fs.
import { statSync } from "node:fs";
import { fsError } from "../base/fs-errors.ts";

/**
 * Refuse to read what is not a plain file before opening it: reading a FIFO
 * would hang, a directory gives EISDIR. Missing files pass (the caller decides).
 */
export function assertPlainFile(path: string): void {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    return;
  }
  if (st.isDirectory()) throw fsError(Object.assign(new Error("EISDIR"), { code: "EISDIR", path }));
  if (!st.isFile()) throw fsError(Object.assign(new Error("ESPIPE"), { code: "ESPIPE", path }));
}
