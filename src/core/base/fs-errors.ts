// Filesystem failures as one sentence with the way out, and the exit code that
// fits: grex's own workspace files (grex.jsonl, grex.lock.jsonl, .grex/.state)
// that cannot be used are an integrity problem (exit 3), not lock contention
// (exit 5) and not a raw `EACCES: permission denied, open …`.
import { basename, sep } from "node:path";
import { errnoCode, GrexError } from "./grex-error.ts";

/** What a path is to grex, for the sentence; undefined for any other file. */
function roleOf(path: string): string | undefined {
  if (path.includes(`${sep}.grex${sep}.state`) || path.endsWith(`${sep}.grex`)) return "grex's runtime state in .grex/.state";
  const name = basename(path);
  if (name === "grex.jsonl") return "the manifest";
  if (name === "grex.lock.jsonl" || name.startsWith("grex.lock.jsonl.")) return "the lockfile";
  return undefined;
}

/** A GrexError for an fs error (`err.path` or `path` names the file), or undefined when it is not one. */
export function fsError(err: unknown, path?: string): GrexError | undefined {
  const code = errnoCode(err);
  if (code === undefined) return undefined;
  const where = (err as { path?: unknown }).path;
  const file = typeof where === "string" ? where : (path ?? "a file");
  const role = roleOf(file);
  const about = role ? `${file} (${role})` : file;
  const kind = role !== undefined ? "integrity" : "generic";
  const recreate = role === "the manifest" ? " (then `grex init` makes a new one)" : role?.startsWith("grex's runtime") ? " (grex recreates it)" : "";
  switch (code) {
    case "EISDIR":
      return new GrexError("integrity", `${about} is a directory, not a file; move it aside${recreate} or point --manifest at the file.`, { path: file });
    case "ENOTDIR":
      return new GrexError(kind === "integrity" ? "integrity" : "generic", `Part of the path ${about} is a file where a directory should be; move that file aside${recreate}.`, { path: file });
    case "ESPIPE":
    case "ENXIO":
      return new GrexError("integrity", `${about} is not a regular file (a pipe, socket or device); grex needs a plain file there.`, { path: file });
    case "EACCES":
    case "EPERM":
      return new GrexError(
        kind,
        `Permission denied on ${about}; give your user read and write access to it (chmod u+rw, or chown) or run grex as its owner.`,
        { path: file },
      );
    case "EROFS":
      return new GrexError(kind, `${about} is on a read-only file system; run grex where it can write, or stick to read-only verbs (ls, status).`, { path: file });
    case "ENOSPC":
    case "EDQUOT":
      // No promise about the rest here: the verb that was writing says where its own work stands.
      return new GrexError("generic", `No space left on the disk holding ${about}; free some disk space and run the same command again.`, { path: file });
    case "ELOOP":
      return new GrexError(kind, `${about} is a symlink loop; point it at a real file.`, { path: file });
    case "EMFILE":
    case "ENFILE":
      return new GrexError("generic", `Too many open files while opening ${about}; raise the limit (ulimit -n) or lower --parallel.`, { path: file });
    default:
      return undefined;
  }
}
