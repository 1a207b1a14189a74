// Param schema pieces shared by several verbs (the universal flags).
import * as v from "valibot";
import { BARE_NAME_RE } from "../core/naming.ts";

export const dryRunParam = v.optional(v.boolean(), false);
export const filterParam = v.optional(v.string());
/** Per-call cap on parallel packs (0 = unbounded); the process-wide scheduler still applies. */
export const parallelParam = v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)));

export const PACK_ID_RE = BARE_NAME_RE;

/** A top-level pack id: a bare name, never `.`/`..`, no separators. */
export const bareName = v.pipe(
  v.string(),
  v.regex(PACK_ID_RE, "must be a bare name (letters, digits, '.', '_', '-'; no '/')"),
  v.check((s) => s !== "." && s !== "..", "must not be '.' or '..'"),
);

export const nowIso = (): string => new Date().toISOString();
