// The partial-clone filters grex speaks (`grex add --filter`, grex.jsonl's
// per-pack `filter`): the subset of git's `--filter=<spec>` grammar whose
// objects grex can both ask a server to leave out and fetch back on demand.
// A leaf: the add verb, the manifest's read check and the transports share it.

/** The specs grex accepts, as shown in help and errors. */
export const CLONE_FILTER_FORMS = ["blob:none", "blob:limit=<n>[k|m|g]"] as const;

const LIMIT_RE = /^blob:limit=(\d{1,15})([kmg]?)$/;

/**
 * The filter as grex records and sends it (as git records it: `blob:none`,
 * `blob:limit=<bytes>`, a k/m/g suffix multiplied out), or null when `spec`
 * is not one grex implements.
 */
export function normaliseCloneFilter(spec: string): string | null {
  const s = spec.trim().toLowerCase();
  if (s === "blob:none") return s;
  if (!LIMIT_RE.test(s)) return null;
  // As git records it (expand_list_objects_filter_spec): the size in bytes, "1k" → "1024".
  const bytes = blobLimitOf(s);
  return Number.isSafeInteger(bytes) ? `blob:limit=${bytes}` : null;
}

/** The largest blob (in bytes) a filter lets through: 0 for blob:none. */
export function blobLimitOf(filter: string): number {
  if (filter === "blob:none") return 0;
  const m = LIMIT_RE.exec(filter);
  if (!m) return 0;
  const unit = m[2] === "k" ? 1024 : m[2] === "m" ? 1024 ** 2 : m[2] === "g" ? 1024 ** 3 : 1;
  return Number(m[1]) * unit;
}

/** Why `spec` is refused, as the tail of a sentence; null when grex implements it. */
export function cloneFilterProblem(spec: string): string | null {
  if (normaliseCloneFilter(spec) !== null) return null;
  return `'${spec}' is not a filter grex implements, use ${CLONE_FILTER_FORMS.join(" or ")}`;
}
