// Lazy loader for isomorphic-git: only the operations that really need it
// pay for loading it (`grex ls` never does).
export type Git = typeof import("isomorphic-git").default;

let gitPromise: Promise<Git> | null = null;

export function loadGit(): Promise<Git> {
  gitPromise ??= import("isomorphic-git").then((m) => m.default);
  return gitPromise;
}
