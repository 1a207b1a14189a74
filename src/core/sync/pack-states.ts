// The names of a pack's states, on their own so the status verb's result
// schema can list them without loading the git reads that decide them.

/** Every state, in the order they win when several hold. */
export const PACK_STATES = [
  "invalid",
  "missing",
  "not-installed",
  "dirty",
  "off-branch",
  "setup-changed",
  "setup-drift",
  "topic",
  "diverged",
  "behind",
  "ahead",
  "clean",
] as const;
export type PackStateName = (typeof PACK_STATES)[number];
