// The one sentence for a pack id nobody registered, with the closest known id
// as a suggestion: every verb that takes ids (sync, update, status, teardown,
// rm) says it the same way.
import { closest } from "./closest.ts";
import { type GrexError, usageError } from "./errors.ts";

export function unknownPackId(id: string, known: Iterable<string>, manifestPath: string, field = "ids"): GrexError {
  const hint = closest(id, [...known]);
  return usageError(`No pack '${id}' is registered in ${manifestPath}.${hint ? ` Did you mean '${hint}'?` : ""} See \`grex ls\`.`, { field });
}
