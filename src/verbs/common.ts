// Param schema pieces shared by several verbs (the universal flags).
import * as v from "valibot";
import { desc } from "./describe.ts";
import { filterDescription } from "../core/base/filter.ts";
import { BARE_NAME_RE, TAG_RE } from "../core/base/naming.ts";

export const dryRunParam = desc(
  v.optional(v.boolean(), false),
  "true: only report what would change (steps say would_perform_change); the workspace, its packs and HOME are left as they are, no command is run and no lock is taken. Default false.",
);
export const filterParam = desc(v.optional(v.union([v.string(), v.array(v.string())])), filterDescription());
/** A list of tags (`add --tag`, `update --tag/--untag`); each a short word. */
export const tagList = (what: string) =>
  desc(
    v.optional(v.array(v.pipe(v.string(), v.regex(TAG_RE, "must be a tag: letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters"))), []),
    what,
  );
/** Per-call cap on parallel packs (0 = unbounded); the process-wide scheduler still applies. */
export const parallelParam = desc(
  v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  "Most packs worked on at once in this call (an integer; 0 = no per-call cap). Default: the server's --parallel (GREX_PARALLEL, else the number of CPUs); the server-wide limit still applies.",
);

export const PACK_ID_RE = BARE_NAME_RE;

/** A top-level pack id: a bare name, never `.`/`..`, no separators. */
export const bareName = v.pipe(
  v.string(),
  v.regex(PACK_ID_RE, "must be a bare name (letters, digits, '.', '_', '-'; no '/')"),
  v.check((s) => s !== "." && s !== "..", "must not be '.' or '..'"),
);

export const nowIso = (): string => new Date().toISOString();
