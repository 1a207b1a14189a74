// A pack file named by its place in the pack, `<url>@<commit>:.grex/pack.yaml`,
// for errors about a clone that is about to be deleted (a failed `add`, a dry
// run's temporary clone): a path on disk would name a file that is gone.
import { sep } from "node:path";
import { GrexError } from "../base/errors.ts";

export const sourceLabel = (url: string, sha: string | null): string => (sha ? `${url}@${sha.slice(0, 12)}` : url);

/** The same error with every path under `dir` written as `<label>:<path inside the pack>`. */
export function relabelError(err: GrexError, dir: string, label: string): GrexError {
  const prefix = dir.endsWith(sep) ? dir : `${dir}${sep}`;
  const swap = (text: string) => text.replaceAll(prefix, `${label}:`).replaceAll(dir, label);
  if (!err.message.includes(dir)) return err;
  const data = err.data && typeof err.data.file === "string" ? { ...err.data, file: swap(err.data.file) } : err.data;
  return new GrexError(err.kind, swap(err.message), data);
}
